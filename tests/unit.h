/* The unit tests' checks: CHECK prints the failed condition with its line; CHECK_EQ_INT and its
 * kin, CHECK_EQ_STR and CHECK_EQ_MEM print the two values compared as well. All count checks
 * and failures. */
#ifndef IWSCOPE_UNIT_H
#define IWSCOPE_UNIT_H

#include <stddef.h>
#include <stdio.h>

extern int unit_checks, unit_failures;

#define CHECK(cond)                                                              \
	do {                                                                         \
		unit_checks++;                                                           \
		if (!(cond)) {                                                           \
			unit_failures++;                                                     \
			printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);              \
		}                                                                        \
	} while (0)

/* A comparison of two integers (any width or signedness up to 64 bits, enums too) that prints
 * both values when it fails: CHECK_EQ_INT(v.segs, 10) says "got 9, want 10". Each side is
 * evaluated once. */
#define CHECK_OP_INT(a, op, b)                                                   \
	do {                                                                         \
		long long a_ = (long long)(a), b_ = (long long)(b);                      \
		unit_checks++;                                                           \
		if (!(a_ op b_)) {                                                       \
			unit_failures++;                                                     \
			printf("FAIL %s:%d: %s %s %s: got %lld, want %s %lld\n", __FILE__,  \
			       __LINE__, #a, #op, #b, a_, #op, b_);                          \
		}                                                                        \
	} while (0)
#define CHECK_EQ_INT(a, b) CHECK_OP_INT(a, ==, b)
#define CHECK_NE_INT(a, b) CHECK_OP_INT(a, !=, b)
#define CHECK_GT_INT(a, b) CHECK_OP_INT(a, >, b)
#define CHECK_LE_INT(a, b) CHECK_OP_INT(a, <=, b)

/* Two strings equal, NULL-safe (NULL equals only NULL): CHECK_EQ_STR(out, "tls.example") says
 * got "x.example", want "tls.example" (bytes outside printable ASCII as \xNN). Each side is
 * evaluated once. */
#define CHECK_EQ_STR(a, b) unit_eq_str(__FILE__, __LINE__, #a, #b, (a), (b))

/* n bytes at a and b equal: a failure says the first offset that differs and the bytes of
 * each from there, in hex. */
#define CHECK_EQ_MEM(a, b, n) unit_eq_mem(__FILE__, __LINE__, #a, #b, (a), (b), (n))

/* What the two macros above call (tests/unit.c). */
void unit_eq_str(const char *file, int line, const char *a_text, const char *b_text,
                 const char *a, const char *b);
void unit_eq_mem(const char *file, int line, const char *a_text, const char *b_text,
                 const void *a, const void *b, size_t n);

void test_flight(void); /* tests/unit_flight.c: handshake and first-flight trackers */
void test_handshake(void); /* tests/unit_handshake.c: the handshake tracker */
void test_names(void);  /* tests/unit_names.c: Host and SNI from the client's segments */
void test_quic(void);   /* tests/unit_quic.c: QUIC headers, Initial keys, opening, frames */

#endif
