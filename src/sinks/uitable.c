/* What the dashboard counts, without curses: finished flows into the server IW distribution,
 * the clients' receiver classes, per-server verdicts and a ring of recent flows; the servers in
 * the order asked for, and the filter. ui.c draws what is here. */
#include "uitable.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const uint8_t why_limits[UITABLE_WHY] = { LIMIT_CWND, LIMIT_APP, LIMIT_NAGLE, LIMIT_AMBIGUOUS,
                                                  LIMIT_RWND, LIMIT_LOSS };
static const char *const why_short[UITABLE_WHY] = { "cwnd", "app", "nagle", "ambig", "rwnd", "loss" };

const char *uitable_why_name(unsigned i) { return i < UITABLE_WHY ? why_short[i] : ""; }

/* Index of a verdict in why_limits, or UITABLE_WHY. */
static unsigned why_index(uint8_t lim)
{
	unsigned i = 0;
	while (i < UITABLE_WHY && why_limits[i] != lim)
		i++;
	return i;
}

int uitable_init(struct uitable *t)
{
	memset(t, 0, sizeof(*t));
	t->servers = calloc(UITABLE_SERVERS, sizeof(*t->servers));
	t->recent = calloc(UITABLE_RECENT, sizeof(*t->recent));
	if (!t->servers || !t->recent) {
		uitable_free(t);
		return -1;
	}
	return 0;
}

void uitable_free(struct uitable *t)
{
	free(t->servers);
	free(t->recent);
	t->servers = NULL;
	t->recent = NULL;
}

static struct uitable_server *server_for(struct uitable *t, const char *key)
{
	for (unsigned i = 0; i < t->nservers; i++)
		if (!strcmp(t->servers[i].addr, key))
			return &t->servers[i];
	struct uitable_server *s;
	if (t->nservers < UITABLE_SERVERS) {
		s = &t->servers[t->nservers++];
	} else { /* full: reuse the one with the fewest flows */
		s = &t->servers[0];
		for (unsigned i = 1; i < t->nservers; i++)
			if (t->servers[i].flows < s->flows)
				s = &t->servers[i];
	}
	memset(s, 0, sizeof(*s));
	snprintf(s->addr, sizeof(s->addr), "%s", key);
	return s;
}

/* src into dst with every byte outside printable ASCII as '?': names come from the network
 * (SNI, Host, banners) and one cell per byte keeps the columns (no locale is set). */
static void printable(char *dst, size_t len, const char *src)
{
	size_t i = 0;
	for (; src[i] && i + 1 < len; i++) {
		unsigned char b = (unsigned char)src[i];
		dst[i] = b >= 0x20 && b < 0x7f ? (char)b : '?';
	}
	dst[i] = '\0';
}

/* The flow's application as the panes show it: printable, "-" without one, "MQTT?" where
 * nDPI's guess is weak (record_dpi_weak; the help screen says what the mark means). */
static void app_shown(char *dst, size_t len, const struct flow_record *r)
{
	char app[APP_PROTO_MAX + sizeof(RECORD_WEAK_MARK)];
	snprintf(app, sizeof(app), "%s%s", r->app_proto[0] ? r->app_proto : "-",
	         r->app_proto[0] && record_dpi_weak(r->dpi_method) ? RECORD_WEAK_MARK : "");
	printable(dst, len, app);
}

/* "ip:port", or "[ip]:port" for IPv6 (RFC 3986). */
/* A server as the dashboard names it: address and port, "/quic" for a QUIC server (its
 * flights count datagrams: never added to a TCP server's). */
static void addr_port(char *buf, size_t len, int ip_ver, const char *ip, int port, bool quic)
{
	snprintf(buf, len, ip_ver == 6 ? "[%s]:%d%s" : "%s:%d%s", ip, port, quic ? "/quic" : "");
}

static unsigned segs_of(int64_t v)
{
	return v == NULL64 || v < 0 ? 0 : v > UITABLE_IW_MAX ? UITABLE_IW_MAX : (unsigned)v;
}

/* A server's totals with one more flow whose first flight stopped for lim after segs. */
static void server_add(struct uitable_server *s, const struct flow_record *r, uint8_t lim,
                       unsigned segs, uint64_t seq)
{
	s->flows++;
	s->last = seq;
	if (lim == LIMIT_CWND && segs) {
		if (!s->exact || segs < s->iw_min)
			s->iw_min = segs;
		if (segs > s->iw_max)
			s->iw_max = segs;
		s->exact++;
	} else if (lim != LIMIT_LOSS && segs > s->lb) {
		s->lb = segs;
	}
	if (r->app_proto[0])
		app_shown(s->app, sizeof(s->app), r);
	if (r->server_name[0])
		printable(s->name, sizeof(s->name), r->server_name);
}

/* The flow as the recent-flows pane shows it, into the ring's next slot. */
static void recent_add(struct uitable *t, const struct flow_record *r, const char *server,
                       unsigned why)
{
	struct uitable_recent *e = &t->recent[t->recent_head];
	snprintf(e->client, sizeof(e->client), "%s", r->client_ip);
	snprintf(e->server, sizeof(e->server), "%s", server);
	app_shown(e->app, sizeof(e->app), r);
	snprintf(e->cwin, sizeof(e->cwin), "-");
	snprintf(e->swin, sizeof(e->swin), "-");
	snprintf(e->ff, sizeof(e->ff), "-");
	if (r->c.syn_win != NULL64)
		snprintf(e->cwin, sizeof(e->cwin), "%lld", (long long)r->c.syn_win);
	if (r->s.syn_win != NULL64)
		snprintf(e->swin, sizeof(e->swin), "%lld", (long long)r->s.syn_win);
	if (why < UITABLE_WHY && r->s.iw_segs != NULL64)
		snprintf(e->ff, sizeof(e->ff), "%lld %s", (long long)r->s.iw_segs, why_short[why]);
	snprintf(e->cls, sizeof(e->cls), "%s", r->s.iw_class[0] ? r->s.iw_class : "-");
	const char *crwnd = classify_rwnd_name((enum rwnd_class)r->c.rwnd_class);
	char name[SERVER_NAME_MAX];
	printable(name, sizeof(name), r->server_name);
	snprintf(e->match, sizeof(e->match), "%s %s %s %s %s %s %s %s", e->client, e->server, e->app,
	         e->ff, e->cls, name, crwnd ? crwnd : "", r->app_category);
	t->recent_head = (t->recent_head + 1) % UITABLE_RECENT;
	if (t->nrecent < UITABLE_RECENT)
		t->nrecent++;
}

void uitable_add(struct uitable *t, const struct flow_record *r)
{
	if (r->update)
		return; /* counted when its verdicts became final */
	t->flows++;
	t->seq++;
	uint8_t lim = r->s.iw_limit;
	unsigned segs = segs_of(r->s.iw_segs);
	unsigned why = why_index(lim);
	if (why < UITABLE_WHY)
		t->why[why]++;
	bool quic = r->transport == 17;
	if (lim == LIMIT_CWND && segs)
		t->iw_exact[segs]++;
	else if (why < UITABLE_WHY && lim != LIMIT_LOSS && segs && !quic) /* TCP's in segments */
		t->iw_lb[segs]++;
	if (r->c.rwnd_class > RWND_NULL && r->c.rwnd_class - 1u < UITABLE_RWND)
		t->rwnd[r->c.rwnd_class - 1]++;
	char server[UITABLE_ADDR_MAX];
	addr_port(server, sizeof(server), r->ip_ver, r->server_ip, r->server_port, quic);
	if (lim != LIMIT_UNKNOWN && lim != LIMIT_NONE)
		server_add(server_for(t, server), r, lim, segs, t->seq);
	recent_add(t, r, server, why);
}

const struct uitable_recent *uitable_recent_at(const struct uitable *t, unsigned k)
{
	return &t->recent[(t->recent_head + UITABLE_RECENT - 1 - k) % UITABLE_RECENT];
}

/* The verdict a server's flows add up to (schema/views.sql server_iw): the exact IW (or its
 * range), both numbers where another flow's lower bound contradicts an exact IW ("IW2 vs
 * >=IW3"), else the highest lower bound, else "-" (every flow lost data in its first flight:
 * no verdict). */
void uitable_server_iw(const struct uitable_server *s, char *buf, size_t len)
{
	if (s->exact && s->lb > s->iw_min && s->iw_min == s->iw_max)
		snprintf(buf, len, "IW%u vs >=IW%u", s->iw_min, s->lb);
	else if (s->exact && s->lb > s->iw_min)
		snprintf(buf, len, "IW%u-%u vs >=IW%u", s->iw_min, s->iw_max, s->lb);
	else if (s->exact && s->iw_min == s->iw_max)
		snprintf(buf, len, "IW%u", s->iw_max);
	else if (s->exact)
		snprintf(buf, len, "IW%u-%u", s->iw_min, s->iw_max);
	else if (s->lb)
		snprintf(buf, len, ">=IW%u", s->lb);
	else
		snprintf(buf, len, "-");
}

const char *uitable_sort_name(enum uitable_sort by)
{
	static const char *const names[UITABLE_SORTS] = { "flows", "IW", "recent", "name" };
	return (unsigned)by < UITABLE_SORTS ? names[by] : "";
}

bool uitable_matches(const char *filter, const char *text)
{
	size_t n = filter ? strlen(filter) : 0;
	if (!n)
		return true;
	for (; *text; text++) {
		size_t i = 0;
		while (i < n && text[i] && tolower((unsigned char)text[i]) == tolower((unsigned char)filter[i]))
			i++;
		if (i == n)
			return true;
	}
	return false;
}

/* -1, 0 or 1 as a goes after, with or before b: the larger first. */
static int larger_first(uint64_t a, uint64_t b) { return b > a ? 1 : b < a ? -1 : 0; }

/* The IW order: by the number the server's verdict shows (an exact IW's largest, else the
 * highest lower bound), the largest first; of the same number, an exact IW before a lower
 * bound; servers without a verdict ("-") last. */
static int by_iw(const struct uitable_server *x, const struct uitable_server *y)
{
	uint32_t nx = x->exact ? x->iw_max : x->lb, ny = y->exact ? y->iw_max : y->lb;
	int d = larger_first(nx, ny);
	return d ? d : larger_first(x->exact != 0, y->exact != 0);
}

static int tie_by_addr(const struct uitable_server *x, const struct uitable_server *y, int d)
{
	return d ? d : strcmp(x->addr, y->addr);
}

#define SERVERS(a, b) \
	const struct uitable_server *x = *(const struct uitable_server *const *)(a), \
	                            *y = *(const struct uitable_server *const *)(b)

static int cmp_flows(const void *a, const void *b)
{
	SERVERS(a, b);
	return tie_by_addr(x, y, larger_first(x->flows, y->flows));
}

static int cmp_iw(const void *a, const void *b)
{
	SERVERS(a, b);
	return tie_by_addr(x, y, by_iw(x, y));
}

static int cmp_recent(const void *a, const void *b)
{
	SERVERS(a, b);
	return tie_by_addr(x, y, larger_first(x->last, y->last));
}

static int cmp_name(const void *a, const void *b)
{
	SERVERS(a, b);
	return tie_by_addr(x, y, strcmp(x->name[0] ? x->name : x->addr, y->name[0] ? y->name : y->addr));
}

unsigned uitable_servers(const struct uitable *t, const char *filter, enum uitable_sort by,
                         const struct uitable_server **list)
{
	static int (*const cmp[UITABLE_SORTS])(const void *, const void *) = {
		[UITABLE_BY_FLOWS] = cmp_flows, [UITABLE_BY_IW] = cmp_iw,
		[UITABLE_BY_RECENT] = cmp_recent, [UITABLE_BY_NAME] = cmp_name,
	};
	unsigned n = 0;
	for (unsigned i = 0; i < t->nservers; i++) {
		const struct uitable_server *s = &t->servers[i];
		char iw[24], text[400];
		uitable_server_iw(s, iw, sizeof(iw));
		snprintf(text, sizeof(text), "%s %s %s %s", s->addr, s->app, s->name, iw);
		if (uitable_matches(filter, text))
			list[n++] = s;
	}
	qsort(list, n, sizeof(list[0]), cmp[(unsigned)by < UITABLE_SORTS ? by : UITABLE_BY_FLOWS]);
	return n;
}
