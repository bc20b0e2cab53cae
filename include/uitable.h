/* uitable: what the dashboard shows, without curses: the server IW and receiver-class totals,
 * per-server verdicts, the recent flows, the servers' order and the filter. ui.c draws them. */
#ifndef IWSCOPE_UITABLE_H
#define IWSCOPE_UITABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "classify.h"
#include "record.h"

#define UITABLE_IW_MAX 101        /* IW1..IW100, then one bucket for more */
#define UITABLE_SERVERS 4096
#define UITABLE_RECENT 1000
#define UITABLE_ADDR_MAX 56       /* "[IPv6]:port/quic" */
#define UITABLE_RWND (RWND_CLASSES - 1) /* receiver classes with a name, from RWND_6KB */

/* Server verdicts counted apart (why_limits in uitable.c): nagle and ambiguous are lower
 * bounds like app, for other reasons (docs/METHOD.md "Why the flight stopped"). */
#define UITABLE_WHY 6
/* The verdict's short name, fit for an 80-column pane: "cwnd", "app", "nagle", "ambig",
 * "rwnd", "loss" (i < UITABLE_WHY). */
const char *uitable_why_name(unsigned i);

struct uitable_server {
	char addr[UITABLE_ADDR_MAX]; /* "ip:port" or "[ip]:port": the key */
	char app[APP_PROTO_MAX], name[SERVER_NAME_MAX];
	uint32_t flows, exact, iw_min, iw_max, lb;
	uint64_t last;               /* order of arrival */
};

/* One finished flow as the recent-flows pane shows it, a text per column. */
struct uitable_recent {
	char client[46], server[UITABLE_ADDR_MAX], app[APP_PROTO_MAX];
	char cwin[24], swin[24], ff[32], cls[IW_CLASS_MAX];
	char match[512];             /* text the filter searches */
};

struct uitable {
	uint64_t iw_exact[UITABLE_IW_MAX + 1], iw_lb[UITABLE_IW_MAX + 1];
	uint64_t why[UITABLE_WHY];   /* server first flights by verdict */
	uint64_t rwnd[UITABLE_RWND]; /* client SYNs by receiver class, from RWND_6KB */
	struct uitable_server *servers;
	unsigned nservers;
	struct uitable_recent *recent;
	unsigned nrecent, recent_head; /* ring */
	uint64_t flows, seq;
};

/* Allocates the tables (0, or -1 out of memory); uitable_free releases them. */
int uitable_init(struct uitable *t);
void uitable_free(struct uitable *t);

/* Counts a finished flow (an update of one already counted is left out). */
void uitable_add(struct uitable *t, const struct flow_record *r);

/* The k-th most recent flow (k < t->nrecent). */
const struct uitable_recent *uitable_recent_at(const struct uitable *t, unsigned k);

/* The verdict a server's flows add up to: "IW10", "IW4-10", ">=IW3", "IW2 vs >=IW3" or "-". */
void uitable_server_iw(const struct uitable_server *s, char *buf, size_t len);

/* The servers' orders, and their names: "flows", "IW", "recent", "name". */
enum uitable_sort { UITABLE_BY_FLOWS = 0, UITABLE_BY_IW, UITABLE_BY_RECENT, UITABLE_BY_NAME,
                    UITABLE_SORTS };
const char *uitable_sort_name(enum uitable_sort by);

/* The servers that match filter (NULL or "": all) into list (room for UITABLE_SERVERS), in
 * order by; ties by address, so rows keep their places between redraws. Returns how many. */
unsigned uitable_servers(const struct uitable *t, const char *filter, enum uitable_sort by,
                         const struct uitable_server **list);

/* Whether text contains filter, ignoring case (ASCII); an empty filter matches all. */
bool uitable_matches(const char *filter, const char *text);

#endif
