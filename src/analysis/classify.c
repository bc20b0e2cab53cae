/* Labels (docs/METHOD.md): receiver classes, IW classes and standards, TTLs, option layouts. */
#include "classify.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "handshake.h"

unsigned classify_ittl(unsigned ttl)
{
	static const unsigned initial[] = { 32, 64, 128, 255 };
	for (size_t i = 0; i < sizeof(initial) / sizeof(initial[0]); i++)
		if (ttl <= initial[i])
			return initial[i];
	return 255;
}

/* Known SYN windows that are not MSS multiples (docs/METHOD.md table). */
static const struct {
	unsigned win;
	enum rwnd_class label;
} fixed_windows[] = {
	{ 64240, RWND_64KB },  /* 44 x 1460: Linux >= 4.20, Windows 10+, Android */
	{ 65160, RWND_64KB },  /* 45 x 1448 */
	{ 65535, RWND_64KB },  /* macOS, BSDs, older Windows */
	{ 8192, RWND_8192 },   /* Windows 7/8 */
	{ 16384, RWND_16384 }, /* OpenBSD, older Windows */
	/* Linux's MSS multiples at its usual MSS (1460, or 1448 with timestamps), whatever MSS
	 * the SYN carries: a router on the way (PPPoE, a VPN) clamps the MSS, not the window */
	{ 5840, RWND_6KB },
	{ 5792, RWND_6KB },
	{ 14600, RWND_10MSS },
	{ 14480, RWND_10MSS },
	{ 29200, RWND_20MSS },
	{ 28960, RWND_20MSS },
};

/* MSS multiples Linux used as its initial receive window, by kernel era. */
static const struct {
	unsigned mult;
	enum rwnd_class label;
} mss_multiples[] = {
	{ 4, RWND_6KB },    /* Linux <= 2.6.37 (5840, 5792) */
	{ 10, RWND_10MSS }, /* Linux 2.6.38 - 3.10 (14600, 14480) */
	{ 20, RWND_20MSS }, /* Linux 3.11 - 4.19 (29200, 28960) */
};

enum rwnd_class classify_rwnd_class(unsigned win, unsigned mss)
{
	for (size_t i = 0; i < sizeof(fixed_windows) / sizeof(fixed_windows[0]); i++)
		if (win == fixed_windows[i].win)
			return fixed_windows[i].label;
	if (mss) {
		/* Linux counts the window in segments of MSS less the 12 timestamp bytes when it
		 * expects timestamps, so 4 x 1448 = 5792 is as much "6KB" as 4 x 1460 = 5840. */
		unsigned sizes[] = { mss, mss > 12 ? mss - 12 : 0 };
		for (size_t i = 0; i < sizeof(mss_multiples) / sizeof(mss_multiples[0]); i++)
			for (size_t k = 0; k < 2; k++)
				if (sizes[k] && win == mss_multiples[i].mult * sizes[k])
					return mss_multiples[i].label;
		/* Linux >= 4.20 offers 64KB rounded down to whole segments: 64240 = 44 x 1460,
		 * 65160 = 45 x 1448, 64800 = 45 x 1440 (IPv6) */
		for (size_t k = 0; k < 2; k++)
			if (sizes[k] && win <= 65535 && win + sizes[k] > 65535 && win % sizes[k] == 0)
				return RWND_64KB;
	}
	/* a window ten segments would not fit in: an IW10 sender is held back by it */
	return win < 10u * (mss ? mss : 1460u) ? RWND_SMALL : RWND_OTHER;
}

const char *classify_rwnd_name(enum rwnd_class c)
{
	static const char *const names[] = { NULL, "6KB", "10MSS", "20MSS", "64KB", "8192", "16384",
	                                     "other", "small" };
	_Static_assert(sizeof(names) / sizeof(names[0]) == RWND_CLASSES, "a name per receiver class");
	return (unsigned)c < sizeof(names) / sizeof(names[0]) ? names[c] : NULL;
}

const char *classify_rwnd(unsigned win, unsigned mss)
{
	return classify_rwnd_name(classify_rwnd_class(win, mss));
}

/* A standard's byte limit: min(k * smss, max(2 * smss, floor)) (RFC 3390: 4, 4380 bytes;
 * RFC 6928: 10, 14600 bytes). */
static unsigned std_limit(unsigned k, unsigned smss, unsigned floor)
{
	unsigned b = 2 * smss > floor ? 2 * smss : floor;
	return b < k * smss ? b : k * smss;
}

/* RFC 3390 section 1: min(4*MSS, max(2*MSS, 4380 bytes)), in whole segments. */
unsigned classify_iw_rfc3390(unsigned smss)
{
	return smss ? std_limit(4, smss, 4380) / smss : 0;
}

/* RFC 6928 section 2: min(10*MSS, max(2*MSS, 14600)), in whole segments. */
unsigned classify_iw_rfc6928(unsigned smss)
{
	return smss ? std_limit(10, smss, 14600) / smss : 0;
}

/* Whether a flight of bytes fills a limit: within it, and one more segment would not fit. */
static bool fills(unsigned bytes, unsigned limit, unsigned smss)
{
	return bytes <= limit && bytes + smss > limit;
}

/* The standards' limits are in bytes, so a flight matches one when its bytes fill that limit:
 * 4 segments of 1368 bytes that carry 4325 fill RFC 3390's 4380 as well as 3 of 1460 do. The
 * newest standard a flight fills; RFC 2581 for 1-2 segments that fill neither. */
enum iw_std classify_iw_std_of(unsigned segs, unsigned bytes, unsigned smss)
{
	if (!segs)
		return STD_CUSTOM;
	if (smss && segs <= 10 && fills(bytes, std_limit(10, smss, 14600), smss))
		return STD_RFC6928;
	if (smss && segs <= 4 && fills(bytes, std_limit(4, smss, 4380), smss))
		return STD_RFC3390;
	if (segs <= 2)
		return STD_RFC2581; /* RFC 2581 3.1: IW of at most 2 segments */
	return STD_CUSTOM;
}

const char *classify_iw_std_name(enum iw_std s)
{
	static const char *const names[] = { NULL, "rfc2581", "rfc3390", "rfc6928", "custom" };
	return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : NULL;
}

const char *classify_iw_std(unsigned segs, unsigned bytes, unsigned smss)
{
	return classify_iw_std_name(classify_iw_std_of(segs, bytes, smss));
}

/* Appends the decimal digits of v at buf + *n (room permitting, *n < len). */
static void put_uint(char *buf, size_t len, size_t *n, unsigned v)
{
	char digits[10];
	size_t k = 0;
	do {
		digits[k++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (k && *n + 1 < len)
		buf[(*n)++] = digits[--k];
	buf[*n] = '\0';
}

/* Appends s at buf + *n (room permitting, *n < len). */
static void put_str(char *buf, size_t len, size_t *n, const char *s)
{
	while (*s && *n + 1 < len)
		buf[(*n)++] = *s++;
	buf[*n] = '\0';
}

/* Written by hand, not with snprintf: one call per flow and side, on the reading thread. */
void classify_iw_class(char *buf, size_t len, unsigned segs, int exact)
{
	size_t n = 0;
	if (!len)
		return;
	buf[0] = '\0';
	put_str(buf, len, &n, exact ? "IW" : ">=IW");
	put_uint(buf, len, &n, segs);
}

enum iw_std classify_flight(enum ff_limit limit, unsigned segs, unsigned bytes, unsigned smss,
                            char *buf, size_t len)
{
	if (len)
		buf[0] = '\0';
	switch (limit) {
	case LIMIT_CWND:
		classify_iw_class(buf, len, segs, 1);
		return classify_iw_std_of(segs, bytes, smss);
	case LIMIT_APP:
	case LIMIT_RWND:
	case LIMIT_NAGLE:
	case LIMIT_AMBIGUOUS:
	case LIMIT_AMPLIFICATION:
		classify_iw_class(buf, len, segs, 0);
		return STD_NULL;
	default:
		return STD_NULL;
	}
}

/* p0f's names for option kinds; others are "?N". */
static const char *opt_name(uint8_t kind)
{
	switch (kind) {
	case 1: return "nop";
	case 2: return "mss";
	case 3: return "ws";
	case 4: return "sok";
	case 5: return "sack";
	case 8: return "ts";
	case 34: return "tfo";
	default: return NULL;
	}
}

void classify_olayout(char *buf, size_t len, const struct syn_layout *l)
{
	size_t n = 0;
	if (!len)
		return;
	buf[0] = '\0';
	for (unsigned i = 0; i < l->len; i++) {
		/* an option that does not fit whole is left out, as are those after it */
		char item[16];
		size_t k = 0;
		if (i)
			put_str(item, sizeof(item), &k, ",");
		if (l->kinds[i] == 0) {
			put_str(item, sizeof(item), &k, "eol+");
			put_uint(item, sizeof(item), &k, l->eol_pad);
		} else if (opt_name(l->kinds[i])) {
			put_str(item, sizeof(item), &k, opt_name(l->kinds[i]));
		} else {
			put_str(item, sizeof(item), &k, "?");
			put_uint(item, sizeof(item), &k, l->kinds[i]);
		}
		if (n + k + 1 > len)
			break;
		put_str(buf, len, &n, item);
	}
}

const char *classify_limit_name(enum ff_limit l)
{
	switch (l) {
	case LIMIT_NONE: return "none";
	case LIMIT_CWND: return "cwnd";
	case LIMIT_RWND: return "rwnd";
	case LIMIT_APP: return "app";
	case LIMIT_LOSS: return "loss";
	case LIMIT_NAGLE: return "nagle";
	case LIMIT_AMBIGUOUS: return "ambiguous";
	case LIMIT_AMPLIFICATION: return "amplification";
	default: return NULL;
	}
}

const char *classify_rule_name(enum ff_rule r)
{
	switch (r) {
	case RULE_TSECR: return "tsecr";
	case RULE_TIMING: return "timing";
	case RULE_ECHO: return "echo";
	default: return NULL;
	}
}

const char *classify_end_rule_name(enum ff_end e)
{
	switch (e) {
	case FF_END_NONE: return "none";
	case FF_END_TSECR: return "tsecr";
	case FF_END_TIMING: return "timing";
	case FF_END_PAUSE: return "pause";
	default: return NULL;
	}
}

const char *classify_next_name(enum ff_next n)
{
	switch (n) {
	case FF_NEXT_ACK: return "ack";
	case FF_NEXT_TIMER: return "timer";
	case FF_NEXT_REQUEST: return "request";
	case FF_NEXT_LATE: return "late";
	case FF_NEXT_BURST: return "burst";
	case FF_NEXT_PACED: return "paced";
	default: return NULL;
	}
}

const char *classify_handshake_name(enum handshake_kind k)
{
	switch (k) {
	case HS_SYN_ONLY: return "syn_only";
	case HS_REFUSED: return "refused";
	case HS_NO_ACK: return "no_ack";
	case HS_COMPLETE: return "complete";
	case HS_NO_SYN: return "no_syn";
	case HS_NO_SYNACK: return "no_synack";
	case HS_SIMULTANEOUS: return "simultaneous";
	default: return "none";
	}
}

const char *classify_end_name(enum end_reason r)
{
	switch (r) {
	case END_FIN: return "fin";
	case END_RST: return "rst";
	case END_IDLE: return "idle";
	case END_EVICTED: return "evicted";
	case END_REUSE: return "reuse";
	case END_CAPTURE: return "capture_end";
	default: return NULL;
	}
}
