/* The unit tests' one check macro: prints the failed condition with its line, counts both. */
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

void test_flight(void); /* tests/unit_flight.c: handshake and first-flight trackers */
void test_handshake(void); /* tests/unit_handshake.c: the handshake tracker */
void test_names(void);  /* tests/unit_names.c: Host and SNI from the client's segments */

#endif
