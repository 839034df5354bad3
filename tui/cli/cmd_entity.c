/*
 * cmd_entity.c - entities one by one: `put` (one JSON document or JSON
 * Lines, ids generated when absent), `get` (JSON or YAML), `delete`, and
 * `query` (the entities matching an index, read by the engine's query-text
 * rules, as JSON Lines).
 */
#include "cli.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sys/types.h>

#include "fmt.h"

/* ------------------------------------------------------------ errors */

/* Prefix the last error with `where` ("FILE:LINE"), unless the engine's
 * message already starts with it. Returns rc. */
static int error_at(int rc, const char *where)
{
	char msg[1024];
	const char *m = bs_last_error();
	size_t wl = strlen(where);

	if (strncmp(m, where, wl) == 0 && m[wl] == ':')
		return rc;
	snprintf(msg, sizeof msg, "%s", m[0] ? m : bs_strerror(rc));
	return bs_error(rc, "%s: %s", where, msg);
}

/* A one-line document's syntax error reads "FILE:LINE:1:COL: ..." (the
 * decoder counts lines inside the text it was given): drop the inner line,
 * so that it reads "FILE:LINE:COL: ...". Returns rc. */
static int line_error(int rc, const char *where)
{
	char msg[1024];
	const char *m = bs_last_error(), *p;
	size_t wl = strlen(where);

	if (strncmp(m, where, wl) != 0 || strncmp(m + wl, ":1:", 3) != 0)
		return error_at(rc, where);
	for (p = m + wl + 3; *p >= '0' && *p <= '9'; p++)
		;
	if (p == m + wl + 3 || *p != ':')
		return rc;
	snprintf(msg, sizeof msg, "%s", m + wl + 3);
	return bs_error(rc, "%s:%s", where, msg);
}

/* ------------------------------------------------------------ put */

/*
 * How put reads its input.
 *
 * The input is one JSON document (perhaps pretty-printed over many lines) or
 * JSON Lines. The rule is "the whole input as one document if it parses,
 * else line by line", but reading a large JSON Lines file wholly into memory
 * to try it is not acceptable, so:
 *
 *  1. Read the first non-blank line (put_getline). If it parses on its own, the
 *     whole input can parse as one document only when everything after it is
 *     blank, which line mode treats the same way, so go on line by line:
 *     memory stays at one line however long the file is.
 *  2. Otherwise the input is a multi-line document or JSON Lines with a bad
 *     first line. Read the rest, but at most PUT_DOC_MAX bytes (a document
 *     bigger than that could not be stored: bodies are limited to
 *     BS_BODY_MAX_INFLATED of MessagePack), and parse it as one document.
 *     When that fails too nothing has been written, and the error reported
 *     is the document's when the input has several lines (the decoder's
 *     line and column point into it), else the line's.
 */
#define PUT_DOC_MAX ((size_t)64 << 20)

#define PUT_BATCH_DEFAULT 500
#define PUT_BATCH_MAX 10000
/* 4 MiB of JSON text: at most about 8 MiB of SQL for a batch (a body is at
 * most its text's size once compressed, then written in hex) */
#define PUT_BATCH_BYTES (4u << 20)

/* One batch: its bags, each bag's line number, the bags encoded, and
 * what the store said of each (ids and stored). */
typedef struct {
	bs_value_t *bags;
	long *lines;
	bs_id_t *ids;
	bool *stored;
	bs_encoded_t *enc;
	size_t n;
	size_t bytes; /* the input text of its lines */
} put_batch_t;

/* JSON Lines go to the store in batches, two buffers: the one being
 * filled here (buf[cur]), then encoded here (bs_encode_many), while the
 * other, full, is written on a thread of its own (flying,
 * bs_put_encoded): parsing and encoding overlap the store's work. Only
 * that thread uses the store while it runs. */
typedef struct {
	cli_ctx_t *ctx;
	const char *name; /* the input's name in messages */
	size_t written;
	size_t batch; /* lines per batch (--batch) */
	put_batch_t buf[2];
	int cur;       /* the buffer being filled */
	bool flying;   /* buf[!cur] is being written (or was, when not threaded) */
	bool threaded; /* by the writer thread */
	pthread_t writer;
	int fly_rc; /* its bs_put_encoded's answer, and message */
	char fly_msg[1024];
	/* progress on a terminal */
	bool tty;
	FILE *in;
	long long in_size; /* bytes, -1 when not a regular file */
	double t0, last;
} put_state_t;

static bool is_blank(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n')
			return false;
	return true;
}

static const char *type_name(bs_type_t t)
{
	switch (t) {
	case BS_NIL: return "null";
	case BS_BOOL: return "a boolean";
	case BS_INT:
	case BS_UINT:
	case BS_FLOAT: return "a number";
	case BS_STR: return "a string";
	case BS_BIN: return "bytes";
	case BS_ARRAY: return "an array";
	case BS_MAP: return "an object";
	}
	return "?";
}

/* Give a bag without "id" a new one, as its first key. The other pairs
 * move over as they are (their keys are unique already: the decoders
 * refuse duplicates), so this is linear in the keys, not quadratic. */
static int bag_add_id(bs_value_t *bag)
{
	size_t n = bag->v.m.len;
	bs_pair_t *items = malloc((n + 1) * sizeof *items);
	char *key = strdup("id");
	bs_id_t id;

	if (!items || !key) {
		free(items);
		free(key);
		return bs_error(BS_ENOMEM, "out of memory");
	}
	bs_id_generate(&id);
	items[0].key = key;
	items[0].klen = 2;
	if (bs_value_bin(&items[0].val, id.b, sizeof id.b) < 0) {
		free(items);
		free(key);
		return BS_ENOMEM;
	}
	if (n)
		memcpy(items + 1, bag->v.m.items, n * sizeof *items);
	free(bag->v.m.items);
	bag->v.m.items = items;
	bag->v.m.len = bag->v.m.cap = n + 1;
	return 0;
}

/* The progress line on a terminal: count, rate, ETA when the input's
 * size is known; at most twice a second, and once more at the end. */
static void put_progress(put_state_t *ps, bool last)
{
	double now = (double)now_us() / 1e6;
	if (!ps->tty || (!last && now - ps->last < 0.5))
		return;
	ps->last = now;
	double secs = now - ps->t0, rate = secs > 0 ? (double)ps->written / secs : 0;
	char eta[32] = "";
	if (ps->in_size > 0 && rate > 0) {
		long pos = ftell(ps->in);
		if (pos > 0) {
			char d[32];
			double left = secs * (double)(ps->in_size - pos) / (double)pos;
			snprintf(eta, sizeof eta, ", ETA ~%s", fmt_secs(d, sizeof d, left));
		}
	}
	fprintf(stderr, "\rput: %zu entities, %.0f/s%s\033[K%s", ps->written, rate, eta, last ? "\n" : "");
	fflush(stderr);
}

/* The thread writing a full batch. */
static void *put_writer(void *arg)
{
	put_state_t *ps = arg;
	put_batch_t *b = &ps->buf[!ps->cur];
	ps->fly_rc = bs_put_encoded(ps->ctx->st, b->enc, b->stored);
	snprintf(ps->fly_msg, sizeof ps->fly_msg, "%s", ps->fly_rc < 0 ? bs_last_error() : "");
	return NULL;
}

/* Wait for the batch in flight, if any, and print each id it stored in
 * input order. A bag refused on input is named by its line: the ones
 * before it are stored, it and the rest are not. */
static int put_wait(put_state_t *ps)
{
	char hex[33], where[4096];
	int rc;
	if (!ps->flying)
		return 0;
	if (ps->threaded)
		pthread_join(ps->writer, NULL);
	ps->flying = false;
	put_batch_t *b = &ps->buf[!ps->cur];
	rc = ps->fly_rc;
	for (size_t k = 0; k < b->n; k++) {
		if (!b->stored[k])
			continue;
		bs_id_hex(hex, &b->ids[k]);
		fputs(hex, stdout);
		putchar('\n');
		ps->written++;
	}
	fflush(stdout);
	if (rc < 0) {
		/* the first line not stored names the spot; when every one was
		 * (their index rows failed), the batch's lines */
		size_t k = 0;
		while (k < b->n && b->stored[k])
			k++;
		bs_error(rc, "%s", ps->fly_msg);
		if (k == b->n && b->n > 1)
			snprintf(where, sizeof where, "%s:%ld-%ld", ps->name, b->lines[0], b->lines[b->n - 1]);
		else
			snprintf(where, sizeof where, "%s:%ld", ps->name, b->lines[k < b->n ? k : 0]);
		rc = error_at(rc, where);
	}
	bs_encoded_free(b->enc);
	b->enc = NULL;
	for (size_t k = 0; k < b->n; k++)
		bs_value_clear(&b->bags[k]);
	b->n = 0;
	b->bytes = 0;
	put_progress(ps, false);
	return rc;
}

/* The batch in hand goes to the store: once the one before it is written
 * (its error, if any, is this call's, and the batch in hand is dropped),
 * on the writer thread, while the caller fills the other buffer. A batch
 * handed over is waited for by put_wait (the next flush, the end). */
static int put_flush(put_state_t *ps)
{
	put_batch_t *b = &ps->buf[ps->cur];
	/* encoded while the batch before it is written (that one's error,
	 * if any, is this call's) */
	char msg[1024], where[4096];
	int rc = b->n ? bs_encode_many(&b->enc, b->bags, b->n, b->ids) : 0;
	snprintf(msg, sizeof msg, "%s", rc < 0 ? bs_last_error() : "");
	int wrc = put_wait(ps);
	if (wrc < 0) {
		rc = wrc;
	} else if (rc < 0) {
		bs_error(rc, "%s", msg);
		snprintf(where, sizeof where, "%s:%ld-%ld", ps->name, b->lines[0], b->lines[b->n - 1]);
		rc = error_at(rc, where);
	}
	if (rc < 0) { /* the batch in hand is dropped: the put stops */
		bs_encoded_free(b->enc);
		b->enc = NULL;
		for (size_t k = 0; k < b->n; k++)
			bs_value_clear(&b->bags[k]);
		b->n = 0;
		b->bytes = 0;
	}
	if (rc < 0 || !b->n)
		return rc;
	ps->cur = !ps->cur;
	ps->threaded = pthread_create(&ps->writer, NULL, put_writer, ps) == 0;
	if (!ps->threaded)
		put_writer(ps); /* no thread: written here, waited for as one */
	ps->flying = true;
	return 0;
}

/* One decoded entity (consumed), from len bytes of input, into the batch;
 * the batch goes when it holds --batch lines or PUT_BATCH_BYTES of input:
 * a shard's part of a batch is one statement, its bodies in hex, which
 * must fit the server's max_allowed_packet (16 MiB by default), and a
 * batch's bookkeeping grows faster than its size. */
static int put_one(put_state_t *ps, bs_value_t *bag, const char *where, long lineno, size_t len)
{
	int rc;

	if (bag->type != BS_MAP) {
		rc = bs_error(BS_EINVAL, "%s: expected a JSON object, got %s", where, type_name(bag->type));
		bs_value_clear(bag);
		return rc;
	}
	if (!bs_map_get(bag, "id") && (rc = bag_add_id(bag)) < 0) {
		bs_value_clear(bag);
		return rc;
	}
	put_batch_t *b = &ps->buf[ps->cur];
	b->bags[b->n] = *bag;
	b->lines[b->n++] = lineno;
	b->bytes += len;
	bs_value_nil(bag);
	return b->n == ps->batch || b->bytes >= PUT_BATCH_BYTES ? put_flush(ps) : 0;
}

/* A line's length without its end ("\n" or "\r\n"): decoded without it, a
 * line cut short reads "FILE:LINE:COL: ... near end of file", where with
 * it the decoder counted a second line ("FILE:LINE:2:0: ..."). */
static size_t line_len(const char *text, size_t len)
{
	if (len && text[len - 1] == '\n')
		len--;
	if (len && text[len - 1] == '\r')
		len--;
	return len;
}

/* "NAME:LINE" into where, as snprintf would: for every line of a load,
 * where printf's cost showed. */
static void where_line(char *where, size_t size, const char *name, long lineno)
{
	char digits[24], *d = digits + sizeof digits;
	size_t nl = strlen(name), dl;
	unsigned long u = lineno < 0 ? 0 : (unsigned long)lineno;

	do
		*--d = (char)('0' + u % 10);
	while ((u /= 10));
	dl = (size_t)(digits + sizeof digits - d);
	if (nl + 1 + dl + 1 > size) {
		snprintf(where, size, "%s:%ld", name, lineno);
		return;
	}
	memcpy(where, name, nl);
	where[nl] = ':';
	memcpy(where + nl + 1, d, dl);
	where[nl + 1 + dl] = '\0';
}

/* Decode text as one entity named `where` and queue it. A line that does
 * not decode stops the load there: the lines before it are stored first. */
static int put_text(put_state_t *ps, const char *text, size_t len, const char *where, long lineno)
{
	bs_value_t bag;
	int rc;

	bs_value_nil(&bag);
	if ((rc = bs_json_decode(&bag, text, line_len(text, len), where)) < 0) {
		rc = line_error(rc, where);
		char msg[1024];
		snprintf(msg, sizeof msg, "%s", bs_last_error());
		bs_value_clear(&bag);
		int frc = put_flush(ps);
		return frc < 0 ? frc : bs_error(rc, "%s", msg);
	}
	/* JSON but refused (not an object): the same, the lines before it
	 * stored (a full batch's failure has left none in hand) */
	if ((rc = put_one(ps, &bag, where, lineno, len)) < 0 && ps->buf[ps->cur].n) {
		char msg[1024];
		snprintf(msg, sizeof msg, "%s", bs_last_error());
		int frc = put_flush(ps);
		return frc < 0 ? frc : bs_error(rc, "%s", msg);
	}
	return rc;
}

/* The decoder's "NAME:L:C: ..." for a document that began at line first
 * of the input (blank lines before it were skipped): its L counted from
 * there, made the input's. Returns rc. */
static int doc_error(int rc, const char *name, long first)
{
	char msg[1024];
	const char *m = bs_last_error(), *p;
	size_t nl = strlen(name);
	char *end;

	if (first <= 1 || strncmp(m, name, nl) != 0 || m[nl] != ':')
		return error_at(rc, name);
	long l = strtol(m + nl + 1, &end, 10);
	if (end == m + nl + 1 || *end != ':' || l < 1)
		return error_at(rc, name);
	p = end;
	snprintf(msg, sizeof msg, "%s", p);
	return bs_error(rc, "%s:%ld%s", name, l + first - 1, msg);
}

/* Step 2 above: the first line did not parse alone. line/len hold it;
 * first is its line number (blank lines before it were skipped). */
static int put_document(put_state_t *ps, FILE *f, const char *line, size_t len, long first, const char *first_err,
                        int first_rc)
{
	char where[4096];
	char *buf = NULL, *nb;
	size_t n = len, cap = len + 65536, got;
	bs_value_t bag;
	int rc;

	bs_value_nil(&bag);
	if (!(buf = malloc(cap + 1))) {
		rc = bs_error(BS_ENOMEM, "out of memory");
		goto done;
	}
	memcpy(buf, line, len);
	for (;;) {
		if (n == cap) {
			if (cap >= PUT_DOC_MAX)
				break;
			cap = cap * 2 > PUT_DOC_MAX ? PUT_DOC_MAX : cap * 2;
			if (!(nb = realloc(buf, cap + 1))) {
				rc = bs_error(BS_ENOMEM, "out of memory");
				goto done;
			}
			buf = nb;
		}
		got = fread(buf + n, 1, cap - n, f);
		n += got;
		if (got == 0)
			break;
	}
	if (ferror(f)) {
		rc = bs_error(BS_ERROR, "%s: read error: %s", ps->name, strerror(errno));
		goto done;
	}
	buf[n] = '\0';
	/* One line only, or too big for a document: JSON Lines, bad first line. */
	if (is_blank(buf + len, n - len) || !feof(f)) {
		rc = bs_error(first_rc, "%s", first_err);
		goto done;
	}
	if ((rc = bs_json_decode(&bag, buf, n, ps->name)) < 0) {
		rc = doc_error(rc, ps->name, first);
		goto done;
	}
	/* the store's refusal names the line the document begins at */
	snprintf(where, sizeof where, "%s:%ld", ps->name, first);
	if (!(rc = put_one(ps, &bag, where, first, n)))
		rc = put_flush(ps);
done:
	bs_value_clear(&bag);
	free(buf);
	return rc;
}

static int put_setup(put_state_t *ps, const char *batch_text)
{
	char *end;
	unsigned long v = PUT_BATCH_DEFAULT;
	if (batch_text) {
		v = strtoul(batch_text, &end, 10);
		if (!*batch_text || *end || v < 1 || v > PUT_BATCH_MAX)
			return cli_usage_error(ps->ctx, "--batch wants a number from 1 to %d, got '%s'", PUT_BATCH_MAX,
			                       batch_text);
	}
	ps->batch = v;
	for (int k = 0; k < 2; k++) {
		put_batch_t *b = &ps->buf[k];
		b->bags = calloc(v, sizeof *b->bags);
		b->lines = calloc(v, sizeof *b->lines);
		b->ids = calloc(v, sizeof *b->ids);
		b->stored = calloc(v, sizeof *b->stored);
		if (!b->bags || !b->lines || !b->ids || !b->stored)
			return bs_error(BS_ENOMEM, "out of memory");
	}
	return 0;
}

static void put_free(put_state_t *ps)
{
	for (int j = 0; j < 2; j++) {
		put_batch_t *b = &ps->buf[j];
		bs_encoded_free(b->enc);
		for (size_t k = 0; b->bags && k < b->n; k++)
			bs_value_clear(&b->bags[k]);
		free(b->bags);
		free(b->lines);
		free(b->ids);
		free(b->stored);
	}
}

/* The input: FILE or stdin; its size when it is a regular file. */
static int put_open(put_state_t *ps, const char *path)
{
	struct stat sb;
	if (strcmp(path, "-") == 0) {
		ps->in = stdin;
		ps->name = "<stdin>";
	} else {
		ps->name = path;
		if (!(ps->in = fopen(path, "r")))
			return bs_error(BS_EINVAL, "%s: %s", path, strerror(errno));
	}
	ps->in_size = fstat(fileno(ps->in), &sb) == 0 && S_ISREG(sb.st_mode) ? (long long)sb.st_size : -1;
	ps->tty = isatty(STDERR_FILENO);
	ps->t0 = ps->last = (double)now_us() / 1e6;
	return 0;
}

/*
 * A put told to stop (SIGINT, SIGTERM, SIGHUP, SIGPIPE: Ctrl-C, `timeout`,
 * a closed terminal or pipe) stops at the next line, leaving the batch in
 * hand unwritten, records in the audit log what it stored (a put killed by
 * the signal's default action would leave thousands of entities written and
 * no row), then dies of the signal as it would have. A second one kills it
 * at once. SA_RESTART: the statements in flight are not interrupted. A
 * signal ignored when put started (a background job's SIGINT) stays so.
 */
static atomic_int put_signal;
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "the signal handler needs a lock-free atomic_int");

static void put_on_signal(int sig)
{
	if (atomic_exchange(&put_signal, sig)) {
		signal(sig, SIG_DFL);
		raise(sig);
	}
}

static void put_signals(void)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGPIPE };
	struct sigaction sa, old;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = put_on_signal;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	for (size_t k = 0; k < sizeof sigs / sizeof *sigs; k++)
		if (sigaction(sigs[k], NULL, &old) == 0 && old.sa_handler != SIG_IGN)
			sigaction(sigs[k], &sa, NULL);
}

/* getline(3) with a bound: a line of JSON Lines longer than PUT_DOC_MAX
 * could not be stored any more than such a document, and an input with no
 * newline (/dev/zero, a binary file) must not take all memory. The line's
 * length; -1 at the end of the input (or an error: ferror tells); -2 when
 * the line is longer than PUT_DOC_MAX (read at most a chunk past it); -3 out of
 * memory. */
static ssize_t put_getline(char **line, size_t *cap, FILE *f)
{
	size_t n = 0, chunk = 1024;

	/* fgets, a chunk at a time (getc was a tenth of put's CPU); a line may
	 * hold NUL bytes, so the chunk is filled with 0xff first and fgets's
	 * own NUL is the last one in it. Chunks start small, as most lines
	 * are, and grow along a long line. */
	for (;;) {
		if (n + 2 > *cap) {
			size_t nc = *cap ? *cap * 2 : 8192;
			char *p = realloc(*line, nc);
			if (!p)
				return -3;
			*line = p;
			*cap = nc;
		}
		size_t room = *cap - n < chunk ? *cap - n : chunk;
		char *at = *line + n;
		memset(at, 0xff, room);
		if (!fgets(at, (int)room, f))
			break;
		size_t got = (size_t)((char *)memrchr(at, '\0', room) - at);
		bool nl = got && at[got - 1] == '\n';
		n += got;
		if (n - nl > PUT_DOC_MAX)
			return -2;
		if (nl)
			break;
		if (chunk < 65536)
			chunk *= 2;
	}
	/* a read error loses fgets's chunk: no line cut short is given */
	if (ferror(f) || !n)
		return -1;
	(*line)[n] = '\0';
	return (ssize_t)n;
}

/* The error for a line put_getline refused (-2, -3). */
static int put_line_refused(const put_state_t *ps, ssize_t n, long lineno)
{
	if (n == -3)
		return bs_error(BS_ENOMEM, "%s:%ld: out of memory reading the line", ps->name, lineno);
	return bs_error(BS_EINVAL,
	                "%s:%ld: a line longer than %zu MiB: an entity that big could not be stored "
	                "(bodies are limited to %u MiB of MessagePack)",
	                ps->name, lineno, PUT_DOC_MAX >> 20, BS_BODY_MAX_INFLATED >> 20);
}

/* After the audit: die of the signal that stopped the put. */
static void put_die(void)
{
	int sig = atomic_load(&put_signal);

	if (!sig)
		return;
	fflush(stdout);
	fflush(stderr);
	signal(sig, SIG_DFL);
	raise(sig);
}

/* One row in the audit log for the entities a put stored (not one per
 * entity: a load of millions would double its writes; the ids went to
 * stdout); a put that stopped early says why. The error, if any, is kept
 * for main to print. */
static void put_audit(put_state_t *ps, int rc)
{
	char target[64], detail[1400], msg[1024] = "";

	if (!ps->written)
		return;
	if (rc < 0)
		snprintf(msg, sizeof msg, "%s", bs_last_error());
	snprintf(target, sizeof target, "%zu entities", ps->written);
	snprintf(detail, sizeof detail, "put from %s%s%s", ps->name, rc < 0 ? "; stopped early: " : "", msg);
	cli_audit(ps->ctx, "entity.put", target, detail);
	if (rc < 0)
		bs_error(rc, "%s", msg);
}

int cli_cmd_put(cli_ctx_t *ctx, int argc, char **argv)
{
	const char *batch_text = NULL;
	const cli_opt_t opts[] = { { "batch", &batch_text, NULL }, { NULL, NULL, NULL } };
	put_state_t ps = { .ctx = ctx };
	cli_args_t args = { 0 };
	char *line = NULL, where[4096], first_err[1024];
	size_t cap = 0;
	ssize_t n;
	long lineno = 0;
	bs_value_t bag;
	int rc;

	bs_value_nil(&bag);
	if ((rc = cli_parse(&args, ctx, argc, argv, opts, 0, 1)) != 0 || (rc = put_setup(&ps, batch_text)) < 0 ||
	    (rc = put_open(&ps, args.n ? args.v[0] : "-")) < 0)
		goto done;
	/* Refusals and configuration errors come before consuming the input. */
	if ((rc = cli_open(ctx)) < 0)
		goto done;
	put_signals();

	/* The first non-blank line. */
	while ((n = put_getline(&line, &cap, ps.in)) >= 0) {
		lineno++;
		if (!is_blank(line, (size_t)n))
			break;
	}
	if (n < -1) {
		rc = put_line_refused(&ps, n, lineno + 1);
		goto done;
	}
	if (n < 0)
		goto eof; /* empty input: nothing to store */

	snprintf(where, sizeof where, "%s:%ld", ps.name, lineno);
	if ((rc = bs_json_decode(&bag, line, line_len(line, (size_t)n), where)) < 0) {
		int first_rc = rc;
		rc = line_error(rc, where);
		snprintf(first_err, sizeof first_err, "%s", bs_last_error());
		bs_value_clear(&bag);
		rc = put_document(&ps, ps.in, line, (size_t)n, lineno, first_err, first_rc);
		goto done;
	}
	if ((rc = put_one(&ps, &bag, where, lineno, (size_t)n)) < 0)
		goto done;

	/* JSON Lines: one batch in memory at a time. */
	while (!atomic_load(&put_signal) && (n = put_getline(&line, &cap, ps.in)) >= 0) {
		lineno++;
		if (is_blank(line, (size_t)n))
			continue;
		where_line(where, sizeof where, ps.name, lineno);
		if ((rc = put_text(&ps, line, (size_t)n, where, lineno)) < 0)
			goto done;
	}
	if (n < -1) { /* the lines before it stored, as for a bad line */
		int frc = put_flush(&ps);
		rc = frc < 0 ? frc : put_line_refused(&ps, n, lineno + 1);
		goto done;
	}
eof:
	if (atomic_load(&put_signal)) {
		/* the batch in flight ends first (its ids printed): the count is whole */
		if ((rc = put_wait(&ps)) >= 0)
			rc = bs_error(BS_ERROR,
			              "%s: interrupted by signal %d after line %ld: the %zu entities whose ids "
			              "were printed are stored, the rest are not",
			              ps.name, atomic_load(&put_signal), lineno, ps.written);
	} else if (ferror(ps.in)) {
		int err = errno, wrc = put_wait(&ps);
		rc = wrc < 0 ? wrc : bs_error(BS_ERROR, "%s: read error: %s", ps.name, strerror(err));
	} else if ((rc = put_flush(&ps)) >= 0) {
		rc = put_wait(&ps);
	}
	put_progress(&ps, true);
done:
	/* a batch still in flight (a line refused after it was handed over):
	 * its outcome first; its failure is the one told, as when it was
	 * written before the refused line was read */
	if (ps.flying) {
		int wrc = put_wait(&ps);
		if (wrc < 0)
			rc = wrc;
	}
	put_audit(&ps, rc);
	if (rc < 0 && atomic_load(&put_signal)) {
		fprintf(stderr, "bagstore: %s\n", bs_last_error());
		put_die();
	}
	bs_value_clear(&bag);
	free(line);
	if (ps.in && ps.in != stdin)
		fclose(ps.in);
	put_free(&ps);
	cli_args_free(&args);
	return rc < 0 ? rc : 0;
}

/* ------------------------------------------------------------ get, delete */

/* The arguments of get and delete: one ID (into *id and hex), options, then
 * the store. Returns CLI_HELP_SHOWN, 0 or a BS_E* code. */
static int open_with_id(bs_id_t *id, char hex[33], cli_ctx_t *ctx, int argc, char **argv, const cli_opt_t *opts)
{
	cli_args_t args = { 0 };
	int rc;

	if ((rc = cli_parse(&args, ctx, argc, argv, opts, 1, 1)) == 0 && (rc = bs_id_parse(id, args.v[0])) == 0 &&
	    (rc = cli_open(ctx)) == 0)
		bs_id_hex(hex, id);
	cli_args_free(&args);
	return rc;
}

/* Name the entity in a not-found error; returns rc. */
static int entity_error(int rc, const char *hex)
{
	if (rc == BS_ENOTFOUND)
		bs_error(rc, "entity %s not found", hex);
	return rc;
}

int cli_cmd_get(cli_ctx_t *ctx, int argc, char **argv)
{
	bool yaml = false;
	const cli_opt_t opts[] = { { "yaml", NULL, &yaml }, { NULL, NULL, NULL } };
	char *out = NULL, hex[33];
	bs_value_t bag;
	bs_id_t id;
	int rc;

	bs_value_nil(&bag);
	if ((rc = open_with_id(&id, hex, ctx, argc, argv, opts)) != 0)
		goto done;
	int shard = 0;
	if ((rc = entity_error(bs_get(&bag, ctx->st, &id, NULL, &shard), hex)) < 0)
		goto done;
	/* a stored body that cannot be printed is the store's problem (corrupt,
	 * exit 1), not the caller's */
	if ((rc = yaml ? bs_yaml_encode(&out, &bag) : bs_json_encode(&out, &bag, 0)) < 0) {
		char msg[1024];
		snprintf(msg, sizeof msg, "%s", bs_last_error());
		rc = bs_error(BS_ECORRUPT, "shard %s: entity %s cannot be printed as %s: %s",
		              bs_store_config(ctx->st)->shards[shard].name, hex, yaml ? "YAML" : "JSON", msg);
		goto done;
	}
	size_t len = strlen(out);
	fputs(out, stdout);
	if (len == 0 || out[len - 1] != '\n')
		fputc('\n', stdout);
done:
	free(out);
	bs_value_clear(&bag);
	return rc < 0 ? rc : 0;
}

/* After a delete that failed with something other than a conflict: did it
 * delete the entity all the same? It does when its entity went and its
 * index rows did not (a target shard down), and then its before-image must
 * still reach the audit log, or the change cannot be undone. Gone: yes;
 * still there: no; not known (its shard does not answer): yes, said so. */
static bool delete_made(cli_ctx_t *ctx, const bs_id_t *id, bool *unknown)
{
	bs_bytes_t now = { 0 };
	int rc = bs_get_raw(&now, ctx->st, id, NULL);

	bs_bytes_free(&now);
	bs_error_clear();
	*unknown = rc < 0 && rc != BS_ENOTFOUND;
	return rc < 0;
}

int cli_cmd_delete(cli_ctx_t *ctx, int argc, char **argv)
{
	char hex[33];
	bs_id_t id;
	int rc;

	if ((rc = open_with_id(&id, hex, ctx, argc, argv, NULL)) != 0)
		return rc < 0 ? rc : 0;
	/* Delete what was read, only if it still is (bs_delete_if), so that the
	 * audit's before-image is exactly what went: a write in between, read
	 * again. */
	bs_bytes_t before = { 0 };
	int64_t us = 0;
	bool read = false, unknown = false;
	for (int tries = 0; tries < 3; tries++) {
		bs_bytes_free(&before);
		if (!(read = (rc = bs_get_raw(&before, ctx->st, &id, &us)) == 0) ||
		    (rc = bs_delete_if(ctx->st, &id, us)) != BS_ECONFLICT)
			break;
	}
	if ((rc = entity_error(rc, hex)) < 0) {
		char msg[1024], detail[1200];
		snprintf(msg, sizeof msg, "%s", bs_last_error());
		if (read && rc != BS_ECONFLICT && delete_made(ctx, &id, &unknown)) {
			snprintf(detail, sizeof detail, "%s: %.1000s; from the command line",
			         unknown ? "the delete may have been made" : "cut short", msg);
			bs_audit_entity_t ae = { .id = id, .before = &before, .before_us = us };
			cli_audit_entity(ctx, "entity.delete", &ae, detail);
		}
		bs_bytes_free(&before);
		return bs_error(rc, "%s", msg);
	}
	bs_audit_entity_t ae = { .id = id, .before = &before, .before_us = us };
	cli_audit_entity(ctx, "entity.delete", &ae, "from the command line");
	bs_bytes_free(&before);
	printf("deleted %s\n", hex);
	return 0;
}

/* ------------------------------------------------------------ query */

static int parse_limit(cli_ctx_t *ctx, size_t *out, const char *text)
{
	char *end, quoted[1024];
	unsigned long long v;

	errno = 0;
	v = strtoull(text, &end, 10);
	if (text[0] < '0' || text[0] > '9' || *end || errno || v == 0 || v > SIZE_MAX)
		return cli_usage_error(ctx, "--limit wants a positive integer, got %s",
		                       fmt_quote(quoted, sizeof quoted, text));
	*out = (size_t)v;
	return 0;
}

int cli_cmd_query(cli_ctx_t *ctx, int argc, char **argv)
{
	const char *limit_text = NULL;
	const cli_opt_t opts[] = { { "limit", &limit_text, NULL }, { NULL, NULL, NULL } };
	cli_args_t args = { 0 };
	char quoted[1024];
	bs_query_spec_t q = { 0 };
	bs_index_list_t l = { 0 };
	bs_result_t res = { 0 };
	size_t limit = 0, k, unprintable = 0;
	int i, rc;

	if ((rc = cli_parse(&args, ctx, argc, argv, opts, 2, -1)) != 0)
		goto done;
	if (limit_text && (rc = parse_limit(ctx, &limit, limit_text)) < 0)
		goto done;
	for (i = 1; i < args.n; i++)
		if (!strchr(args.v[i], '=') || args.v[i][0] == '=') {
			rc = cli_usage_error(ctx, "expected PROP=VALUE, got %s",
			                     fmt_quote(quoted, sizeof quoted, args.v[i]));
			goto done;
		}
	if ((rc = cli_open(ctx)) < 0 || (rc = bs_index_list(&l, ctx->st)) < 0)
		goto done;
	/* the engine's rules: unknown or repeated properties, values per type */
	if ((rc = bs_query_parse(&q, &l, args.v[0], (const char *const *)args.v + 1, args.n - 1)) < 0)
		goto done;
	if ((rc = bs_query(&res, ctx->st, q.index, q.conds, q.nconds, limit)) < 0)
		goto done;
	/* a body that cannot be printed is named and skipped: the rest print */
	for (k = 0; k < res.len; k++)
		if (cli_print_bag(&res.items[k].bag) < 0) {
			char hex[33];
			bs_id_hex(hex, &res.items[k].id);
			fprintf(stderr, "bagstore: shard %s: entity %s cannot be printed as JSON: %s\n",
			        bs_store_config(ctx->st)->shards[res.items[k].shard].name, hex, bs_last_error());
			unprintable++;
		}
	if (res.corrupt)
		rc = bs_error(BS_ECORRUPT, "%zu matching entities skipped: their body is corrupt; the first: %s",
		              res.corrupt, res.corrupt_first);
	else if (unprintable)
		rc = bs_error(BS_ECORRUPT, "%zu matching entities skipped: they cannot be printed as JSON",
		              unprintable);
done:
	bs_result_free(&res);
	bs_query_spec_clear(&q);
	bs_index_list_free(&l);
	cli_args_free(&args);
	return rc < 0 ? rc : 0;
}
