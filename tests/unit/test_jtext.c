/*
 * test_jtext.c - JSON text for scripts (tui/common/jtext.c, compiled in
 * here: unit tests link the engine only). The layout is json_dumps's,
 * byte for byte, on documents without floats; floats are the shortest text
 * that reads back as the same double, where json_dumps writes 17 digits.
 */
#include <math.h>
#include <stdlib.h>

#include "bagstore.h"
#include "t.h"

#include "jtext.c"

/* A document with every kind but floats: strings needing each escape,
 * non-ASCII (2, 3 and 4 bytes), nesting, empty containers. */
static json_t *doc_without_floats(void)
{
	json_t *o = json_object(), *a = json_array(), *in = json_object();

	json_object_set_new(o, "zeta", json_string("quote \" backslash \\ slash / tab \t nl \n cr \r bs \b ff \f"));
	static const char ctl[] = "nul \0 ctl \x01\x1f del \x7f";
	json_object_set_new(o, "alpha", json_stringn(ctl, sizeof ctl - 1));
	json_object_set_new(o, "utf8 \xc3\xa9", json_string("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"));
	json_object_set_new(o, "int", json_integer(-9007199254740993LL));
	json_object_set_new(o, "t", json_true());
	json_object_set_new(o, "f", json_false());
	json_object_set_new(o, "n", json_null());
	json_array_append_new(a, json_integer(1));
	json_array_append_new(a, json_array());
	json_array_append_new(a, json_object());
	json_object_set_new(in, "deep", json_array());
	json_array_append_new(json_object_get(in, "deep"), json_string("x"));
	json_array_append_new(a, in);
	json_object_set_new(o, "list", a);
	json_object_set_new(o, "empty", json_object());
	return o;
}

static void same_as_jansson(const json_t *doc, size_t flags, const char *what)
{
	char *want = json_dumps(doc, flags), *got = jtext_dumps(doc, flags);

	CHECK(want && got && strcmp(want, got) == 0, "%s: jansson wrote\n%s\nwe wrote\n%s", what,
	      want ? want : "(null)", got ? got : "(null)");
	free(want);
	free(got);
}

static void float_text(double d, const char *want)
{
	char buf[48];

	jtext_real(buf, d);
	CHECK_STR(buf, want);
	CHECK(strtod(buf, NULL) == d || (d == 0 && strtod(buf, NULL) == 0), "%s reads back as %.17g", buf, d);
}

int main(void)
{
	json_t *doc = doc_without_floats(), *o;
	char *s;

	same_as_jansson(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER, "indented (the CLI's --json)");
	same_as_jansson(doc, JSON_COMPACT | JSON_ENSURE_ASCII, "compact, ASCII (the JSON logs)");
	same_as_jansson(doc, 0, "one line");
	same_as_jansson(doc, JSON_INDENT(4) | JSON_SORT_KEYS | JSON_ESCAPE_SLASH, "sorted, slashes escaped");
	same_as_jansson(json_object_get(doc, "empty"), JSON_INDENT(2), "an empty object");

	/* what json_dumps gets wrong: 17 digits where fewer read back */
	float_text(4315.383, "4315.383");
	float_text(54.556547, "54.556547");
	float_text(0.1, "0.1");
	float_text(1.0 / 3.0, "0.3333333333333333");            /* 16 digits */
	float_text(0.30000000000000004, "0.30000000000000004"); /* needs 17 */
	float_text(5.0, "5.0");                                 /* still a float */
	float_text(-0.0, "-0.0");
	float_text(1e300, "1e300"); /* jansson's exponent form */
	float_text(1.5e-7, "1.5e-7");
	float_text(123456789012345680.0, "1.2345678901234568e17");
	float_text(9007199254740993.0, "9007199254740992.0");

	o = json_object();
	json_object_set_new(o, "rate", json_real(4315.383));
	json_object_set_new(o, "lag_s", json_real(54.556547));
	s = jtext_dumps(o, JSON_COMPACT);
	CHECK_STR(s, "{\"rate\":4315.383,\"lag_s\":54.556547}");
	free(s);
	json_decref(o);

	/* any double reads back as itself */
	srand(19);
	for (int i = 0; i < 20000; i++) {
		union {
			uint64_t u;
			double d;
		} x;
		char buf[48];

		x.u = ((uint64_t)rand() << 42) ^ ((uint64_t)rand() << 21) ^ (uint64_t)rand();
		if (!isfinite(x.d))
			continue;
		jtext_real(buf, x.d);
		if (strtod(buf, NULL) != x.d && !(x.d == 0)) {
			CHECK(0, "%.17g written as %s does not read back", x.d, buf);
			break;
		}
	}
	json_decref(doc);
	return t_done("test_jtext");
}
