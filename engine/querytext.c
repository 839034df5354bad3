/*
 * querytext.c - query conditions as people type them, read by one set of
 * rules for the command line (`query INDEX PROP=VALUE...`) and the console
 * (`/PROP=VALUE`): which index, which properties, and each value read as
 * its property's type. Every refusal names what exists instead.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void bs_query_spec_clear(bs_query_spec_t *q)
{
	for (int k = 0; k < q->nconds; k++)
		bs_value_clear(&q->conds[k].value);
	memset(q, 0, sizeof *q);
}

/* "a, b, c" of the index names in l (those in `state` only, when state >= 0). */
static void index_names(bs_buf_t *b, const bs_index_list_t *l, int state)
{
	int n = 0;
	for (int i = 0; i < l->len; i++) {
		if (state >= 0 && (int)l->items[i].state != state)
			continue;
		bs__buf_puts(b, n++ ? ", " : "");
		bs__buf_puts(b, l->items[i].name);
	}
	if (!n)
		bs__buf_puts(b, "none");
}

static void prop_names(bs_buf_t *b, const bs_index_t *idx)
{
	for (int k = 0; k < idx->nprops; k++) {
		bs__buf_puts(b, k ? ", " : "");
		bs__buf_puts(b, idx->props[k].name);
	}
}

static const bs_prop_t *prop_of(const bs_index_t *idx, const char *name, size_t len)
{
	for (int k = 0; k < idx->nprops; k++)
		if (strlen(idx->props[k].name) == len && !strncmp(idx->props[k].name, name, len))
			return &idx->props[k];
	return NULL;
}

/* Does idx hold every property named in texts? */
static bool covers(const bs_index_t *idx, const char *const *texts, int ntexts)
{
	for (int j = 0; j < ntexts; j++)
		if (!prop_of(idx, texts[j], strcspn(texts[j], "=")))
			return false;
	return true;
}

/* The ready index holding every property named: fewest properties, then
 * the first by name (the catalog is read in name order). */
static int pick_index(const bs_index_t **out, const bs_index_list_t *l, const char *const *texts, int ntexts)
{
	const bs_index_t *best = NULL;
	*out = NULL;
	for (int i = 0; i < l->len; i++) {
		const bs_index_t *c = &l->items[i];
		if (c->state != BS_INDEX_READY || !covers(c, texts, ntexts))
			continue;
		if (!best || c->nprops < best->nprops)
			best = c;
	}
	if (best) {
		*out = best;
		return 0;
	}
	/* why not: a building index that would do, or none at all */
	bs_buf_t b = { 0 };
	int rc;
	for (int i = 0; i < l->len; i++)
		if (l->items[i].state == BS_INDEX_BUILDING && covers(&l->items[i], texts, ntexts)) {
			rc = bs_error(BS_ENOTFOUND,
			              "index %s holds %s but is still building: queries use an "
			              "index once it is ready (the cleaner backfills it)",
			              l->items[i].name, texts[0]);
			return rc;
		}
	bs__buf_puts(&b, "");
	for (int i = 0, n = 0; i < l->len; i++) {
		if (l->items[i].state != BS_INDEX_READY)
			continue;
		bs__buf_puts(&b, n++ ? "; " : "");
		bs__buf_puts(&b, l->items[i].name);
		bs__buf_puts(&b, " (");
		prop_names(&b, &l->items[i]);
		bs__buf_puts(&b, ")");
	}
	rc = bs_error(BS_ENOTFOUND, "no ready index holds %.*s%s (ready indexes: %s)", (int)strcspn(texts[0], "="),
	              texts[0], ntexts > 1 ? " and the rest" : "", b.len && b.ptr[0] ? b.ptr : "none");
	bs__buf_free(&b);
	return rc;
}

int bs_query_parse(bs_query_spec_t *out, const bs_index_list_t *l, const char *index, const char *const *texts,
                   int ntexts)
{
	const bs_index_t *idx = NULL;
	bs_buf_t b = { 0 };
	int rc = 0;

	memset(out, 0, sizeof *out);
	if (ntexts < 1)
		return bs_error(BS_EINVAL, "a query needs at least one PROP=VALUE");
	for (int j = 0; j < ntexts; j++) {
		const char *eq = strchr(texts[j], '=');
		if (!eq || eq == texts[j])
			return bs_error(BS_EINVAL, "expected PROP=VALUE, got '%s'", texts[j]);
	}
	if (index) {
		idx = bs__index_find(l, index);
		if (!idx) {
			index_names(&b, l, -1);
			rc = bs_error(BS_ENOTFOUND, "index %s not found (indexes: %s)", index, b.ptr);
			goto done;
		}
	} else if ((rc = pick_index(&idx, l, texts, ntexts))) {
		goto done;
	}
	if (ntexts > idx->nprops) {
		rc = bs_error(BS_EINVAL, "index %s has %d properties; %d conditions given", idx->name, idx->nprops,
		              ntexts);
		goto done;
	}
	snprintf(out->index, sizeof out->index, "%s", idx->name);
	for (int j = 0; j < ntexts; j++) {
		const char *eq = strchr(texts[j], '=');
		size_t plen = (size_t)(eq - texts[j]);
		const bs_prop_t *prop = prop_of(idx, texts[j], plen);
		if (!prop) {
			prop_names(&b, idx);
			rc = bs_error(BS_EINVAL, "index %s has no property '%.*s' (its properties: %s)", idx->name,
			              (int)plen, texts[j], b.ptr);
			goto done;
		}
		for (int k = 0; k < out->nconds; k++)
			if (!strcmp(out->conds[k].prop, prop->name)) {
				rc = bs_error(BS_EINVAL, "property %s given twice", prop->name);
				goto done;
			}
		bs_cond_t *c = &out->conds[out->nconds];
		snprintf(c->prop, sizeof c->prop, "%s", prop->name);
		if ((rc = bs_value_from_text(&c->value, prop, eq + 1)))
			goto done;
		out->nconds++;
	}
done:
	bs__buf_free(&b);
	if (rc)
		bs_query_spec_clear(out);
	return rc;
}

/* Split the console's one-line form into condition texts (in words[],
 * unquoted, NUL-terminated inside buf). A double quote opens or closes a
 * quoted part anywhere; a single quote only where a word or a value starts
 * (title='a b'), so that an apostrophe inside a value (title=don't) is a
 * letter. Inside either, a backslash escapes that quote and a backslash. */
static int split_words(char *buf, char **words, int *nwords, int max)
{
	char *r = buf, *w = buf;
	*nwords = 0;
	for (;;) {
		while (*r == ' ' || *r == '\t' || *r == ',')
			r++;
		if (!*r)
			return 0;
		if (*nwords == max)
			return bs_error(BS_EINVAL, "a query has at most %d conditions", max);
		words[(*nwords)++] = w;
		char *word = w, quote = 0;
		for (; *r; r++) {
			if (quote && *r == '\\' && (r[1] == quote || r[1] == '\\')) {
				*w++ = *++r;
			} else if (quote && *r == quote) {
				quote = 0;
			} else if (!quote && (*r == '"' || (*r == '\'' && (w == word || w[-1] == '=')))) {
				quote = *r;
			} else if (!quote && (*r == ' ' || *r == '\t' || *r == ',')) {
				break;
			} else {
				*w++ = *r;
			}
		}
		if (quote)
			return bs_error(BS_EINVAL, "a quote (%c) is not closed in the query", quote);
		bool end = !*r;
		*w++ = '\0';
		if (end)
			return 0;
		r++;
	}
}

int bs__query_split(char **index, char **words, int *nwords, char *buf)
{
	char *p = buf;
	int rc;

	*index = NULL;
	*nwords = 0;
	/* "INDEX: ..." names the index; a ':' inside a value does not */
	char *colon = strchr(p, ':'), *eq = strchr(p, '=');
	if (colon && (!eq || colon < eq)) {
		*colon = '\0';
		char *name = p;
		while (*name == ' ')
			name++;
		for (char *e = colon; e > name && e[-1] == ' ';)
			*--e = '\0';
		*index = *name ? name : NULL;
		p = colon + 1;
	}
	if ((rc = split_words(p, words, nwords, BS_INDEX_MAX_PROPS)))
		return rc;
	if (!*nwords)
		return bs_error(BS_EINVAL, "a query is PROP=VALUE [PROP=VALUE...]");
	/* a value with blanks split in two: say how to keep it whole */
	for (int j = 0; j < *nwords; j++)
		if (!strchr(words[j], '=') || words[j][0] == '=')
			return bs_error(BS_EINVAL,
			                "expected PROP=VALUE, got '%s'; a value with blanks or commas "
			                "is quoted: title=\"a b\" or title='a b'",
			                words[j]);
	return 0;
}

int bs_query_parse_text(bs_query_spec_t *out, const bs_index_list_t *l, const char *text)
{
	char *buf = strdup(text), *words[BS_INDEX_MAX_PROPS + 1];
	char *index = NULL;
	int n = 0, rc;

	memset(out, 0, sizeof *out);
	BS_ERR_ALLOC(buf);
	if (!(rc = bs__query_split(&index, words, &n, buf)))
		rc = bs_query_parse(out, l, index, (const char *const *)words, n);
	free(buf);
	return rc;
}
