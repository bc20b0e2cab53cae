/* json: the one JSON string escaper (report --format json, the JSON lines of -v --json) and
 * the checks that keep JSON output valid whatever text comes from the wire. */
#ifndef IWSCOPE_JSON_H
#define IWSCOPE_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Writes s as a JSON string (RFC 8259), quotes included: '"' and '\' escaped, every other
 * control character (U+0000..U+001F, U+007F) as \u00XX, and each byte that is not part of
 * valid UTF-8 as \ufffd (the replacement character), so the output is always valid UTF-8.
 * NULL is written as null. */
void json_string(FILE *out, const char *s);

/* Whether s is a number as JSON spells it (-?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?):
 * "nan", "Infinity", "0x1F", " 12", "1." are not. */
bool json_number_ok(const char *s);

/* The length in bytes of the valid UTF-8 character at s (1..4), and its code point in *cp;
 * 0 when the bytes at s are not valid UTF-8 (overlong, surrogate, cut short, > U+10FFFF).
 * s[0] must not be '\0'. */
size_t json_utf8_char(const char *s, unsigned *cp);

#endif
