/*
 * indexdef.c - index definitions as text: parsing "PROP:TYPE,..." lists into
 * a bs_index_t, printing them back in canonical form, the names of column
 * types and index states, and each index table's CREATE TABLE statement.
 *
 * Nothing here talks to a shard; the DDL is only built.
 */
#include "codec_internal.h"
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define STRING_DEFAULT_LEN 255u
#define STRING_MAX_LEN 1024u
#define BINARY_MAX_LEN 3072u
/* InnoDB's limit on one key (16 KiB pages); the primary key covers every
 * property and entity_id, so their widths must fit together. */
#define INNODB_MAX_KEY_BYTES 3072u
#define ENTITY_ID_BYTES 16u

static bool is_ident_start(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}

static bool is_ident_char(char c)
{
	return is_ident_start(c) || (c >= '0' && c <= '9');
}

/* [A-Za-z_][A-Za-z0-9_]{0,63} over s[0..len). */
static bool is_ident(const char *s, size_t len)
{
	size_t i;

	if (len == 0 || len > BS_NAME_MAX || !is_ident_start(s[0]))
		return false;
	for (i = 1; i < len; i++)
		if (!is_ident_char(s[i]))
			return false;
	return true;
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/* Bytes a column takes in an InnoDB key. */
static unsigned key_bytes(const bs_prop_t *p)
{
	switch (p->type) {
	case BS_COL_UUID: return 16;
	case BS_COL_STRING: return 4 * p->len; /* utf8mb4 */
	case BS_COL_INT: return 8;
	case BS_COL_FLOAT: return 8;
	case BS_COL_BOOL: return 1;
	case BS_COL_BINARY: return p->len;
	}
	return 0;
}

int bs__index_name_check(const char *name)
{
	char shown[96];

	if (name == NULL || name[0] == '\0')
		return bs_error(BS_EINVAL, "index name is empty");
	if (!is_ident(name, strlen(name)))
		return bs_error(
			BS_EINVAL,
			"index name \"%s\" is not valid: expected [A-Za-z_][A-Za-z0-9_]* of at most %d characters",
			bs__quote(shown, sizeof shown, name, strlen(name)), BS_NAME_MAX);
	/* Compared without case: with lower_case_table_names the server would
	 * fold them onto bagstore's own tables. */
	if (strcasecmp(name, "entities") == 0 || strncasecmp(name, "bagstore_", 9) == 0)
		return bs_error(BS_EINVAL,
		                "index name \"%s\" is reserved: \"entities\" and names starting with \"bagstore_\" are "
		                "bagstore's own tables",
		                name);
	return 0;
}

/* N of "(N)" at *p, 1..max; advances *p past ')'. */
static int parse_len(unsigned *out, const char **p, const char *end, unsigned max, const char *what, int item)
{
	const char *s = *p;
	unsigned long v = 0;
	bool digits = false;

	if (s >= end || *s != '(')
		return bs_error(BS_EINVAL, "property %d: %s needs a length: %s(N)", item, what, what);
	s++;
	while (s < end && *s >= '0' && *s <= '9') {
		v = v * 10 + (unsigned long)(*s - '0');
		if (v > 1000000)
			v = 1000000; /* clamp; reported as too large below */
		digits = true;
		s++;
	}
	if (!digits || s >= end || *s != ')')
		return bs_error(BS_EINVAL, "property %d: expected %s(N) with N a number from 1 to %u", item, what, max);
	if (v < 1 || v > max)
		return bs_error(BS_EINVAL, "property %d: %s(%lu) is out of range: N must be 1 to %u", item, what, v,
		                max);
	*out = (unsigned)v;
	*p = s + 1;
	return 0;
}

/* One "PROP:TYPE" item, s[0..len) already trimmed; item is 1-based. */
static int parse_prop(bs_prop_t *prop, const char *s, size_t len, int item)
{
	char shown[96];
	const char *colon = memchr(s, ':', len), *end = s + len, *t;
	size_t nlen, tlen;
	int error;

	if (colon == NULL)
		return bs_error(BS_EINVAL, "property %d (\"%s\"): expected PROP:TYPE", item,
		                bs__quote(shown, sizeof shown, s, len));
	nlen = (size_t)(colon - s);
	while (nlen > 0 && is_space(s[nlen - 1]))
		nlen--;
	if (!is_ident(s, nlen))
		return bs_error(BS_EINVAL,
		                "property %d: name \"%s\" is not valid: expected [A-Za-z_][A-Za-z0-9_]* of at most %d "
		                "characters",
		                item, bs__quote(shown, sizeof shown, s, nlen), BS_NAME_MAX);
	if (nlen == 9 && memcmp(s, "entity_id", 9) == 0)
		return bs_error(BS_EINVAL, "property %d: \"entity_id\" is reserved for the index table's own column",
		                item);
	memcpy(prop->name, s, nlen);
	prop->name[nlen] = '\0';

	t = colon + 1;
	while (t < end && is_space(*t))
		t++;
	tlen = (size_t)(end - t);
	if (tlen == 4 && memcmp(t, "uuid", 4) == 0) {
		prop->type = BS_COL_UUID;
	} else if (tlen == 3 && memcmp(t, "int", 3) == 0) {
		prop->type = BS_COL_INT;
	} else if (tlen == 5 && memcmp(t, "float", 5) == 0) {
		prop->type = BS_COL_FLOAT;
	} else if (tlen == 4 && memcmp(t, "bool", 4) == 0) {
		prop->type = BS_COL_BOOL;
	} else if (tlen == 6 && memcmp(t, "string", 6) == 0) {
		prop->type = BS_COL_STRING;
		prop->len = STRING_DEFAULT_LEN;
	} else if (tlen > 6 && memcmp(t, "string", 6) == 0 && t[6] == '(') {
		const char *p = t + 6;
		prop->type = BS_COL_STRING;
		if ((error = parse_len(&prop->len, &p, end, STRING_MAX_LEN, "string", item)) < 0)
			return error;
		if (p != end)
			return bs_error(BS_EINVAL, "property %d: unexpected text after \"string(%u)\"", item,
			                prop->len);
	} else if (tlen >= 6 && memcmp(t, "binary", 6) == 0 && (tlen == 6 || t[6] == '(')) {
		const char *p = t + 6;
		prop->type = BS_COL_BINARY;
		if ((error = parse_len(&prop->len, &p, end, BINARY_MAX_LEN, "binary", item)) < 0)
			return error;
		if (p != end)
			return bs_error(BS_EINVAL, "property %d: unexpected text after \"binary(%u)\"", item,
			                prop->len);
	} else {
		return bs_error(BS_EINVAL,
		                "property %d (\"%s\"): unknown type \"%s\": expected uuid, string, string(N), int, "
		                "float, bool or binary(N)",
		                item, prop->name, bs__quote(shown, sizeof shown, t, tlen));
	}
	return 0;
}

/* The comma-separated PROP:TYPE list into def->props. */
static int parse_props(bs_index_t *def, const char *on)
{
	const char *p = on, *end = on + strlen(on);
	unsigned bytes = ENTITY_ID_BYTES;
	int error;
	for (;;) {
		const char *comma = memchr(p, ',', (size_t)(end - p));
		const char *s = p, *e = comma ? comma : end;
		while (s < e && is_space(*s))
			s++;
		while (e > s && is_space(e[-1]))
			e--;
		if (s == e) {
			if (def->nprops == 0 && comma == NULL)
				return bs_error(BS_EINVAL,
				                "index has no properties: expected PROP:TYPE[,PROP:TYPE...]");
			return bs_error(BS_EINVAL, "property %d is empty (stray comma?)", def->nprops + 1);
		}
		if (def->nprops == BS_INDEX_MAX_PROPS)
			return bs_error(BS_EINVAL, "too many properties: an index covers at most %d",
			                BS_INDEX_MAX_PROPS);
		if ((error = parse_prop(&def->props[def->nprops], s, (size_t)(e - s), def->nprops + 1)) < 0)
			return error;
		for (int j = 0; j < def->nprops; j++)
			if (strcmp(def->props[j].name, def->props[def->nprops].name) == 0)
				return bs_error(BS_EINVAL, "property %d: \"%s\" is listed twice", def->nprops + 1,
				                def->props[j].name);
		bytes += key_bytes(&def->props[def->nprops]);
		def->nprops++;
		if (comma == NULL)
			break;
		p = comma + 1;
	}
	if (bytes > INNODB_MAX_KEY_BYTES)
		return bs_error(BS_EINVAL,
		                "properties too wide for one key: %u bytes with entity_id, InnoDB allows %u (string(N) "
		                "takes 4 bytes per character)",
		                bytes, INNODB_MAX_KEY_BYTES);
	return 0;
}

/* Which of def's properties is shard_on. */
static int parse_shard_on(bs_index_t *def, const char *shard_on)
{
	char list[BS_INDEX_MAX_PROPS * (BS_NAME_MAX + 2) + 1], shown[96];
	list[0] = '\0';
	for (int i = 0; i < def->nprops; i++) {
		if (i > 0)
			strcat(list, ", ");
		strcat(list, def->props[i].name);
	}
	if (shard_on == NULL || shard_on[0] == '\0')
		return bs_error(BS_EINVAL, "shard_on is missing: name one of the index's properties (%s)", list);
	for (int i = 0; i < def->nprops; i++)
		if (strcmp(def->props[i].name, shard_on) == 0)
			def->shard_on = i;
	if (def->shard_on < 0)
		return bs_error(BS_EINVAL, "shard_on \"%s\" is not one of the index's properties (%s)",
		                bs__quote(shown, sizeof shown, shard_on, strlen(shard_on)), list);
	return 0;
}

int bs_index_parse(bs_index_t *def, const char *name, const char *on, const char *shard_on)
{
	int error;

	if (def == NULL)
		return bs_error(BS_EINVAL, "bs_index_parse: no definition to fill");
	memset(def, 0, sizeof *def);
	def->state = BS_INDEX_BUILDING;
	def->shard_on = -1;
	if ((error = bs__index_name_check(name)) < 0)
		goto done;
	memcpy(def->name, name, strlen(name) + 1);
	if ((error = parse_props(def, on ? on : "")) < 0 || (error = parse_shard_on(def, shard_on)) < 0)
		goto done;
done:
	if (error < 0) {
		memset(def, 0, sizeof *def);
		def->state = BS_INDEX_BUILDING;
	}
	return error;
}

/* "string", "string(80)", "binary(16)", "int", ... into buf. */
static void format_type(char *buf, size_t size, const bs_prop_t *p)
{
	if (p->type == BS_COL_STRING && p->len != STRING_DEFAULT_LEN)
		snprintf(buf, size, "string(%u)", p->len);
	else if (p->type == BS_COL_BINARY)
		snprintf(buf, size, "binary(%u)", p->len);
	else
		snprintf(buf, size, "%s", bs_coltype_name(p->type));
}

char *bs_index_format_on(char *buf, size_t size, const bs_index_t *def)
{
	size_t used = 0;
	int i;

	if (buf == NULL || size == 0)
		return buf;
	buf[0] = '\0';
	for (i = 0; def != NULL && i < def->nprops && i < BS_INDEX_MAX_PROPS; i++) {
		char type[32];
		int n;

		format_type(type, sizeof type, &def->props[i]);
		n = snprintf(buf + used, size - used, "%s%s:%s", i ? "," : "", def->props[i].name, type);
		if (n < 0 || (size_t)n >= size - used) {
			buf[used] = '\0'; /* cut at the last whole item */
			break;
		}
		used += (size_t)n;
	}
	return buf;
}

const char *bs_coltype_name(bs_coltype_t t)
{
	switch (t) {
	case BS_COL_UUID: return "uuid";
	case BS_COL_STRING: return "string";
	case BS_COL_INT: return "int";
	case BS_COL_FLOAT: return "float";
	case BS_COL_BOOL: return "bool";
	case BS_COL_BINARY: return "binary";
	}
	return "unknown";
}

const char *bs_index_state_name(bs_index_state_t s)
{
	switch (s) {
	case BS_INDEX_BUILDING: return "building";
	case BS_INDEX_READY: return "ready";
	case BS_INDEX_DISABLED: return "disabled";
	}
	return "unknown";
}

/* The column type of one property, as MariaDB spells it. */
static void column_sql(char *buf, size_t size, const bs_prop_t *p)
{
	switch (p->type) {
	case BS_COL_UUID: snprintf(buf, size, "BINARY(16)"); break;
	case BS_COL_STRING: snprintf(buf, size, "VARCHAR(%u) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin", p->len); break;
	case BS_COL_INT: snprintf(buf, size, "BIGINT"); break;
	case BS_COL_FLOAT: snprintf(buf, size, "DOUBLE"); break;
	case BS_COL_BOOL: snprintf(buf, size, "TINYINT(1)"); break;
	case BS_COL_BINARY: snprintf(buf, size, "VARBINARY(%u)", p->len); break;
	}
}

int bs_index_ddl(char **out, const bs_index_t *def)
{
	bs_buf_t b = { 0 };
	int error = 0, i;

	if (out == NULL)
		return bs_error(BS_EINVAL, "bs_index_ddl: no output");
	*out = NULL;
	/* The definition may come from anywhere (a catalog row, a caller's
	 * struct): names go into SQL, so check them again. */
	if (def == NULL || def->nprops < 1 || def->nprops > BS_INDEX_MAX_PROPS) {
		error = bs_error(BS_EINVAL, "index definition has no valid property list");
		goto done;
	}
	if (memchr(def->name, '\0', sizeof def->name) == NULL || (error = bs__index_name_check(def->name)) < 0) {
		if (error == 0)
			error = bs_error(BS_EINVAL, "index name is not terminated");
		goto done;
	}
	for (i = 0; i < def->nprops; i++) {
		const bs_prop_t *p = &def->props[i];
		bool ok = memchr(p->name, '\0', sizeof p->name) != NULL && is_ident(p->name, strlen(p->name)) &&
		          strcmp(p->name, "entity_id") != 0;
		if (ok && p->type == BS_COL_STRING)
			ok = p->len >= 1 && p->len <= STRING_MAX_LEN;
		else if (ok && p->type == BS_COL_BINARY)
			ok = p->len >= 1 && p->len <= BINARY_MAX_LEN;
		else if (ok)
			ok = p->type == BS_COL_UUID || p->type == BS_COL_INT || p->type == BS_COL_FLOAT ||
			     p->type == BS_COL_BOOL;
		if (!ok) {
			error = bs_error(BS_EINVAL, "index \"%s\": property %d is not valid", def->name, i + 1);
			goto done;
		}
	}

	bs__buf_printf(&b, "CREATE TABLE IF NOT EXISTS `%s` (\n", def->name);
	for (i = 0; i < def->nprops; i++) {
		char col[96];
		column_sql(col, sizeof col, &def->props[i]);
		bs__buf_printf(&b, "  `%s` %s NOT NULL,\n", def->props[i].name, col);
	}
	bs__buf_puts(&b, "  `entity_id` BINARY(16) NOT NULL,\n  PRIMARY KEY (");
	for (i = 0; i < def->nprops; i++)
		bs__buf_printf(&b, "`%s`, ", def->props[i].name);
	bs__buf_puts(&b,
	             "`entity_id`),\n  UNIQUE KEY `entity_id` (`entity_id`)\n"
	             ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin COMMENT='" BS__INDEX_TABLE_MARK "'");
	if (b.oom) {
		error = bs_error(BS_ENOMEM, "out of memory building the DDL of index \"%s\"", def->name);
		goto done;
	}
	*out = b.ptr;
	b.ptr = NULL;

done:
	bs__buf_free(&b);
	return error;
}

/* ------------------------------------------------------------ lists */

void bs_index_list_free(bs_index_list_t *l)
{
	if (!l)
		return;
	free(l->items);
	l->items = NULL;
	l->len = 0;
}

const bs_index_t *bs__index_find(const bs_index_list_t *l, const char *name)
{
	for (int i = 0; i < l->len; i++)
		if (!strcmp(l->items[i].name, name))
			return &l->items[i];
	return NULL;
}
