/*
 * fmt.h - how both rooms of the program (the command line, tui/cli/, and
 * the console, tui/console/ and views/) write numbers, sizes, times and
 * names for people: one implementation of each, so that a value reads the
 * same wherever it is shown. It calls neither room.
 *
 * Each fmt_* function writes into the caller's buffer (always
 * NUL-terminated, cut to fit) and returns it, so that it can be an
 * argument of printf.
 */
#ifndef BS_FMT_H
#define BS_FMT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bagstore.h"

/* Wall-clock unix microseconds: what snapshots and notices are stamped
 * with, and what fmt_age measures from (the shards' times are wall-clock
 * too). */
int64_t now_us(void);

/* 1,204,331 (thousands separated by commas). */
char *fmt_count(char *buf, size_t n, int64_t v);
/* part of whole as a percent: "37%"; never 0% or 100% unless it is:
 * "<1%" and ">99%" where rounding would say so; "-" when whole <= 0. */
char *fmt_share(char *buf, size_t n, int64_t part, int64_t whole);
/* 512 B, 12.3 MiB (powers of 1024, up to TiB); "-" when v < 0 (unknown). */
char *fmt_bytes(char *buf, size_t n, int64_t v);
/* ISO-8601 in UTC, to the second: 2024-05-01T12:00:00Z; "-" when us <= 0. */
char *fmt_iso_utc(char *buf, size_t n, int64_t us);
/* The local time for display: 2024-05-01 12:00:00; "-" when us <= 0. */
char *fmt_time(char *buf, size_t n, int64_t us);
/* A duration: 4.2s, 37s, 12m05s, 3h07m, 2d04h; "-" when s < 0 or NaN. */
char *fmt_secs(char *buf, size_t n, double s);
/* A statement's time: 0.41ms, 12.3ms, 1.24s; "-" when s < 0 or NaN. */
char *fmt_ms(char *buf, size_t n, double s);
/* How long ago then_us was (fmt_secs + " ago"); "never" when then_us <= 0. */
char *fmt_age(char *buf, size_t n, int64_t then_us);
/* Ascending bucket numbers as ranges, "0-9,12", cut with ",..." to fit. */
char *fmt_ranges(char *buf, size_t n, const int *b, int nb);
/* A name quoted for a message: 'name'. */
char *fmt_quote(char *buf, size_t n, const char *s);
/* A connection's TLS in a word or two: "off", "PLAINTEXT" (off while
 * another shard is encrypted: mixed is set), or the protocol and what was
 * verified: "TLSv1.3 verified" (chain and host name), "TLSv1.3 ca-verified"
 * (chain only), "TLSv1.3 unverified" (encrypted, nothing checked). */
char *fmt_tls(char *buf, size_t n, const bs_tls_state_t *t, bool mixed);

#endif
