/* The unit tests' checks: CHECK prints the failed condition with its line; CHECK_EQ_INT and its
 * kin print the two values compared as well. Both count checks and failures. */
#ifndef IWSCOPE_UNIT_H
#define IWSCOPE_UNIT_H

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

void test_flight(void); /* tests/unit_flight.c: handshake and first-flight trackers */
void test_handshake(void); /* tests/unit_handshake.c: the handshake tracker */
void test_names(void);  /* tests/unit_names.c: Host and SNI from the client's segments */
void test_quic(void);   /* tests/unit_quic.c: QUIC headers, Initial keys, opening, frames */

#endif
