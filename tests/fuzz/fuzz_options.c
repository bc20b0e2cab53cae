/* libFuzzer target: TCP option parsing. The first byte says whether the options were cut. */
#include <stddef.h>
#include <stdint.h>

#include "classify.h"
#include "decode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > 61)
		return 0;
	struct tcp_opts o;
	decode_tcp_options(data + 1, size - 1, data[0] & 1, &o);
	if (o.layout_len > OPT_LAYOUT_MAX || o.nsack > 4)
		__builtin_trap();
	struct syn_layout si = { 0 };
	si.len = o.layout_len < SYN_LAYOUT_MAX ? o.layout_len : SYN_LAYOUT_MAX;
	for (unsigned i = 0; i < si.len; i++)
		si.kinds[i] = o.layout[i];
	si.eol_pad = o.eol_pad;
	char buf[128];
	classify_olayout(buf, sizeof(buf), &si);
	return 0;
}
