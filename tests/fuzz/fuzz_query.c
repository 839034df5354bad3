/*
 * fuzz_query.c - libFuzzer target for query conditions: the input's first
 * line is an index definition for bs_index_parse ("PROP:TYPE,..."), the
 * rest is the console's query text for bs_query_parse_text against a fixed
 * catalog (every property type, two indexes sharing a property, one
 * building), then the same words one condition each for bs_query_parse.
 * Whatever parses names an index of the catalog and holds conditions on its
 * properties only, each once; a refusal is BS_EINVAL or BS_ENOTFOUND and
 * leaves the spec empty.
 *
 * Build and run: tests/fuzz/run.sh [seconds]; replayed by make quick.
 */
#include "bagstore.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bs_index_list_t catalog;

static void die(const char *what)
{
	fprintf(stderr, "fuzz_query: %s (%s)\n", what, bs_last_error());
	__builtin_trap();
}

static void setup(void)
{
	static const char *const defs[][4] = {
		{ "by_user", "user_id:uuid", "user_id", "r" },
		{ "by_user_title", "user_id:uuid,title:string(80)", "title", "r" },
		{ "by_likes", "likes:int", "likes", "r" },
		{ "by_score", "score:float,ok:bool,raw:binary(8)", "raw", "r" },
		{ "by_new", "fresh:string", "fresh", "b" },
	};
	int n = (int)(sizeof defs / sizeof defs[0]);

	catalog.items = calloc((size_t)n, sizeof *catalog.items);
	if (!catalog.items)
		die("out of memory");
	for (int i = 0; i < n; i++) {
		if (bs_index_parse(&catalog.items[i], defs[i][0], defs[i][1], defs[i][2]) != 0)
			die("the catalog does not parse");
		catalog.items[i].state = defs[i][3][0] == 'r' ? BS_INDEX_READY : BS_INDEX_BUILDING;
	}
	catalog.len = n;
}

static void check(const bs_query_spec_t *q, int rc)
{
	if (rc != 0) {
		if (rc != BS_EINVAL && rc != BS_ENOTFOUND && rc != BS_ENOMEM)
			die("unexpected error code");
		return;
	}
	const bs_index_t *idx = NULL;
	for (int i = 0; i < catalog.len; i++)
		if (!strcmp(catalog.items[i].name, q->index))
			idx = &catalog.items[i];
	if (!idx)
		die("parsed, through an index the catalog does not have");
	if (q->nconds < 1 || q->nconds > idx->nprops)
		die("parsed, with a count of conditions the index cannot hold");
	for (int c = 0; c < q->nconds; c++) {
		bool held = false;
		for (int p = 0; p < idx->nprops; p++)
			held |= !strcmp(idx->props[p].name, q->conds[c].prop) &&
			        bs_value_fits(&q->conds[c].value, &idx->props[p]);
		if (!held)
			die("a condition the index does not hold, or a value that does not fit it");
		for (int d = 0; d < c; d++)
			if (!strcmp(q->conds[c].prop, q->conds[d].prop))
				die("a property given twice");
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!catalog.items)
		setup();
	char *text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';

	char *nl = strchr(text, '\n');
	char *rest = nl ? nl + 1 : text + strlen(text);
	if (nl)
		*nl = '\0';
	bs_index_t def;
	memset(&def, 0, sizeof def);
	char *sp = strrchr(text, ' ');
	int rc = bs_index_parse(&def, "fuzz_index", text, sp ? sp + 1 : "p");
	if (rc != 0 && rc != BS_EINVAL && rc != BS_ENOMEM)
		die("index definition: unexpected error code");
	if (rc == 0 &&
	    (def.nprops < 1 || def.nprops > BS_INDEX_MAX_PROPS || def.shard_on < 0 || def.shard_on >= def.nprops))
		die("index definition accepted out of bounds");

	bs_query_spec_t q;
	memset(&q, 0, sizeof q);
	check(&q, bs_query_parse_text(&q, &catalog, rest));
	bs_query_spec_clear(&q);

	char *words[BS_INDEX_MAX_PROPS + 2];
	int n = 0;
	for (char *w = strtok(rest, " \t,"); w && n < BS_INDEX_MAX_PROPS + 2; w = strtok(NULL, " \t,"))
		words[n++] = w;
	memset(&q, 0, sizeof q);
	check(&q, bs_query_parse(&q, &catalog, NULL, (const char *const *)words, n));
	bs_query_spec_clear(&q);
	free(text);
	return 0;
}
