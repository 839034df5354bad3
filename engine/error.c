/*
 * error.c - the per-thread last-error slot (libgit2's giterr pattern).
 *
 * A failure sets the slot where it happens; callers pass the code up and
 * leave the message alone, so the operator reads the first cause.
 */
#include "bagstore.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char last_msg[1024];
static _Thread_local int last_code;

int bs_error(int code, const char *fmt, ...)
{
	/* formatted apart first: an argument may be the slot itself (a cause
	 * wrapped, bs_error(rc, "...: %s", bs_last_error())) */
	char msg[sizeof last_msg];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	memcpy(last_msg, msg, sizeof msg);
	last_code = code;
	return code;
}

void bs_error_clear(void)
{
	last_msg[0] = '\0';
	last_code = BS_OK;
}

const char *bs_last_error(void)
{
	return last_msg;
}
int bs_last_error_code(void)
{
	return last_code;
}

const char *bs_strerror(int code)
{
	switch (code) {
	case BS_OK: return "ok";
	case BS_ENOTFOUND: return "not found";
	case BS_EUNREACHABLE: return "unreachable";
	case BS_ECONFLICT: return "conflict";
	case BS_EINVAL: return "invalid input";
	case BS_ECONFIG: return "configuration error";
	case BS_ESQL: return "SQL error";
	case BS_ENOMEM: return "out of memory";
	case BS_ECORRUPT: return "corrupt body";
	case BS_EREADONLY: return "read-only";
	default: return "error";
	}
}
