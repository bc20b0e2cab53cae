/* JSON output that stays valid JSON for any input text (RFC 8259). */
#include "json.h"

size_t json_utf8_char(const char *s, unsigned *cp)
{
	const unsigned char *u = (const unsigned char *)s;
	unsigned c = u[0], lo = 0x80, hi = 0xbf;
	size_t n;
	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
		c &= 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		if (c == 0xe0)
			lo = 0xa0; /* overlong below U+0800 */
		else if (c == 0xed)
			hi = 0x9f; /* U+D800..U+DFFF are surrogates, not characters */
		c &= 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		if (c == 0xf0)
			lo = 0x90; /* overlong below U+10000 */
		else if (c == 0xf4)
			hi = 0x8f; /* beyond U+10FFFF */
		c &= 0x07;
	} else {
		return 0; /* a continuation byte, C0, C1 or F5..FF */
	}
	for (size_t i = 1; i < n; i++) {
		unsigned b = u[i]; /* a '\0' fails the range check: never read past the string */
		if (b < (i == 1 ? lo : 0x80) || b > (i == 1 ? hi : 0xbf))
			return 0;
		c = c << 6 | (b & 0x3f);
	}
	*cp = c;
	return n;
}

void json_string(FILE *out, const char *s)
{
	if (!s) {
		fputs("null", out);
		return;
	}
	putc('"', out);
	while (*s) {
		unsigned char ch = (unsigned char)*s;
		unsigned cp;
		size_t n;
		if (ch == '"' || ch == '\\') {
			putc('\\', out);
			putc(ch, out);
			s++;
		} else if (ch < 0x20 || ch == 0x7f) {
			fprintf(out, "\\u%04x", ch);
			s++;
		} else if ((n = json_utf8_char(s, &cp)) == 0) {
			fputs("\\ufffd", out);
			s++;
		} else {
			fwrite(s, 1, n, out);
			s += n;
		}
	}
	putc('"', out);
}

static const char *digits(const char *s, bool *any)
{
	*any = *s >= '0' && *s <= '9';
	while (*s >= '0' && *s <= '9')
		s++;
	return s;
}

bool json_number_ok(const char *s)
{
	bool any;
	if (!s)
		return false;
	if (*s == '-')
		s++;
	if (*s == '0')
		s++;
	else if (s = digits(s, &any), !any)
		return false;
	if (*s == '.' && (s = digits(s + 1, &any), !any))
		return false;
	if (*s == 'e' || *s == 'E') {
		s++;
		if (*s == '+' || *s == '-')
			s++;
		if (s = digits(s, &any), !any)
			return false;
	}
	return *s == '\0';
}
