/*
 * jtext.h - JSON text for scripts: a jansson document as json_dumps lays it
 * out (the same flags: JSON_INDENT(n), JSON_COMPACT, JSON_ENSURE_ASCII,
 * JSON_SORT_KEYS), except that every float is the shortest text that reads
 * back as the same double (bs_float_text), where json_dumps writes 17
 * digits (4315.383 as 4315.3829999999998). The command line's --json output
 * and the daemon's JSON logs go through it. It calls neither room.
 */
#ifndef BS_JTEXT_H
#define BS_JTEXT_H

#include <stddef.h>

#include <jansson.h>

/* The document as text, NUL-terminated; the caller frees it. NULL when out
 * of memory (or doc is NULL). */
char *jtext_dumps(const json_t *doc, size_t flags);
/* One float as jtext_dumps writes it (always with a '.' or an exponent, as
 * jansson does, so that it reads back as a float); buf holds 48 bytes. */
char *jtext_real(char buf[48], double d);

#endif
