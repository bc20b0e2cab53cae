/* The live dashboard: rates, the server IW distribution and the clients' receive-window classes
 * as bars, top servers with their verdicts, and a scrolling list of recent flows. Keys follow
 * htop / iftop: q quit, p or space pause, / filter, Tab next pane, arrows or j/k scroll, s sort,
 * ? help. Below 80x24 panes are dropped; below 40x10 it says "terminal too small". */
#define _XOPEN_SOURCE_EXTENDED 1
#include "ui.h"

#include <curses.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "classify.h"

#define IW_MAX 101          /* IW1..IW100, then one bucket for more */
#define MAX_SERVERS 4096
#define RECENT 1000

/* in enum rwnd_class's order, from RWND_6KB */
static const char *const rwnd_names[] = { "6KB", "10MSS", "20MSS", "64KB", "8192", "16384", "other" };
#define N_RWND (sizeof(rwnd_names) / sizeof(rwnd_names[0]))

struct server {
	char key[64];           /* "ip port" */
	char app[32], name[48];
	uint32_t flows, exact, iw_min, iw_max, lb;
	uint64_t last;          /* order of arrival */
};

struct recent {
	char line[160];
	char match[400];        /* text the filter searches */
};

/* Server verdicts counted apart: nagle and ambiguous are lower bounds like app, for other
 * reasons (docs/METHOD.md "Why the flight stopped"). Short names fit the 80-column pane. */
static const uint8_t why_limits[] = { LIMIT_CWND, LIMIT_APP, LIMIT_NAGLE, LIMIT_AMBIGUOUS,
                                      LIMIT_RWND, LIMIT_LOSS };
static const char *const why_short[] = { "cwnd", "app", "nagle", "ambig", "rwnd", "loss" };
#define N_WHY (sizeof(why_limits) / sizeof(why_limits[0]))

/* Index of a verdict in why_limits, or N_WHY. */
static unsigned why_index(uint8_t lim)
{
	unsigned i = 0;
	while (i < N_WHY && why_limits[i] != lim)
		i++;
	return i;
}

enum { PANE_SERVERS = 0, PANE_RECENT, N_PANES };
enum { SORT_FLOWS = 0, SORT_IW, SORT_RECENT, SORT_NAME, N_SORTS };
static const char *const sort_names[N_SORTS] = { "flows", "IW", "recent", "name" };

struct ui {
	struct ui_opts o;
	uint64_t iw_exact[IW_MAX + 1], iw_lb[IW_MAX + 1];
	uint64_t why[N_WHY];   /* server first flights by verdict */
	uint64_t rwnd[N_RWND];
	struct server *servers;
	unsigned nservers;
	struct recent *recent;
	unsigned nrecent, recent_head; /* ring */
	uint64_t flows, seq;
	uint64_t packets, last_packets, last_flows;
	uint32_t open_flows;
	double pkt_rate, flow_rate;
	struct timespec last_draw;
	bool paused, help, editing;
	const char *note;
	char filter[64];
	size_t filter_len;
	int focus, sort;
	int scroll[N_PANES];
};

static int sink_nop(void *self, const struct run_info *run)
{
	(void)self;
	(void)run;
	return 0;
}

static int sink_tick(void *self)
{
	(void)self;
	return 0;
}

static void sink_close(void *self) { (void)self; }

static struct server *server_for(ui *u, const char *key)
{
	for (unsigned i = 0; i < u->nservers; i++)
		if (!strcmp(u->servers[i].key, key))
			return &u->servers[i];
	struct server *s;
	if (u->nservers < MAX_SERVERS) {
		s = &u->servers[u->nservers++];
	} else { /* full: reuse the one with the fewest flows */
		s = &u->servers[0];
		for (unsigned i = 1; i < u->nservers; i++)
			if (u->servers[i].flows < s->flows)
				s = &u->servers[i];
	}
	memset(s, 0, sizeof(*s));
	snprintf(s->key, sizeof(s->key), "%s", key);
	return s;
}

static unsigned segs_of(int64_t v) { return v == NULL64 || v < 0 ? 0 : v > IW_MAX ? IW_MAX : (unsigned)v; }

static int sink_flow(void *self, const struct flow_record *r)
{
	ui *u = self;
	if (r->update)
		return 0; /* counted when its verdicts became final */
	u->flows++;
	u->seq++;
	uint8_t lim = r->s.iw_limit;
	unsigned segs = segs_of(r->s.iw_segs);
	unsigned why = why_index(lim);
	if (why < N_WHY)
		u->why[why]++;
	if (lim == LIMIT_CWND && segs)
		u->iw_exact[segs]++;
	else if (why < N_WHY && lim != LIMIT_LOSS && segs)
		u->iw_lb[segs]++;
	if (r->c.rwnd_class > RWND_NULL && r->c.rwnd_class - 1u < N_RWND)
		u->rwnd[r->c.rwnd_class - 1]++;
	if (lim != LIMIT_UNKNOWN && lim != LIMIT_NONE) {
		char key[64];
		snprintf(key, sizeof(key), "%s %d", r->server_ip, r->server_port);
		struct server *s = server_for(u, key);
		s->flows++;
		s->last = u->seq;
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
			snprintf(s->app, sizeof(s->app), "%.*s", (int)sizeof(s->app) - 1, r->app_proto);
		if (r->server_name[0])
			snprintf(s->name, sizeof(s->name), "%.*s", (int)sizeof(s->name) - 1, r->server_name);
	}
	struct recent *e = &u->recent[u->recent_head];
	char cw[24] = "-", sw[24] = "-", ff[40] = "-";
	if (r->c.syn_win != NULL64)
		snprintf(cw, sizeof(cw), "%lld", (long long)r->c.syn_win);
	if (r->s.syn_win != NULL64)
		snprintf(sw, sizeof(sw), "%lld", (long long)r->s.syn_win);
	if (why < N_WHY && r->s.iw_segs != NULL64)
		snprintf(ff, sizeof(ff), "%lld %s", (long long)r->s.iw_segs, why_short[why]);
	char server[64];
	snprintf(server, sizeof(server), "%s:%d", r->server_ip, r->server_port);
	const char *crwnd = classify_rwnd_name((enum rwnd_class)r->c.rwnd_class);
	snprintf(e->line, sizeof(e->line), "%-21.21s %-21.21s %-9.9s %6s %6s %-10s %s", r->client_ip,
	         server, r->app_proto[0] ? r->app_proto : "-", cw, sw, ff, r->s.iw_class);
	snprintf(e->match, sizeof(e->match), "%s %s %s %s %s", e->line, r->server_name,
	         crwnd ? crwnd : "", r->s.iw_class, r->app_category);
	u->recent_head = (u->recent_head + 1) % RECENT;
	if (u->nrecent < RECENT)
		u->nrecent++;
	return 0;
}

static const char *sink_error(void *self)
{
	(void)self;
	return "dashboard: cannot draw";
}

static const struct sink_ops ui_ops = {
	.name = "dashboard",
	.begin = sink_nop,
	.flow = sink_flow,
	.tick = sink_tick,
	.end = sink_nop,
	.close = sink_close,
	.error = sink_error,
};

struct sink ui_sink(ui *u)
{
	struct sink k = { &ui_ops, u };
	return k;
}

enum { C_TITLE = 1, C_EXACT, C_LB, C_RWND, C_HEAD };

ui *ui_open(const struct ui_opts *o)
{
	ui *u = calloc(1, sizeof(*u));
	if (!u)
		return NULL;
	u->servers = calloc(MAX_SERVERS, sizeof(*u->servers));
	u->recent = calloc(RECENT, sizeof(*u->recent));
	if (!u->servers || !u->recent || !initscr()) {
		free(u->servers);
		free(u->recent);
		free(u);
		return NULL;
	}
	u->o = *o;
	cbreak();
	noecho();
	nodelay(stdscr, TRUE);
	keypad(stdscr, TRUE);
	curs_set(0);
	if (u->o.color && has_colors()) {
		start_color();
		use_default_colors();
		init_pair(C_TITLE, COLOR_BLACK, COLOR_CYAN);
		init_pair(C_EXACT, COLOR_GREEN, -1);
		init_pair(C_LB, COLOR_YELLOW, -1);
		init_pair(C_RWND, COLOR_CYAN, -1);
		init_pair(C_HEAD, COLOR_CYAN, -1);
	} else {
		u->o.color = false;
	}
	clock_gettime(CLOCK_MONOTONIC, &u->last_draw);
	return u;
}

void ui_close(ui *u)
{
	if (!u)
		return;
	endwin();
	free(u->servers);
	free(u->recent);
	free(u);
}

void ui_counters(ui *u, uint64_t packets, uint32_t open_flows)
{
	u->packets = packets;
	u->open_flows = open_flows;
}

bool ui_paused(const ui *u) { return u->paused; }

void ui_note(ui *u, const char *note) { u->note = note; }

static void style_on(ui *u, int pair, int extra)
{
	if (u->o.color && pair)
		attron(COLOR_PAIR(pair));
	if (extra)
		attron(extra);
}

static void style_off(ui *u, int pair, int extra)
{
	if (u->o.color && pair)
		attroff(COLOR_PAIR(pair));
	if (extra)
		attroff(extra);
}

static void heading(ui *u, int y, int x, const char *text, bool focused)
{
	style_on(u, C_HEAD, A_BOLD | (focused ? A_UNDERLINE : 0));
	mvprintw(y, x, "%s", text);
	style_off(u, C_HEAD, A_BOLD | (focused ? A_UNDERLINE : 0));
}

/* A horizontal bar of value/max over width cells. */
static void bar(ui *u, int y, int x, int width, uint64_t value, uint64_t max, int pair, char ch)
{
	int n = max ? (int)((value * (uint64_t)width + max - 1) / max) : 0;
	if (n > width)
		n = width;
	style_on(u, pair, 0);
	for (int i = 0; i < n; i++)
		mvaddch(y, x + i, (chtype)ch);
	style_off(u, pair, 0);
}

/* Server IW distribution: exact (#) and lower bounds (=), one row per class present. */
static void draw_iw(ui *u, int y, int x, int w, int h)
{
	heading(u, y, x, "Server IW  (# exact, = lower bound)", false);
	uint64_t max = 1;
	for (int i = 1; i <= IW_MAX; i++) {
		if (u->iw_exact[i] > max)
			max = u->iw_exact[i];
		if (u->iw_lb[i] > max)
			max = u->iw_lb[i];
	}
	int row = y + 1;
	if (row < y + h) { /* why the flights stopped: nagle and ambiguous apart from app */
		int col = x;
		for (unsigned i = 0; i < N_WHY && col < x + w; i++) {
			char cell[32];
			int n = snprintf(cell, sizeof(cell), "%s %llu  ", why_short[i],
			                 (unsigned long long)u->why[i]);
			if (col + n > x + w)
				break;
			mvprintw(row, col, "%s", cell);
			col += n;
		}
		row++;
	}
	for (int i = 1; i <= IW_MAX && row < y + h; i++) {
		if (u->iw_exact[i]) {
			mvprintw(row, x, "IW%-4d%6llu ", i, (unsigned long long)u->iw_exact[i]);
			bar(u, row++, x + 13, w - 14, u->iw_exact[i], max, C_EXACT, '#');
		}
		if (u->iw_lb[i] && row < y + h) {
			mvprintw(row, x, ">=IW%-2d%6llu ", i, (unsigned long long)u->iw_lb[i]);
			bar(u, row++, x + 13, w - 14, u->iw_lb[i], max, C_LB, '=');
		}
	}
	if (row == y + 2)
		mvprintw(row, x, "(no server first flights yet)");
}

static void draw_rwnd(ui *u, int y, int x, int w, int h)
{
	heading(u, y, x, "Client SYN windows", false);
	uint64_t max = 1;
	for (unsigned i = 0; i < N_RWND; i++)
		if (u->rwnd[i] > max)
			max = u->rwnd[i];
	for (unsigned i = 0; i < N_RWND && (int)i + 1 < h; i++) {
		mvprintw(y + 1 + (int)i, x, "%-6s%7llu ", rwnd_names[i], (unsigned long long)u->rwnd[i]);
		bar(u, y + 1 + (int)i, x + 14, w - 15, u->rwnd[i], max, C_RWND, '#');
	}
}

static bool matches(const ui *u, const char *text)
{
	return !u->filter_len || strstr(text, u->filter) != NULL;
}

static int cmp_sort;
static int cmp_servers(const void *a, const void *b)
{
	const struct server *x = *(const struct server *const *)a, *y = *(const struct server *const *)b;
	switch (cmp_sort) {
	case SORT_IW:
		return (int)y->iw_max - (int)x->iw_max;
	case SORT_RECENT:
		return y->last > x->last ? 1 : y->last < x->last ? -1 : 0;
	case SORT_NAME:
		return strcmp(x->name[0] ? x->name : x->key, y->name[0] ? y->name : y->key);
	default:
		return (int)y->flows - (int)x->flows;
	}
}

static void draw_servers(ui *u, int y, int w, int h)
{
	char title[96];
	snprintf(title, sizeof(title), "Top servers (sort: %s)", sort_names[u->sort]);
	heading(u, y, 0, title, u->focus == PANE_SERVERS);
	mvprintw(y + 1, 0, "%-27s %5s %5s %-8s %-9s %s", "server", "flows", "exact", "IW", "app", "name");
	static const struct server *list[MAX_SERVERS];
	unsigned n = 0;
	for (unsigned i = 0; i < u->nservers; i++) {
		char text[200];
		snprintf(text, sizeof(text), "%s %s %s IW%u", u->servers[i].key, u->servers[i].app,
		         u->servers[i].name, u->servers[i].iw_max);
		if (matches(u, text))
			list[n++] = &u->servers[i];
	}
	cmp_sort = u->sort;
	qsort(list, n, sizeof(list[0]), cmp_servers);
	if (u->scroll[PANE_SERVERS] > (int)n - 1)
		u->scroll[PANE_SERVERS] = n ? (int)n - 1 : 0;
	for (int r = 0; r < h - 2 && u->scroll[PANE_SERVERS] + r < (int)n; r++) {
		const struct server *s = list[u->scroll[PANE_SERVERS] + r];
		char iw[24];
		if (s->exact && s->iw_min == s->iw_max)
			snprintf(iw, sizeof(iw), "IW%u", s->iw_max);
		else if (s->exact)
			snprintf(iw, sizeof(iw), "IW%u-%u", s->iw_min, s->iw_max);
		else
			snprintf(iw, sizeof(iw), ">=IW%u", s->lb);
		mvprintw(y + 2 + r, 0, "%-27.27s %5u %5u %-8s %-9.9s %.*s", s->key, s->flows, s->exact,
		         iw, s->app[0] ? s->app : "-", w > 62 ? w - 62 : 0, s->name);
	}
}

static void draw_recent(ui *u, int y, int w, int h)
{
	heading(u, y, 0, "Recent flows", u->focus == PANE_RECENT);
	mvprintw(y + 1, 0, "%-21s %-21s %-9s %6s %6s %-10s %s", "client", "server", "app", "c_win",
	         "s_win", "server ff", "class");
	int shown = 0, skip = u->scroll[PANE_RECENT];
	for (unsigned k = 0; k < u->nrecent && shown < h - 2; k++) {
		const struct recent *e = &u->recent[(u->recent_head + RECENT - 1 - k) % RECENT];
		if (!matches(u, e->match))
			continue;
		if (skip > 0) {
			skip--;
			continue;
		}
		mvprintw(y + 2 + shown++, 0, "%.*s", w, e->line);
	}
}

static void draw_help(int rows, int cols)
{
	static const char *const lines[] = {
		"iwscope dashboard keys", "",
		"q        quit (every flow is written first)",
		"p space  pause / resume the display (and a replay)",
		"/        filter servers and flows (server, app, name, class); Enter ends, Esc clears",
		"Tab      next pane (servers, recent flows)",
		"j k      scroll down / up (also the arrow keys, PgUp, PgDn)",
		"s        change the server sort: flows, IW, recent, name",
		"?        this help (any key closes it)",
	};
	int n = (int)(sizeof(lines) / sizeof(lines[0]));
	int y0 = (rows - n) / 2 > 0 ? (rows - n) / 2 : 0;
	for (int i = 0; i < n && y0 + i < rows; i++) {
		move(y0 + i, 0);
		clrtoeol();
		mvprintw(y0 + i, 2, "%.*s", cols - 4, lines[i]);
	}
}

void ui_draw(ui *u, bool force)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	double dt = (double)(now.tv_sec - u->last_draw.tv_sec) + (double)(now.tv_nsec - u->last_draw.tv_nsec) / 1e9;
	if (dt >= 0.2) {
		u->pkt_rate = (double)(u->packets - u->last_packets) / dt;
		u->flow_rate = (double)(u->flows - u->last_flows) / dt;
		u->last_packets = u->packets;
		u->last_flows = u->flows;
		u->last_draw = now;
	}
	if (u->paused && !force)
		return;
	int rows, cols;
	getmaxyx(stdscr, rows, cols);
	erase();
	if (rows < 10 || cols < 40) {
		mvprintw(0, 0, "terminal too small");
		if (rows > 1)
			mvprintw(1, 0, "(need 40x10)");
		refresh();
		return;
	}
	style_on(u, C_TITLE, A_REVERSE);
	mvhline(0, 0, ' ', cols);
	char title[512];
	snprintf(title, sizeof(title), " iwscope  %.30s  %.0f pkt/s  %.1f flows/s  %llu flows  %u open%s%s%s%s%s%s",
	         u->o.source, u->pkt_rate, u->flow_rate, (unsigned long long)u->flows, u->open_flows,
	         u->paused ? "  [PAUSED]" : "", u->filter_len || u->editing ? "  filter: " : "",
	         u->filter, u->note ? "  [" : "", u->note ? u->note : "", u->note ? "]" : "");
	mvprintw(0, 0, "%.*s", cols, title);
	style_off(u, C_TITLE, A_REVERSE);
	if (u->help) {
		draw_help(rows, cols);
		refresh();
		return;
	}
	int y = 1;
	bool full = rows >= 24 && cols >= 80;
	if (full) { /* bars side by side */
		int bh = 9;
		draw_iw(u, y, 0, cols / 2 - 1, bh);
		draw_rwnd(u, y, cols / 2 + 1, cols - cols / 2 - 1, bh);
		y += bh;
	}
	int rest = rows - y - 1;
	int sh = full ? rest / 2 : rest;
	draw_servers(u, y, cols, sh);
	if (full)
		draw_recent(u, y + sh, cols, rest - sh);
	mvprintw(rows - 1, 0, "%.*s", cols - 1,
	         u->editing ? "filter: type, Enter to keep, Esc to clear"
	                    : "q quit  p pause  / filter  Tab pane  j/k scroll  s sort  ? help");
	refresh();
}

enum ui_action ui_keys(ui *u)
{
	enum ui_action act = UI_NONE;
	int ch;
	while ((ch = getch()) != ERR) {
		if (ch == KEY_RESIZE) {
			clear();
			continue;
		}
		if (u->help) {
			u->help = false;
			continue;
		}
		if (u->editing) {
			if (ch == '\n' || ch == KEY_ENTER) {
				u->editing = false;
			} else if (ch == 27) {
				u->editing = false;
				u->filter_len = 0;
				u->filter[0] = '\0';
			} else if ((ch == KEY_BACKSPACE || ch == 127 || ch == 8) && u->filter_len) {
				u->filter[--u->filter_len] = '\0';
			} else if (ch >= 32 && ch < 127 && u->filter_len + 1 < sizeof(u->filter)) {
				u->filter[u->filter_len++] = (char)ch;
				u->filter[u->filter_len] = '\0';
			}
			continue;
		}
		switch (ch) {
		case 'q':
		case 'Q':
			return UI_QUIT;
		case 'p':
		case ' ':
			u->paused = !u->paused;
			act = UI_PAUSE;
			break;
		case '/':
			u->editing = true;
			break;
		case '\t':
			u->focus = (u->focus + 1) % N_PANES;
			break;
		case 'j':
		case KEY_DOWN:
			u->scroll[u->focus]++;
			break;
		case 'k':
		case KEY_UP:
			if (u->scroll[u->focus] > 0)
				u->scroll[u->focus]--;
			break;
		case KEY_NPAGE:
			u->scroll[u->focus] += 10;
			break;
		case KEY_PPAGE:
			u->scroll[u->focus] = u->scroll[u->focus] > 10 ? u->scroll[u->focus] - 10 : 0;
			break;
		case 's':
			u->sort = (u->sort + 1) % N_SORTS;
			break;
		case '?':
		case 'h':
			u->help = true;
			break;
		default:
			break;
		}
	}
	return act;
}
