/* libFuzzer target: link layer -> IP -> TCP decoding. The first byte picks the link type. */
#include <stddef.h>
#include <stdint.h>

#include "decode.h"

static const int dlts[] = { 0, 1, 9, 12, 14, 50, 51, 104, 108, 113, 228, 229, 239, 276 };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	struct pkt p;
	int dlt = dlts[data[0] % (sizeof(dlts) / sizeof(dlts[0]))];
	if (decode_packet(dlt, data + 1, (uint32_t)(size - 1), 0, &p) == DECODE_OK) {
		/* what decode promises: the captured payload lies inside the input */
		if (p.payload_cap > p.payload_len)
			__builtin_trap();
		if (p.payload_cap && (p.payload < data + 1 || p.payload + p.payload_cap > data + size))
			__builtin_trap();
	}
	return 0;
}
