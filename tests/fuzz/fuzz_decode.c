/* libFuzzer target: link layer -> IP -> TCP decoding. The first byte picks the link type: its
 * index in decode_link_types (modulo their count; tests/fuzz/run.py seeds by the same index). */
#include <stddef.h>
#include <stdint.h>

#include "decode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	static size_t nlinks; /* counted on the first call */
	if (!nlinks)
		while (decode_link_types[nlinks].name)
			nlinks++;
	struct pkt p;
	int dlt = decode_link_types[data[0] % nlinks].dlt;
	if (decode_packet(dlt, data + 1, (uint32_t)(size - 1), 0, &p) == DECODE_OK) {
		/* what decode promises: the captured payload lies inside the input */
		if (p.payload_cap > p.payload_len)
			__builtin_trap();
		if (p.payload_cap && (p.payload < data + 1 || p.payload + p.payload_cap > data + size))
			__builtin_trap();
	}
	return 0;
}
