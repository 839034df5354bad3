/*
 * out.c - the command line's one output module (see cli.h): text tables
 * with aligned columns, JSON documents (jansson's, written by jtext.h with
 * floats at their shortest), and entities as JSON lines. Numbers and times
 * inside cells come from tui/common/fmt.h.
 */
#include "cli.h"
#include "fmt.h"

#include <stdlib.h>
#include <string.h>

#include "jtext.h"

/* ------------------------------------------------------------ tables */

/* Room for one more row; 0 or BS_ENOMEM. */
static int table_grow(cli_table_t *t)
{
	size_t ncap = t->cap ? t->cap * 2 : 16;
	char **nc;

	if (t->nrows < t->cap)
		return 0;
	if (!(nc = realloc(t->cells, ncap * (size_t)t->ncols * sizeof *nc)))
		return bs_error(BS_ENOMEM, "out of memory");
	t->cells = nc;
	if (!(nc = realloc(t->tails, ncap * sizeof *nc)))
		return bs_error(BS_ENOMEM, "out of memory");
	t->tails = nc;
	t->cap = ncap;
	return 0;
}

int cli_table_add(cli_table_t *t, const char *const *cells, const char *tail)
{
	char **row;
	int c, rc;

	if (t->ncols < 1 || t->ncols > CLI_TABLE_MAX_COLS)
		return bs_error(BS_ERROR, "internal: a table of %d columns (at most %d)", t->ncols, CLI_TABLE_MAX_COLS);
	if ((rc = table_grow(t)) < 0)
		return rc;
	row = t->cells + t->nrows * (size_t)t->ncols;
	for (c = 0; c < t->ncols; c++)
		row[c] = strdup(cells[c] ? cells[c] : "-");
	t->tails[t->nrows] = tail && tail[0] ? strdup(tail) : NULL;
	t->nrows++; /* whatever was copied is cli_table_free's from here */
	for (c = 0; c < t->ncols; c++)
		if (!row[c])
			return bs_error(BS_ENOMEM, "out of memory");
	if (tail && tail[0] && !t->tails[t->nrows - 1])
		return bs_error(BS_ENOMEM, "out of memory");
	return 0;
}

void cli_table_print(FILE *f, const cli_table_t *t)
{
	size_t w[CLI_TABLE_MAX_COLS] = { 0 }, r;
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

int cli_table_rows(const char *const *head, int ncols, unsigned right, int n, cli_row_fn row, const void *items)
{
	cli_table_t t = { .ncols = ncols, .right = right };
	int rc;

	if ((rc = cli_table_add(&t, head, NULL)) < 0)
		goto done;
	for (int k = 0; k < n; k++) {
		cli_row_t r = { 0 };

		row(&r, items, k);
		if ((rc = cli_table_add(&t, r.cells, r.tail)) < 0)
			goto done;
	}
	cli_table_print(stdout, &t);
done:
	cli_table_free(&t);
	return rc;
}

void cli_table_free(cli_table_t *t)
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

/* ------------------------------------------------------------ JSON */

json_t *cli_jstr(const char *s)
{
	json_t *j;

	if (!s || !s[0])
		return json_null();
	/* A server message need not be UTF-8; never lose the whole document. */
	j = json_string(s);
	return j ? j : json_string("(message not in UTF-8)");
}

int cli_json_print(json_t *doc)
{
	char *s = jtext_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER);

	if (!s)
		return bs_error(BS_ENOMEM, "out of memory");
	puts(s);
	free(s);
	return 0;
}

int cli_print_bag(const bs_value_t *bag)
{
	char *s = NULL;
	int rc;

	if ((rc = bs_json_encode(&s, bag, 0)) < 0)
		return rc;
	puts(s);
	free(s);
	return 0;
}

/* ------------------------------------------------------------ the trace */

void cli_trace_print(void *arg, const bs_trace_t *t)
{
	char d[32], rows[48] = "", err[600] = "";

	(void)arg;
	fmt_ms(d, sizeof d, t->seconds);
	snprintf(rows, sizeof rows, "%lld row%s", (long long)t->rows, t->rows == 1 ? "" : "s");
	if (t->err || t->error[0])
		snprintf(err, sizeof err, " error %u (%s)", t->err, t->error);
	/* one call, one line: the fan-out's threads print at once */
	fprintf(stderr, "trace: %s %s%s %s%s%s: %s\n", t->shard, t->async ? "<=" : "", d, rows, err,
	        t->async ? " (sent without waiting; timed to its answer's read)" : "", t->sql);
}

int cli_unreachable(int n, const char *what, const char *first)
{
	return bs_error(BS_EUNREACHABLE, "%d shard%s did not answer: %s%s%s%s", n, n == 1 ? "" : "s", what,
	                first && *first ? " (" : "", first ? first : "", first && *first ? ")" : "");
}
