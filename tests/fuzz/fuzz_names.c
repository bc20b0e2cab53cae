/* libFuzzer target: the server-name search (names.c). The input is one client's segments: a
 * first byte (bit 0: the SYN was seen), then records of a 16-bit signed sequence offset, a
 * 16-bit length and that many payload bytes, fed in order to one flow's search with sequence
 * numbers near the 32-bit wrap; the whole input also goes to both parsers as one message. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "names.h"

static void check_name(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n >= NAMES_MAX)
		__builtin_trap();
	for (size_t i = 0; i < n; i++)
		if (s[i] < 0x21 || s[i] > 0x7e || (s[i] >= 'A' && s[i] <= 'Z'))
			__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char out[NAMES_MAX];
	if (names_http_host(data, size, out) == NAMES_FOUND)
		check_name(out);
	if (names_tls_sni(data, size, out) == NAMES_FOUND)
		check_name(out);
	if (size < 1)
		return 0;
	const uint32_t base = 0xffffff00u;
	struct names_pool pool = { 0 };
	struct name_hunt h = { 0 };
	if (data[0] & 1)
		names_start(&h, base);
	for (size_t i = 1; i + 4 <= size;) {
		int16_t off = (int16_t)(data[i] << 8 | data[i + 1]);
		size_t len = (size_t)(data[i + 2] << 8 | data[i + 3]);
		i += 4;
		if (len > size - i)
			len = size - i;
		names_segment(&h, &pool, data + i, (uint32_t)len, base + (uint32_t)(int32_t)off);
		i += len;
		if (pool.live > 1 || h.segs > NAMES_HUNT_SEGS)
			__builtin_trap();
	}
	if (names_name(&h))
		check_name(names_name(&h));
	names_free(&h, &pool);
	if (pool.live != 0)
		__builtin_trap();
	return 0;
}
