/* classify: labels from measured numbers (docs/METHOD.md "Labels"). Pure functions. */
#ifndef IWSCOPE_CLASSIFY_H
#define IWSCOPE_CLASSIFY_H

#include <stddef.h>
#include <stdint.h>

#include "flow.h"

/* Initial TTL implied by an observed TTL: the next of 32, 64, 128, 255 at or above it. */
unsigned classify_ittl(unsigned ttl);

/* Receiver classes (docs/METHOD.md "Receivers"); RWND_NULL: no SYN seen. */
enum rwnd_class { RWND_NULL = 0, RWND_6KB, RWND_10MSS, RWND_20MSS, RWND_64KB, RWND_8192,
                  RWND_16384, RWND_OTHER,
                  RWND_SMALL, /* no known window, and too small for ten segments (an IW10) */
                  RWND_CLASSES /* how many, RWND_NULL included: not a class */ };

/* Receiver class from a SYN's unscaled window and MSS (0 = no MSS); its name: "6KB", "10MSS",
 * "20MSS", "64KB", "8192", "16384", "small" (any other window below ten segments of the MSS,
 * 14600 bytes without one: too small for an IW10) or "other" (any other, larger) (static
 * strings; NULL for RWND_NULL). */
enum rwnd_class classify_rwnd_class(unsigned win, unsigned mss);
const char *classify_rwnd_name(enum rwnd_class c);
const char *classify_rwnd(unsigned win, unsigned mss); /* the two in one */

/* Which standard an exact IW matches; STD_NULL: not an exact IW. */
enum iw_std { STD_NULL = 0, STD_RFC2581, STD_RFC3390, STD_RFC6928, STD_CUSTOM };

/* The standard an exact IW of segs segments and bytes bytes matches at smss, and its name:
 * "rfc6928", "rfc3390", "rfc2581" or "custom" (static strings; NULL for STD_NULL). The
 * standards' limits are in bytes: a flight matches the newest one whose limit it fills. */
enum iw_std classify_iw_std_of(unsigned segs, unsigned bytes, unsigned smss);
const char *classify_iw_std_name(enum iw_std s);
const char *classify_iw_std(unsigned segs, unsigned bytes, unsigned smss); /* the two in one */

/* Segments RFC 3390 / RFC 6928 allow at smss. */
unsigned classify_iw_rfc3390(unsigned smss);
unsigned classify_iw_rfc6928(unsigned smss);

/* Writes "IWn" (exact) or ">=IWn" (lower bound) into buf. */
void classify_iw_class(char *buf, size_t len, unsigned segs, int exact);

/* A first flight's labels from what limited it: the class into buf ("IWn" for cwnd, exact;
 * ">=IWn" for app, rwnd, nagle and ambiguous, a lower bound; "" otherwise) and, returned, the
 * standard an exact IW matches (STD_NULL for any other limit). */
enum iw_std classify_flight(enum ff_limit limit, unsigned segs, unsigned bytes, unsigned smss,
                            char *buf, size_t len);

/* p0f-style option layout ("mss,sok,ts,nop,ws") of a SYN into buf. */
void classify_olayout(char *buf, size_t len, const struct syn_layout *l);

/* Names of the verdict and its evidence as stored (schema/sqlite.sql); static strings, NULL
 * where the column is NULL. */
const char *classify_limit_name(enum ff_limit l);
const char *classify_rule_name(enum ff_rule r);
const char *classify_end_rule_name(enum ff_end e); /* tsecr | timing | pause | none */
const char *classify_next_name(enum ff_next n);    /* ack | timer | request | late | burst | paced | NULL */
const char *classify_handshake_name(enum handshake_kind k);
const char *classify_end_name(enum end_reason r);

#endif
