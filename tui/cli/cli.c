/*
 * cli.c - the subcommands of `bagstore` for scripts: init, shards, put, get,
 * delete, query and index list/create/drop.
 *
 * The table cli_commands[] declares each subcommand once, with its usage,
 * help text and `dangerous` flag; --help output comes from it and the
 * read-only rule reads the flag in cli_open() only. Every handler parses its
 * own options with cli_parse(), asks the engine through bagstore.h, writes
 * results on stdout and returns 0 or a BS_E* code; main.c prints the message
 * and maps the code with cli_exit_code().
 */
#include "cli.h"
#include "cli_cleaner.h"
#include "fmt.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>

#include <jansson.h>

/* ------------------------------------------------------------ exit codes */

int cli_exit_code(int rc)
{
	switch (rc) {
	case BS_OK:
		return 0;
	case BS_EINVAL:  /* arguments, ids, JSON input */
	case BS_ECONFIG: /* the configuration file or shard list */
		return 2;
	default:         /* not found, unreachable, conflict, SQL, corrupt, ... */
		return 1;
	}
}

int cli_usage_error(cli_ctx_t *ctx, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	ctx->show_usage = true;
	return bs_error(BS_EINVAL, "%s", msg);
}

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

/* ------------------------------------------------------------ store */

int cli_load_config(cli_ctx_t *ctx)
{
	int rc;

	if (ctx->cfg)
		return 0;
	rc = bs_config_load(&ctx->cfg, ctx->config_path);
	if (rc < 0) {
		ctx->cfg = NULL;
		/* Whatever went wrong reading it, it is a configuration error. */
		return rc == BS_ENOMEM ? rc : BS_ECONFIG;
	}
	if (ctx->read_only)
		ctx->cfg->read_only = true;
	return 0;
}

static void command_name(char *buf, size_t size, const cli_cmd_t *cmd)
{
	if (cmd->group)
		snprintf(buf, size, "%s %s", cmd->group, cmd->name);
	else
		snprintf(buf, size, "%s", cmd->name);
}

int cli_open(cli_ctx_t *ctx)
{
	int rc;

	if ((rc = cli_load_config(ctx)) < 0)
		return rc;
	/* The read-only rule, in one place: dangerous commands are refused. */
	if (ctx->cmd && ctx->cmd->dangerous && ctx->cfg->read_only) {
		char name[64];
		command_name(name, sizeof name, ctx->cmd);
		return bs_error(BS_EREADONLY, "read-only: refusing %s", name);
	}
	if (!ctx->st && (rc = bs_store_open(&ctx->st, ctx->cfg)) < 0) {
		ctx->st = NULL;
		return rc;
	}
	return 0;
}

void cli_ctx_clear(cli_ctx_t *ctx)
{
	bs_store_free(ctx->st);
	ctx->st = NULL;
	bs_config_free(ctx->cfg);
	ctx->cfg = NULL;
}

/* A zeroed array of one item of `size` bytes per shard of the open store;
 * NULL, with the error set, when out of memory. */
static void *per_shard_alloc(cli_ctx_t *ctx, size_t size)
{
	int n = bs_store_nshards(ctx->st);
	void *p = calloc((size_t)(n > 0 ? n : 1), size);

	if (!p)
		bs_error(BS_ENOMEM, "out of memory");
	return p;
}

/* ------------------------------------------------------------ options */

/* One option of a subcommand: --name, or --name VALUE / --name=VALUE when
 * value is non-NULL. */
typedef struct {
	const char *name;
	const char **value;
	bool *flag;
} cli_opt_t;

#define CLI_HELP_SHOWN 1

/* The name of positional argument i in cmd's usage ("ID", "NAME"), for
 * "missing ID"; the words of `args` that are not options or optional. */
static const char *arg_name(const cli_cmd_t *cmd, int i)
{
	static char word[64];
	const char *p = cmd ? cmd->args : "";

	while (*p) {
		size_t n;
		while (*p == ' ')
			p++;
		n = strcspn(p, " ");
		if (n && *p != '-' && *p != '[' && i-- == 0) {
			snprintf(word, sizeof word, "%.*s", (int)n, p);
			return word;
		}
		p += n;
	}
	return "argument";
}

/*
 * Parse a subcommand's arguments (argv[0] is the first argument after the
 * command's name). Options may come anywhere; "--" ends them; "-" alone is a
 * positional argument. The positionals go to *pos_out (caller frees the
 * array, not the strings), between min and max of them (max < 0: any).
 * Returns CLI_HELP_SHOWN after printing --help, 0, or BS_EINVAL.
 */
static int cli_parse(cli_ctx_t *ctx, int argc, char **argv, const cli_opt_t *opts,
                     char ***pos_out, int *npos_out, int min, int max)
{
	char **pos = NULL;
	int npos = 0, i, rc = 0;
	bool only_pos = false;

	*pos_out = NULL;
	*npos_out = 0;
	if (!(pos = calloc((size_t)argc + 1, sizeof *pos)))
		return bs_error(BS_ENOMEM, "out of memory");

	for (i = 0; i < argc; i++) {
		const char *a = argv[i];
		const cli_opt_t *o;
		const char *eq;
		size_t nlen;

		if (only_pos || a[0] != '-' || a[1] == '\0') {
			pos[npos++] = argv[i];
			continue;
		}
		if (strcmp(a, "--") == 0) {
			only_pos = true;
			continue;
		}
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			cli_print_command_help(stdout, ctx->cmd);
			rc = CLI_HELP_SHOWN;
			goto done;
		}
		if (a[1] != '-') {
			rc = cli_usage_error(ctx, "unknown option '%s'", a);
			goto done;
		}
		eq = strchr(a + 2, '=');
		nlen = eq ? (size_t)(eq - (a + 2)) : strlen(a + 2);
		for (o = opts; o && o->name; o++)
			if (strlen(o->name) == nlen && strncmp(o->name, a + 2, nlen) == 0)
				break;
		if (!o || !o->name) {
			rc = cli_usage_error(ctx, "unknown option '%.*s'", (int)nlen + 2, a);
			goto done;
		}
		if (o->value) {
			if (eq) {
				*o->value = eq + 1;
			} else if (i + 1 < argc) {
				*o->value = argv[++i];
			} else {
				rc = cli_usage_error(ctx, "option --%s needs a value", o->name);
				goto done;
			}
		} else if (eq) {
			rc = cli_usage_error(ctx, "option --%s takes no value", o->name);
			goto done;
		}
		if (o->flag)
			*o->flag = true;
	}

	if (npos < min) {
		rc = cli_usage_error(ctx, "missing %s", arg_name(ctx->cmd, npos));
		goto done;
	}
	if (max >= 0 && npos > max) {
		rc = cli_usage_error(ctx, "unexpected argument '%s'", pos[max]);
		goto done;
	}
	*pos_out = pos;
	*npos_out = npos;
	pos = NULL;
done:
	free(pos);
	return rc;
}

/* ------------------------------------------------------------ tables */

/* A text table: left-aligned columns two spaces apart, right-aligned where
 * the `right` bit is set, and an optional tail after a row's last cell. */
#define TABLE_MAX_COLS 16

typedef struct {
	int ncols;
	unsigned right;
	size_t nrows, cap;
	char **cells; /* nrows * ncols, owned */
	char **tails; /* nrows, owned, NULL for none */
} cli_table_t;

static int table_add(cli_table_t *t, const char *const *cells, const char *tail)
{
	char **row;
	int c;

	if (t->ncols < 1 || t->ncols > TABLE_MAX_COLS)
		return bs_error(BS_ERROR, "internal: a table of %d columns (at most %d)", t->ncols, TABLE_MAX_COLS);

	if (t->nrows == t->cap) {
		size_t ncap = t->cap ? t->cap * 2 : 16;
		char **nc = realloc(t->cells, ncap * (size_t)t->ncols * sizeof *nc);
		if (!nc)
			return bs_error(BS_ENOMEM, "out of memory");
		t->cells = nc;
		nc = realloc(t->tails, ncap * sizeof *nc);
		if (!nc)
			return bs_error(BS_ENOMEM, "out of memory");
		t->tails = nc;
		t->cap = ncap;
	}
	row = t->cells + t->nrows * (size_t)t->ncols;
	for (c = 0; c < t->ncols; c++)
		row[c] = strdup(cells[c] ? cells[c] : "-");
	t->tails[t->nrows] = tail && tail[0] ? strdup(tail) : NULL;
	t->nrows++; /* whatever was copied is table_free's from here */
	for (c = 0; c < t->ncols; c++)
		if (!row[c])
			return bs_error(BS_ENOMEM, "out of memory");
	if (tail && tail[0] && !t->tails[t->nrows - 1])
		return bs_error(BS_ENOMEM, "out of memory");
	return 0;
}

static void table_print(FILE *f, const cli_table_t *t)
{
	size_t w[TABLE_MAX_COLS] = {0}, r;
	int c;

	for (r = 0; r < t->nrows; r++)
		for (c = 0; c < t->ncols; c++) {
			const char *s = t->cells[r * (size_t)t->ncols + (size_t)c];
			size_t l = s ? strlen(s) : 0;
			if (l > w[c])
				w[c] = l;
		}
	for (r = 0; r < t->nrows; r++) {
		for (c = 0; c < t->ncols; c++) {
			const char *s = t->cells[r * (size_t)t->ncols + (size_t)c];
			bool last = c == t->ncols - 1 && !t->tails[r];
			if (!s)
				s = "";
			if (c > 0)
				fputs("  ", f);
			if (t->right & (1u << c))
				fprintf(f, "%*s", (int)w[c], s);
			else if (last)
				fputs(s, f);
			else
				fprintf(f, "%-*s", (int)w[c], s);
		}
		if (t->tails[r])
			fprintf(f, "  %s", t->tails[r]);
		fputc('\n', f);
	}
}

static void table_free(cli_table_t *t)
{
	size_t i;

	for (i = 0; i < t->nrows * (size_t)t->ncols; i++)
		free(t->cells[i]);
	for (i = 0; i < t->nrows; i++)
		free(t->tails[i]);
	free(t->cells);
	free(t->tails);
	t->cells = t->tails = NULL;
	t->nrows = t->cap = 0;
}

/* ------------------------------------------------------------ JSON helpers */

static json_t *jstr(const char *s)
{
	json_t *j;

	if (!s || !s[0])
		return json_null();
	/* A server message need not be UTF-8; never lose the whole document. */
	j = json_string(s);
	return j ? j : json_string("(message not in UTF-8)");
}

static int json_print(json_t *doc)
{
	char *s = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER);

	if (!s)
		return bs_error(BS_ENOMEM, "out of memory");
	puts(s);
	free(s);
	return 0;
}

static int print_bag_json(const bs_value_t *bag)
{
	char *s = NULL;
	int rc;

	if ((rc = bs_json_encode(&s, bag, 0)) < 0)
		return rc;
	puts(s);
	free(s);
	return 0;
}

/* ------------------------------------------------------------ init */

static int cmd_init(cli_ctx_t *ctx, int argc, char **argv)
{
	char **pos = NULL, fp[17];
	int npos, rc;

	if ((rc = cli_parse(ctx, argc, argv, NULL, &pos, &npos, 0, 0)) != 0)
		goto done;
	if ((rc = cli_open(ctx)) < 0)
		goto done;
	if ((rc = bs_init(ctx->st)) < 0)
		goto done;
	bs_config_fingerprint(fp, ctx->cfg);
	printf("initialised %d shards (fingerprint %s), %d declared indexes\n",
	       bs_store_nshards(ctx->st), fp, ctx->cfg->nindexes);
done:
	free(pos);
	return rc < 0 ? rc : 0;
}

/* ------------------------------------------------------------ shards */

/* A shard's figure, null when it is down or the figure unknown (< 0). */
static json_t *jcount(bool down, int64_t v)
{
	return down || v < 0 ? json_null() : json_integer(v);
}

static int shards_json(const bs_shard_status_t *ss, int n)
{
	json_t *arr = json_array();
	int i, rc = 0;

	if (!arr)
		return bs_error(BS_ENOMEM, "out of memory");
	for (i = 0; i < n; i++) {
		const bs_shard_status_t *s = &ss[i];
		bool down = s->state == BS_SHARD_DOWN;
		json_t *o = json_object();

		if (!o || json_array_append_new(arr, o) < 0) {
			rc = bs_error(BS_ENOMEM, "out of memory");
			goto done;
		}
		json_object_set_new(o, "name", jstr(s->name));
		json_object_set_new(o, "address", jstr(s->address));
		json_object_set_new(o, "state", json_string(bs_shard_state_name(s->state)));
		json_object_set_new(o, "error", jstr(s->error));
		json_object_set_new(o, "version", jstr(s->version));
		json_object_set_new(o, "rtt_ms", down ? json_null() : json_real(round(s->rtt_ms * 1000) / 1000));
		json_object_set_new(o, "entities_est", jcount(down, s->entities_est));
		json_object_set_new(o, "data_bytes", jcount(down, s->data_bytes));
		json_object_set_new(o, "threads_running", jcount(down, s->threads_running));
		json_object_set_new(o, "replica_lag", down || s->replica_lag < 0 ?
		                    json_null() : json_real(s->replica_lag));
		json_object_set_new(o, "fingerprint_ok", down || s->fingerprint_ok < 0 ?
		                    json_null() : json_boolean(s->fingerprint_ok > 0));
	}
	rc = json_print(arr);
done:
	json_decref(arr);
	return rc;
}

static int shards_table(const bs_shard_status_t *ss, int n)
{
	static const char *head[] = {"NAME", "ADDRESS", "STATE", "VERSION", "RTT_MS",
	                             "ENTITIES", "DATA", "THREADS", "REPL_LAG", "FINGERPRINT"};
	cli_table_t t = {.ncols = 10, .right = (1u << 4) | (1u << 5) | (1u << 6) | (1u << 7) | (1u << 8)};
	int i, rc;

	if ((rc = table_add(&t, head, NULL)) < 0)
		goto done;
	for (i = 0; i < n; i++) {
		const bs_shard_status_t *s = &ss[i];
		bool down = s->state == BS_SHARD_DOWN;
		char rtt[32] = "-", ents[32] = "-", data[32] = "-", thr[32] = "-", lag[32] = "-";
		const char *fp = "-";
		const char *cells[10];

		if (!down) {
			snprintf(rtt, sizeof rtt, "%.2f", s->rtt_ms);
			if (s->entities_est >= 0)
				snprintf(ents, sizeof ents, "%" PRId64, s->entities_est);
			fmt_bytes(data, sizeof data, s->data_bytes);
			if (s->threads_running >= 0)
				snprintf(thr, sizeof thr, "%" PRId64, s->threads_running);
			if (s->replica_lag >= 0)
				snprintf(lag, sizeof lag, "%.0fs", s->replica_lag);
			else if (s->replica_lag == -2)
				snprintf(lag, sizeof lag, "unknown");
			fp = s->fingerprint_ok > 0 ? "ok" :
			     s->fingerprint_ok == 0 ? "MISMATCH" : "uninitialised";
		}
		cells[0] = s->name;
		cells[1] = s->address[0] ? s->address : "-";
		cells[2] = bs_shard_state_name(s->state);
		cells[3] = s->version[0] && !down ? s->version : "-";
		cells[4] = rtt;
		cells[5] = ents;
		cells[6] = data;
		cells[7] = thr;
		cells[8] = lag;
		cells[9] = fp;
		/* the reason under the row: MySQL's message when down, else why a
		 * replica's lag or the fingerprint is off */
		if ((rc = table_add(&t, cells, s->error[0] ? s->error : NULL)) < 0)
			goto done;
	}
	table_print(stdout, &t);
done:
	table_free(&t);
	return rc;
}

static int cmd_shards(cli_ctx_t *ctx, int argc, char **argv)
{
	bool json = false;
	const cli_opt_t opts[] = {{"json", NULL, &json}, {NULL, NULL, NULL}};
	bs_shard_status_t *ss = NULL;
	char **pos = NULL;
	int npos, n, i, down = 0, rc;

	if ((rc = cli_parse(ctx, argc, argv, opts, &pos, &npos, 0, 0)) != 0)
		goto done;
	if ((rc = cli_open(ctx)) < 0)
		goto done;
	n = bs_store_nshards(ctx->st);
	if (!(ss = per_shard_alloc(ctx, sizeof *ss))) {
		rc = BS_ENOMEM;
		goto done;
	}
	if ((rc = bs_shard_status(ss, ctx->st)) < 0)
		goto done;
	if ((rc = json ? shards_json(ss, n) : shards_table(ss, n)) < 0)
		goto done;
	for (i = 0; i < n; i++)
		if (ss[i].state == BS_SHARD_DOWN)
			down++;
	if (down)
		rc = bs_error(BS_EUNREACHABLE, "%d of %d shards unreachable", down, n);
done:
	free(ss);
	free(pos);
	return rc < 0 ? rc : 0;
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
 *  1. Read the first non-blank line (getline). If it parses on its own, the
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

typedef struct {
	cli_ctx_t *ctx;
	const char *name; /* the input's name in messages */
	size_t written;
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
	case BS_INT: case BS_UINT: case BS_FLOAT: return "a number";
	case BS_STR: return "a string";
	case BS_BIN: return "bytes";
	case BS_ARRAY: return "an array";
	case BS_MAP: return "an object";
	}
	return "?";
}

/* Give a bag without "id" a new one, as its first key. */
static int bag_add_id(bs_value_t *bag)
{
	bs_value_t nm, idv;
	bs_id_t id;
	size_t i;
	int rc;

	bs_value_map(&nm);
	bs_value_nil(&idv);
	bs_id_generate(&id);
	if ((rc = bs_value_bin(&idv, id.b, sizeof id.b)) < 0)
		goto done;
	if ((rc = bs_map_set(&nm, "id", 2, &idv)) < 0)
		goto done;
	for (i = 0; i < bag->v.m.len; i++) {
		bs_pair_t *p = &bag->v.m.items[i];
		if ((rc = bs_map_set(&nm, p->key, p->klen, &p->val)) < 0)
			goto done;
	}
	bs_value_clear(bag);
	*bag = nm;
	bs_value_nil(&nm);
done:
	bs_value_clear(&idv);
	bs_value_clear(&nm);
	return rc;
}

/* Store one decoded entity (consumed) and print its id. */
static int put_one(put_state_t *ps, bs_value_t *bag, const char *where)
{
	char hex[33];
	bs_id_t id;
	int rc;

	if (bag->type != BS_MAP) {
		rc = bs_error(BS_EINVAL, "%s: expected a JSON object, got %s",
		              where, type_name(bag->type));
		goto done;
	}
	if (!bs_map_get(bag, "id") && (rc = bag_add_id(bag)) < 0)
		goto done;
	if ((rc = bs_put(ps->ctx->st, bag, &id)) < 0) {
		rc = error_at(rc, where);
		goto done;
	}
	bs_id_hex(hex, &id);
	printf("%s\n", hex);
	fflush(stdout);
	ps->written++;
done:
	bs_value_clear(bag);
	return rc;
}

/* Decode text as one entity named `where` and store it. */
static int put_text(put_state_t *ps, const char *text, size_t len, const char *where)
{
	bs_value_t bag;
	int rc;

	bs_value_nil(&bag);
	if ((rc = bs_json_decode(&bag, text, len, where)) < 0) {
		rc = line_error(rc, where);
		bs_value_clear(&bag);
		return rc;
	}
	return put_one(ps, &bag, where);
}

/* Step 2 above: the first line did not parse alone. line/len hold it. */
static int put_document(put_state_t *ps, FILE *f, const char *line, size_t len,
                        const char *first_err, int first_rc)
{
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
		rc = error_at(rc, ps->name);
		goto done;
	}
	rc = put_one(ps, &bag, ps->name);
done:
	bs_value_clear(&bag);
	free(buf);
	return rc;
}

static int cmd_put(cli_ctx_t *ctx, int argc, char **argv)
{
	put_state_t ps = {.ctx = ctx};
	char **pos = NULL, *line = NULL, where[4096], first_err[1024];
	const char *path;
	size_t cap = 0;
	ssize_t n;
	long lineno = 0;
	FILE *f = NULL;
	bs_value_t bag;
	int npos, rc;

	bs_value_nil(&bag);
	if ((rc = cli_parse(ctx, argc, argv, NULL, &pos, &npos, 0, 1)) != 0)
		goto done;
	path = npos ? pos[0] : "-";
	if (strcmp(path, "-") == 0) {
		f = stdin;
		ps.name = "<stdin>";
	} else {
		ps.name = path;
		if (!(f = fopen(path, "r"))) {
			rc = bs_error(BS_EINVAL, "%s: %s", path, strerror(errno));
			goto done;
		}
	}
	/* Refusals and configuration errors come before consuming the input. */
	if ((rc = cli_open(ctx)) < 0)
		goto done;

	/* The first non-blank line. */
	while ((n = getline(&line, &cap, f)) >= 0) {
		lineno++;
		if (!is_blank(line, (size_t)n))
			break;
	}
	if (n < 0)
		goto eof; /* empty input: nothing to store */

	snprintf(where, sizeof where, "%s:%ld", ps.name, lineno);
	if ((rc = bs_json_decode(&bag, line, (size_t)n, where)) < 0) {
		int first_rc = rc;
		rc = line_error(rc, where);
		snprintf(first_err, sizeof first_err, "%s", bs_last_error());
		bs_value_clear(&bag);
		rc = put_document(&ps, f, line, (size_t)n, first_err, first_rc);
		goto done;
	}
	if ((rc = put_one(&ps, &bag, where)) < 0)
		goto done;

	/* JSON Lines: one line in memory at a time. */
	while ((n = getline(&line, &cap, f)) >= 0) {
		lineno++;
		if (is_blank(line, (size_t)n))
			continue;
		snprintf(where, sizeof where, "%s:%ld", ps.name, lineno);
		if ((rc = put_text(&ps, line, (size_t)n, where)) < 0)
			goto done;
	}
eof:
	if (ferror(f))
		rc = bs_error(BS_ERROR, "%s: read error: %s", ps.name, strerror(errno));
done:
	bs_value_clear(&bag);
	free(line);
	if (f && f != stdin)
		fclose(f);
	free(pos);
	return rc < 0 ? rc : 0;
}

/* ------------------------------------------------------------ get, delete */

/* The arguments of get and delete: one ID (into *id and hex), options, then
 * the store. Returns CLI_HELP_SHOWN, 0 or a BS_E* code. */
static int open_with_id(cli_ctx_t *ctx, int argc, char **argv, const cli_opt_t *opts,
                        bs_id_t *id, char hex[33])
{
	char **pos = NULL;
	int npos, rc;

	if ((rc = cli_parse(ctx, argc, argv, opts, &pos, &npos, 1, 1)) == 0 &&
	    (rc = bs_id_parse(id, pos[0])) == 0 && (rc = cli_open(ctx)) == 0)
		bs_id_hex(hex, id);
	free(pos);
	return rc;
}

/* Name the entity in a not-found error; returns rc. */
static int entity_error(int rc, const char *hex)
{
	if (rc == BS_ENOTFOUND)
		bs_error(rc, "entity %s not found", hex);
	return rc;
}

static int cmd_get(cli_ctx_t *ctx, int argc, char **argv)
{
	bool yaml = false;
	const cli_opt_t opts[] = {{"yaml", NULL, &yaml}, {NULL, NULL, NULL}};
	char *out = NULL, hex[33];
	bs_value_t bag;
	bs_id_t id;
	int rc;

	bs_value_nil(&bag);
	if ((rc = open_with_id(ctx, argc, argv, opts, &id, hex)) != 0)
		goto done;
	if ((rc = entity_error(bs_get(&bag, ctx->st, &id, NULL, NULL), hex)) < 0)
		goto done;
	if (yaml) {
		size_t len;
		if ((rc = bs_yaml_encode(&out, &bag)) < 0)
			goto done;
		len = strlen(out);
		fputs(out, stdout);
		if (len == 0 || out[len - 1] != '\n')
			fputc('\n', stdout);
	} else {
		if ((rc = bs_json_encode(&out, &bag, 0)) < 0)
			goto done;
		puts(out);
	}
done:
	free(out);
	bs_value_clear(&bag);
	return rc < 0 ? rc : 0;
}

static int cmd_delete(cli_ctx_t *ctx, int argc, char **argv)
{
	char hex[33];
	bs_id_t id;
	int rc;

	if ((rc = open_with_id(ctx, argc, argv, NULL, &id, hex)) != 0)
		return rc < 0 ? rc : 0;
	if ((rc = entity_error(bs_delete(ctx->st, &id), hex)) < 0)
		return rc;
	printf("deleted %s\n", hex);
	return 0;
}

/* ------------------------------------------------------------ query */

static int index_get(bs_index_t *out, cli_ctx_t *ctx, const char *name)
{
	int rc = bs_index_get(out, ctx->st, name);

	if (rc == BS_ENOTFOUND)
		bs_error(rc, "index %s not found", name);
	return rc;
}

static int parse_limit(cli_ctx_t *ctx, size_t *out, const char *text)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(text, &end, 10);
	if (text[0] < '0' || text[0] > '9' || *end || errno || v == 0 || v > SIZE_MAX)
		return cli_usage_error(ctx, "--limit wants a positive integer, got '%s'", text);
	*out = (size_t)v;
	return 0;
}

static int cmd_query(cli_ctx_t *ctx, int argc, char **argv)
{
	const char *limit_text = NULL;
	const cli_opt_t opts[] = {{"limit", &limit_text, NULL}, {NULL, NULL, NULL}};
	char **pos = NULL;
	bs_query_spec_t q = {0};
	bs_index_list_t l = {0};
	bs_result_t res = {0};
	size_t limit = 0, k;
	int npos, i, rc;

	if ((rc = cli_parse(ctx, argc, argv, opts, &pos, &npos, 2, -1)) != 0)
		goto done;
	if (limit_text && (rc = parse_limit(ctx, &limit, limit_text)) < 0)
		goto done;
	for (i = 1; i < npos; i++)
		if (!strchr(pos[i], '=') || pos[i][0] == '=') {
			rc = cli_usage_error(ctx, "expected PROP=VALUE, got '%s'", pos[i]);
			goto done;
		}
	if ((rc = cli_open(ctx)) < 0 || (rc = bs_index_list(&l, ctx->st)) < 0)
		goto done;
	/* the engine's rules: unknown or repeated properties, values per type */
	if ((rc = bs_query_parse(&q, &l, pos[0], (const char *const *)pos + 1, npos - 1)) < 0)
		goto done;
	if ((rc = bs_query(&res, ctx->st, q.index, q.conds, q.nconds, limit)) < 0)
		goto done;
	for (k = 0; k < res.len; k++)
		if ((rc = print_bag_json(&res.items[k].bag)) < 0)
			goto done;
done:
	bs_result_free(&res);
	bs_query_spec_clear(&q);
	bs_index_list_free(&l);
	free(pos);
	return rc < 0 ? rc : 0;
}

/* ------------------------------------------------------------ index */

/* Rows of an index per shard and in all, by InnoDB's estimate; false when
 * the count could not be had (the error is cleared: it is shown as "-"). */
static bool index_rows(int64_t *counts, int64_t *total, cli_ctx_t *ctx, const char *name)
{
	int i, n = bs_store_nshards(ctx->st);

	*total = 0;
	if (bs_index_rows(counts, ctx->st, name, false) < 0) {
		bs_error_clear();
		return false;
	}
	for (i = 0; i < n; i++)
		*total += counts[i];
	return true;
}

static int cmd_index_list(cli_ctx_t *ctx, int argc, char **argv)
{
	static const char *head[] = {"NAME", "STATE", "ON", "SHARD_ON", "ROWS"};
	bool json = false;
	const cli_opt_t opts[] = {{"json", NULL, &json}, {NULL, NULL, NULL}};
	bs_index_list_t l = {0};
	cli_table_t t = {.ncols = 5, .right = 1u << 4};
	json_t *arr = NULL;
	int64_t *counts = NULL;
	char **pos = NULL;
	int npos, nshards, i, s, rc;

	if ((rc = cli_parse(ctx, argc, argv, opts, &pos, &npos, 0, 0)) != 0)
		goto done;
	if ((rc = cli_open(ctx)) < 0)
		goto done;
	nshards = bs_store_nshards(ctx->st);
	if (!(counts = per_shard_alloc(ctx, sizeof *counts))) {
		rc = BS_ENOMEM;
		goto done;
	}
	if (json && !(arr = json_array())) {
		rc = bs_error(BS_ENOMEM, "out of memory");
		goto done;
	}
	if ((rc = bs_index_list(&l, ctx->st)) < 0)
		goto done;
	if (!json && (rc = table_add(&t, head, NULL)) < 0)
		goto done;

	for (i = 0; i < l.len; i++) {
		const bs_index_t *x = &l.items[i];
		const char *shard_on = x->shard_on >= 0 && x->shard_on < x->nprops ?
		                       x->props[x->shard_on].name : "-";
		char on[1024], rows[32] = "-", created[32];
		int64_t total;
		bool have = index_rows(counts, &total, ctx, x->name);

		bs_index_format_on(on, sizeof on, x);
		if (have)
			snprintf(rows, sizeof rows, "%" PRId64, total);
		if (json) {
			json_t *o = json_object(), *per = have ? json_array() : json_null();
			if (!o || !per || json_array_append_new(arr, o) < 0) {
				json_decref(per);
				rc = bs_error(BS_ENOMEM, "out of memory");
				goto done;
			}
			for (s = 0; have && s < nshards; s++)
				json_array_append_new(per, json_integer(counts[s]));
			fmt_iso_utc(created, sizeof created, x->created_us);
			json_object_set_new(o, "name", json_string(x->name));
			json_object_set_new(o, "state", json_string(bs_index_state_name(x->state)));
			json_object_set_new(o, "on", json_string(on));
			json_object_set_new(o, "shard_on", json_string(shard_on));
			json_object_set_new(o, "rows", have ? json_integer(total) : json_null());
			json_object_set_new(o, "rows_per_shard", per);
			json_object_set_new(o, "created", x->created_us ?
			                    json_string(created) : json_null());
		} else {
			const char *cells[5] = {x->name, bs_index_state_name(x->state), on,
			                        shard_on, rows};
			if ((rc = table_add(&t, cells, NULL)) < 0)
				goto done;
		}
	}
	if (json)
		rc = json_print(arr);
	else
		table_print(stdout, &t);
done:
	json_decref(arr);
	table_free(&t);
	bs_index_list_free(&l);
	free(counts);
	free(pos);
	return rc < 0 ? rc : 0;
}

static int cmd_index_create(cli_ctx_t *ctx, int argc, char **argv)
{
	const char *on = NULL, *shard_on = NULL;
	const cli_opt_t opts[] = {{"on", &on, NULL}, {"shard-on", &shard_on, NULL},
	                          {NULL, NULL, NULL}};
	bs_index_t def, got;
	char **pos = NULL;
	int npos, rc;

	memset(&def, 0, sizeof def);
	if ((rc = cli_parse(ctx, argc, argv, opts, &pos, &npos, 1, 1)) != 0)
		goto done;
	if (!on || !shard_on) {
		rc = cli_usage_error(ctx, "index create needs --on and --shard-on");
		goto done;
	}
	if ((rc = bs_index_parse(&def, pos[0], on, shard_on)) < 0)
		goto done;
	if ((rc = cli_open(ctx)) < 0)
		goto done;
	if ((rc = bs_index_create(ctx->st, &def)) < 0)
		goto done;
	if ((rc = bs_index_get(&got, ctx->st, def.name)) < 0)
		goto done;
	printf("created index %s (%s) on %d shards\n", got.name,
	       bs_index_state_name(got.state), bs_store_nshards(ctx->st));
done:
	free(pos);
	return rc < 0 ? rc : 0;
}

static int cmd_index_drop(cli_ctx_t *ctx, int argc, char **argv)
{
	bool yes = false;
	const cli_opt_t opts[] = {{"yes", NULL, &yes}, {NULL, NULL, NULL}};
	const bs_config_t *cfg;
	bs_index_t idx;
	int64_t *counts = NULL, total;
	char **pos = NULL;
	int npos, n, i, rc;

	if ((rc = cli_parse(ctx, argc, argv, opts, &pos, &npos, 1, 1)) != 0)
		goto done;
	if ((rc = cli_open(ctx)) < 0)
		goto done;
	if ((rc = index_get(&idx, ctx, pos[0])) < 0)
		goto done;
	if (!yes) {
		char per[2048] = "";
		size_t off = 0;

		cfg = bs_store_config(ctx->st);
		n = bs_store_nshards(ctx->st);
		if (!(counts = per_shard_alloc(ctx, sizeof *counts))) {
			rc = BS_ENOMEM;
			goto done;
		}
		if (index_rows(counts, &total, ctx, idx.name)) {
			for (i = 0; i < n && off < sizeof per; i++)
				off += (size_t)snprintf(per + off, sizeof per - off, "%s%s %" PRId64,
				                        i ? ", " : "", cfg->shards[i].name, counts[i]);
			rc = bs_error(BS_EINVAL, "would drop index %s (%s): about %" PRId64
			              " rows on %d shards (%s); add --yes to drop it",
			              idx.name, bs_index_state_name(idx.state), total, n, per);
		} else {
			rc = bs_error(BS_EINVAL, "would drop index %s (%s) on %d shards "
			              "(rows unknown); add --yes to drop it",
			              idx.name, bs_index_state_name(idx.state), n);
		}
		goto done;
	}
	if ((rc = bs_index_drop(ctx->st, idx.name)) < 0)
		goto done;
	printf("dropped index %s\n", idx.name);
done:
	free(counts);
	free(pos);
	return rc < 0 ? rc : 0;
}

/* ------------------------------------------------------------ the table */

const cli_cmd_t cli_commands[] = {
	{NULL, "init", cmd_init, "",
	 "create bagstore's tables and the configured indexes on every shard",
	 "Idempotent. Records the shard list's fingerprint on every shard; later\n"
	 "writes through a configuration whose list differs are refused.\n",
	 true},
	{NULL, "shards", cmd_shards, "[--json]",
	 "status of every shard",
	 "  --json   a JSON array instead of the table\n"
	 "Exits 1 when any shard is unreachable.\n",
	 false},
	{NULL, "put", cmd_put, "[FILE|-]",
	 "store entities from one JSON object or JSON Lines",
	 "Reads FILE, or standard input for - or no argument. Prints each id as\n"
	 "32 hex digits, one a line. An object without \"id\" gets a new one.\n"
	 "Stops at the first bad line (FILE:LINE); the entities before it stay\n"
	 "written.\n",
	 true},
	{NULL, "get", cmd_get, "ID [--yaml]",
	 "print an entity as JSON (or YAML)",
	 "  --yaml   YAML (!uuid, !!binary) instead of one line of JSON\n"
	 "ID is 32 hex digits or the dashed form.\n",
	 false},
	{NULL, "delete", cmd_delete, "ID",
	 "delete an entity",
	 NULL,
	 true},
	{NULL, "query", cmd_query, "INDEX PROP=VALUE... [--limit N]",
	 "entities matching through an index, newest first, as JSON Lines",
	 "  --limit N   at most N entities\n"
	 "Each PROP is one of the index's properties; VALUE is read per its type\n"
	 "(uuid: hex or dashed; int; float; bool: true/false; string; binary: hex).\n",
	 false},
	{"index", "list", cmd_index_list, "[--json]",
	 "the index catalog, with estimated rows",
	 "  --json   a JSON array instead of the table\n",
	 false},
	{"index", "create", cmd_index_create,
	 "NAME --on PROP:TYPE[,PROP:TYPE...] --shard-on PROP",
	 "create an index; the cleaner builds it",
	 "  --on SPEC        properties and types: uuid, string, string(N), int,\n"
	 "                   float, bool, binary(N)\n"
	 "  --shard-on PROP  the property whose value routes the index rows\n",
	 true},
	{"index", "drop", cmd_index_drop, "NAME --yes",
	 "disable an index, then drop its tables on every shard",
	 "  --yes    required; without it, says what would be dropped and exits 2\n",
	 true},
	CLI_CLEANER_COMMANDS
	{NULL, NULL, NULL, NULL, NULL, NULL, false},
};

const cli_cmd_t *cli_find(const char *group, const char *name)
{
	const cli_cmd_t *c;

	for (c = cli_commands; c->name; c++) {
		bool same_group = group ? c->group && strcmp(c->group, group) == 0 : !c->group;
		if (same_group && strcmp(c->name, name) == 0)
			return c;
	}
	return NULL;
}

bool cli_is_group(const char *name)
{
	const cli_cmd_t *c;

	for (c = cli_commands; c->name; c++)
		if (c->group && strcmp(c->group, name) == 0)
			return true;
	return false;
}

void cli_print_usage_line(FILE *f, const cli_cmd_t *cmd)
{
	char name[64];

	command_name(name, sizeof name, cmd);
	fprintf(f, "bagstore [-c FILE] %s%s%s", name, cmd->args[0] ? " " : "", cmd->args);
}

void cli_print_command_help(FILE *f, const cli_cmd_t *cmd)
{
	fputs("usage: ", f);
	cli_print_usage_line(f, cmd);
	fprintf(f, "\n\n%s.\n", cmd->summary);
	if (cmd->help)
		fprintf(f, "\n%s", cmd->help);
	if (cmd->dangerous)
		fputs("\nChanges data: refused with --read-only or read_only: true.\n", f);
}

void cli_print_usage(FILE *f, const char *group)
{
	const cli_cmd_t *c;

	fputs("usage:\n", f);
	for (c = cli_commands; c->name; c++) {
		if (group && !(c->group && strcmp(c->group, group) == 0))
			continue;
		fputs("  ", f);
		cli_print_usage_line(f, c);
		fputc('\n', f);
	}
	if (group)
		return;
	fputs("  bagstore [-c FILE] [--read-only]        the console, on a terminal\n"
	      "\n"
	      "global options, before the command:\n"
	      "  -c FILE       configuration (default $BAGSTORE_CONFIG, else ./bagstore.yaml)\n"
	      "  --read-only   refuse every command that changes data\n"
	      "  --help        this text; `bagstore COMMAND --help` for one command\n"
	      "  --version     print the version\n"
	      "\n"
	      "commands:\n", f);
	for (c = cli_commands; c->name; c++) {
		char name[64];
		command_name(name, sizeof name, c);
		fprintf(f, "  %-14s%s\n", name, c->summary);
	}
	fputs("\nexit status: 0 ok, 1 the operation failed, 2 usage or configuration error\n", f);
}
