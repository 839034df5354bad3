/*
 * codec_internal.h - private helpers shared by the L0 and L1 files: values
 * and bytes (value.c, bytes.c, id.c, base64.c), the codecs (msgpack.c,
 * body.c, json.c, yaml.c) and the text files that use them (config.c,
 * indexdef.c, route.c).
 *
 * Nothing here is part of the public API. Names start with bs__.
 */
#ifndef BS_CODEC_INTERNAL_H
#define BS_CODEC_INTERNAL_H

#include "alloc.h"
#include "bagstore.h"

#include <locale.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------ byte buffer */

/* Make room for `extra` more bytes after len; BS_ENOMEM on failure. */
int bs__bytes_reserve(bs_bytes_t *b, size_t extra);
int bs__bytes_append(bs_bytes_t *b, const void *p, size_t n);

/* ------------------------------------------------------------ base64 */

/* Characters for n bytes, without the NUL. */
size_t bs__base64_len(size_t n);
/* Standard alphabet, padded; writes bs__base64_len(n) chars and a NUL. */
void bs__base64_encode(char *dst, const uint8_t *src, size_t n);
/* Decode, ignoring ASCII whitespace; padding optional. On success *out is
 * malloc'd (NUL-terminated, *outlen excludes it) and 0 is returned; -1 for
 * bad input, BS_ENOMEM when allocation fails. */
int bs__base64_decode(uint8_t **out, size_t *outlen, const char *src, size_t n);
/* A malloc'd, NUL-terminated encoding of n bytes (*len its length), or NULL. */
char *bs__base64_dup(const uint8_t *src, size_t n, size_t *len);
/* Decode base64 text into a BS_BIN value: 0, -1 for bad input (nothing set),
 * or BS_ENOMEM. */
int bs__base64_value(bs_value_t *out, const char *src, size_t n);

/* A binary's subtype from 1 or 2 hex digits (checked by the caller), for
 * bytes of length len: 16 bytes of subtype 4 (UUID) are bagstore's uuid,
 * subtype 0 (id.c). */
uint8_t bs__subtype(const char *hex, size_t n, size_t len);

/* ------------------------------------------------------------ text */

/* Strict UTF-8: no overlongs, surrogates or code points past U+10FFFF. */
bool bs__utf8_valid(const char *s, size_t n);
/* Printable, bounded rendering of s for messages (C-style escapes, "..."
 * when cut). Always NUL-terminates buf; returns buf. */
char *bs__quote(char *buf, size_t size, const char *s, size_t n);
/* "nil", "bool", "int", ... */
const char *bs__type_name(bs_type_t t);

/* ------------------------------------------------------------ ids */

/* bs_id_parse without the error message: 0 or -1. */
int bs__id_parse_n(bs_id_t *out, const char *s, size_t n);
/* What a malformed id should have been, for every codec's message. */
#define BS__ID_FORMS "expected 32 hex digits or the dashed UUID form"
/* The dashed form of 16 bytes (a BS_BIN's ptr) + NUL into buf[37]. */
void bs__dashed(char buf[37], const void *bytes16);

/* ------------------------------------------------------------ maps */

/*
 * A hash index over a map's keys, used by decoders to reject duplicate keys
 * in linear time. Small maps are checked by scanning; the table is built
 * once a map grows past a few keys.
 */
typedef struct {
	uint32_t *slots; /* index+1 into map items, 0 = empty */
	size_t mask;     /* slots - 1; 0 when no table */
} bs__keyset_t;

void bs__keyset_free(bs__keyset_t *ks);
/* Reserve room for n items in a MessagePack map value (cap only; not the
 * bucket map, whose names are bs__map_*). */
int bs__value_map_reserve(bs_value_t *map, size_t n);
/* Append key (malloc'd, NUL-terminated, ownership passes on success) and
 * *val (left NIL on success). Returns 0, 1 when the key is already present
 * (nothing is taken), or BS_ENOMEM (nothing is taken). */
int bs__map_append_unique(bs_value_t *map, bs__keyset_t *ks, char *key, size_t klen, bs_value_t *val);

/* ------------------------------------------------------------ msgpack */

/* The one MessagePack ext type bagstore writes: bytes whose subtype is not
 * 0, as ext 0 holding the subtype's byte, then the bytes (a subtype 0
 * binary is MessagePack's bin). */
#define BS__EXT_BINARY 0

/* Append v's MessagePack to out (which may already hold bytes). */
int bs__msgpack_append(bs_bytes_t *out, const bs_value_t *v);

/* Copy of n bytes plus a NUL, or NULL. */
char *bs__memdup0(const void *p, size_t n);

/* The value of one hex digit, or -1 (id.c). */
int bs__hexval(int c);

/* ------------------------------------------------------------ numbers */

/* The C locale (numbers are read and written in it whatever the program's),
 * or (locale_t)0 when it cannot be made (value.c). */
locale_t bs__c_locale(void);
/* strtod in the C locale. */
double bs__strtod_c(const char *s, char **end);
/* "%.*g" of finite d with the fewest digits (15..17) that read back as d,
 * in the C locale, into buf[40]; returns the digits used. */
int bs__float_format(char buf[40], double d);
/* v's decimal digits written backwards to end there (end[-1] the last),
 * printf's "%llu" without printf: the first digit. Room for 20. */
char *bs__uint_text(char *end, unsigned long long v);
/* "%.15g" of d into buf[40] without printf when d is the double nearest a
 * decimal of at most 15 digits from 1e-4 to 1e15 (so "%.15g" writes that
 * decimal, and it reads back as d): its length; else 0, buf undefined. */
int bs__float_short(char buf[40], double d);
/* YAML 1.2 core schema words (also used by the configuration):
 * null is "", ~, null, Null, NULL; bool 1 true, 0 false, -1 neither. */
bool bs__yaml_null(const char *s, size_t n);
int bs__yaml_bool(const char *s, size_t n);

/* An integer given as sign and magnitude: INT, or UINT above INT64_MAX;
 * -1 when it fits neither (value.c). */
int bs__value_signed(bs_value_t *out, bool neg, uint64_t u);

/* bs_json_encode through jansson's tree (json.c): the pretty form, and
 * the reference test_codec compares the compact writer with. */
int bs__json_encode_jansson(char **out, const bs_value_t *v, int flags);
/* bs_json_decode through jansson's tree (json.c): the reference the reader
 * (json_read.c) is tested against. */
int bs__json_decode_jansson(bs_value_t *out, const char *text, size_t len, const char *where);
/* The reader refused text with the message refusal where the reference
 * takes it, for one of the reference's two known misses: a number of 64
 * characters or more that underflows (jansson stores 0), or a NUL byte
 * right after a number or a true, false or null (jansson drops it). The
 * only differences test_codec and fuzz_jsonl allow. */
bool bs__json_jansson_misses(const char *text, size_t len, const char *refusal);
/* Extended JSON's one-key objects ("$uuid", "$binary", "$numberDouble",
 * "$numberDecimal", json.c): the index of a key among them or -1; and the
 * value the object stands for, read from arg, the value its key holds: 0,
 * -1 with why in msg, or BS_ENOMEM. */
int bs__json_special_index(const char *key, size_t klen);
int bs__json_special(int which, bs_value_t *out, const bs_value_t *arg, char *msg, size_t size);

#endif
