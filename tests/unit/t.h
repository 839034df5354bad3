/*
 * t.h - a minimal TAP-style harness for the unit tests.
 *
 * CHECK(cond, fmt, ...) records one assertion; t_done() prints
 * "N passed, N failed" and returns the exit status.
 */
#ifndef BS_T_H
#define BS_T_H
#include <stdio.h>
#include <string.h>

static int t_pass, t_fail;

#define CHECK(cond, ...) \
	do { \
		if (cond) { \
			t_pass++; \
		} else { \
			t_fail++; \
			printf("not ok %s:%d: %s: ", __FILE__, __LINE__, #cond); \
			printf(__VA_ARGS__); \
			printf("\n"); \
		} \
	} while (0)

#define CHECK_OK(expr) \
	do { \
		int rc_ = (expr); \
		CHECK(rc_ == 0, "%s returned %d: %s", #expr, rc_, bs_last_error()); \
	} while (0)

#define CHECK_ERR(expr, code) \
	do { \
		int rc_ = (expr); \
		CHECK(rc_ == (code), "%s returned %d, wanted %d (%s)", #expr, rc_, (code), bs_last_error()); \
	} while (0)

#define CHECK_STR(a, b) \
	do { \
		const char *a_ = (a), *b_ = (b); \
		CHECK(a_ &&b_ &&strcmp(a_, b_) == 0, "got \"%s\", wanted \"%s\"", a_ ? a_ : "(null)", \
		      b_ ? b_ : "(null)"); \
	} while (0)

static int t_done(const char *name)
{
	printf("%s: %d passed, %d failed\n", name, t_pass, t_fail);
	return t_fail ? 1 : 0;
}
#endif
