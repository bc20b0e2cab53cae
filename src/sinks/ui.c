/* The live dashboard: rates, the server IW distribution and the clients' receive-window classes
 * as bars, top servers with their verdicts, and a scrolling list of recent flows. Keys follow
 * htop / iftop: q quit, p or space pause, / filter, Tab next pane, arrows or j/k scroll, s sort,
 * ? help. Below 80x24 panes are dropped; below 40x10 it says "terminal too small".
 *
 * Everything fits at 80x24: the title keeps its states (the note, PAUSED, the filter) and drops
 * the rates and the source first; table columns are as wide as what they show, up to the
 * terminal's width, and when they do not fit the names, then the applications, then the
 * addresses give way (cut with '~'), never the verdict. What the panes count, and the servers'
 * order, are uitable.c's; this file draws them and reads the keys. */
#define _XOPEN_SOURCE_EXTENDED 1
#include "ui.h"

#include <curses.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "classify.h"
#include "clock.h"
#include "sink_kinds.h"
#include "uitable.h"

enum { PANE_SERVERS = 0, PANE_RECENT, N_PANES };

struct ui {
	struct ui_opts o;
	struct uitable t;      /* what the panes show */
	uint64_t packets, last_packets, last_flows;
	uint32_t open_flows;
	double pkt_rate, flow_rate;
	uint64_t last_draw_us;  /* monotonic */
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

static void sink_close(void *self) { ui_close(self); }

static int sink_flow(void *self, const struct flow_record *r)
{
	ui *u = self;
	uitable_add(&u->t, r);
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
	if (uitable_init(&u->t) != 0 || !initscr()) {
		uitable_free(&u->t);
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
	u->last_draw_us = clock_mono_us();
	return u;
}

void ui_close(ui *u)
{
	if (!u)
		return;
	endwin();
	uitable_free(&u->t);
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
	for (int i = 1; i <= UITABLE_IW_MAX; i++) {
		if (u->t.iw_exact[i] > max)
			max = u->t.iw_exact[i];
		if (u->t.iw_lb[i] > max)
			max = u->t.iw_lb[i];
	}
	int row = y + 1;
	if (row < y + h) { /* why the flights stopped: nagle and ambiguous apart from app; the
	                    * counts closer together, then only those above 0, until they fit */
		char line[256];
		for (int pass = 0; pass < 3; pass++) {
			size_t len = 0;
			line[0] = '\0';
			for (unsigned i = 0; i < UITABLE_WHY; i++)
				if (pass < 2 || u->t.why[i])
					len += (size_t)snprintf(line + len, sizeof(line) - len, "%s%s %llu",
					                        len ? (pass ? " " : "  ") : "", uitable_why_name(i),
					                        (unsigned long long)u->t.why[i]);
			if ((int)len <= w)
				break;
		}
		mvaddnstr(row, x, line, w);
		row++;
	}
	for (int i = 1; i <= UITABLE_IW_MAX && row < y + h; i++) {
		if (u->t.iw_exact[i]) {
			mvprintw(row, x, "IW%-4d%6llu ", i, (unsigned long long)u->t.iw_exact[i]);
			bar(u, row++, x + 13, w - 14, u->t.iw_exact[i], max, C_EXACT, '#');
		}
		if (u->t.iw_lb[i] && row < y + h) {
			mvprintw(row, x, ">=IW%-2d%6llu ", i, (unsigned long long)u->t.iw_lb[i]);
			bar(u, row++, x + 13, w - 14, u->t.iw_lb[i], max, C_LB, '=');
		}
	}
	if (row == y + 2)
		mvprintw(row, x, "(no server first flights yet)");
}

static void draw_rwnd(ui *u, int y, int x, int w, int h)
{
	heading(u, y, x, "Client SYN windows", false);
	uint64_t max = 1;
	for (unsigned i = 0; i < UITABLE_RWND; i++)
		if (u->t.rwnd[i] > max)
			max = u->t.rwnd[i];
	for (unsigned i = 0; i < UITABLE_RWND && (int)i + 1 < h; i++) {
		const char *name = classify_rwnd_name((enum rwnd_class)(RWND_6KB + i));
		mvprintw(y + 1 + (int)i, x, "%-6s%7llu ", name, (unsigned long long)u->t.rwnd[i]);
		bar(u, y + 1 + (int)i, x + 14, w - 15, u->t.rwnd[i], max, C_RWND, '#');
	}
}

/* text cut to width cells into out (size > width): the first or (tail) the last characters,
 * '~' where the cut is. */
static void cut(char *out, size_t size, const char *text, int width, bool tail)
{
	int n = (int)strlen(text);
	if (width < 0)
		width = 0;
	if (n <= width || width == 0)
		snprintf(out, size, "%.*s", width, text);
	else if (tail)
		snprintf(out, size, "~%s", text + n - (width - 1));
	else
		snprintf(out, size, "%.*s~", width - 1, text);
}

/* A table column: as wide as its widest text (w), narrowed by cols_fit(). */
struct col {
	const char *head;
	bool right;  /* numbers */
	bool tail;   /* cut keeps the end (an address's port) */
	int w;
};

/* A step of cols_fit(): column col gives width away down to min. */
struct give {
	int col, min;
};

static void col_want(struct col *c, const char *text)
{
	int n = (int)strlen(text);
	if (n > c->w)
		c->w = n;
}

static void cols_init(struct col *c, int n)
{
	for (int i = 0; i < n; i++)
		c[i].w = (int)strlen(c[i].head);
}

/* Narrows the columns (one space between two) by the steps, in order, until they fit in width;
 * columns no step names (counts, verdicts) keep their width. */
static void cols_fit(struct col *c, int n, const struct give *g, int ng, int width)
{
	int total = n - 1;
	for (int i = 0; i < n; i++)
		total += c[i].w;
	for (int k = 0; k < ng && total > width; k++) {
		struct col *x = &c[g[k].col];
		if (x->w > g[k].min) {
			int take = x->w - g[k].min < total - width ? x->w - g[k].min : total - width;
			x->w -= take;
			total -= take;
		}
	}
}

/* One row of the table at line y, cells in the columns' widths, cut at the screen's width. */
static void cols_row(int y, const struct col *c, int n, const char *const *cells, int width)
{
	char line[1024], text[1024];
	size_t len = 0;
	for (int i = 0; i < n && len + 1 < sizeof(line); i++) {
		int w = c[i].w < (int)(sizeof(text) - 1) ? c[i].w : (int)sizeof(text) - 1;
		cut(text, sizeof(text), cells[i], w, c[i].tail);
		int m = c[i].right ? snprintf(line + len, sizeof(line) - len, "%s%*s", i ? " " : "", w, text)
		        : i == n - 1 ? snprintf(line + len, sizeof(line) - len, "%s%s", i ? " " : "", text)
		                     : snprintf(line + len, sizeof(line) - len, "%s%-*s", i ? " " : "", w, text);
		if (m < 0)
			break;
		len += (size_t)m < sizeof(line) - len ? (size_t)m : sizeof(line) - len - 1;
	}
	mvaddnstr(y, 0, line, width);
}

enum { SC_SERVER, SC_FLOWS, SC_EXACT, SC_IW, SC_APP, SC_NAME, N_SC };

static void draw_servers(ui *u, int y, int w, int h)
{
	char title[96];
	snprintf(title, sizeof(title), "Top servers (sort: %s)", uitable_sort_name((enum uitable_sort)u->sort));
	heading(u, y, 0, title, u->focus == PANE_SERVERS);
	static const struct uitable_server *list[UITABLE_SERVERS];
	unsigned n = uitable_servers(&u->t, u->filter, (enum uitable_sort)u->sort, list);
	if (u->scroll[PANE_SERVERS] > (int)n - 1)
		u->scroll[PANE_SERVERS] = n ? (int)n - 1 : 0;
	int first = u->scroll[PANE_SERVERS], shown = (int)n - first < h - 2 ? (int)n - first : h - 2;
	if (shown < 0)
		shown = 0;
	struct col c[N_SC] = {
		[SC_SERVER] = { "server", false, true, 0 }, [SC_FLOWS] = { "flows", true, false, 0 },
		[SC_EXACT] = { "exact", true, false, 0 },   [SC_IW] = { "IW", false, false, 0 },
		[SC_APP] = { "app", false, false, 0 },      [SC_NAME] = { "name", false, false, 0 },
	};
	/* an IPv6 address with its port fits at 80 columns next to a 12-character name */
	static const struct give gives[] = { { SC_APP, 6 }, { SC_NAME, 12 }, { SC_SERVER, 21 },
	                                     { SC_NAME, 0 }, { SC_SERVER, 9 } };
	cols_init(c, N_SC);
	char cell[N_SC][SERVER_NAME_MAX];
	for (int r = 0; r < shown; r++) {
		const struct uitable_server *s = list[first + r];
		char iw[24];
		uitable_server_iw(s, iw, sizeof(iw));
		col_want(&c[SC_SERVER], s->addr);
		snprintf(cell[0], sizeof(cell[0]), "%u", s->flows);
		col_want(&c[SC_FLOWS], cell[0]);
		snprintf(cell[0], sizeof(cell[0]), "%u", s->exact);
		col_want(&c[SC_EXACT], cell[0]);
		col_want(&c[SC_IW], iw);
		col_want(&c[SC_APP], s->app[0] ? s->app : "-");
		col_want(&c[SC_NAME], s->name);
	}
	cols_fit(c, N_SC, gives, (int)(sizeof(gives) / sizeof(gives[0])), w);
	const char *heads[N_SC];
	for (int i = 0; i < N_SC; i++)
		heads[i] = c[i].head;
	cols_row(y + 1, c, N_SC, heads, w);
	for (int r = 0; r < shown; r++) {
		const struct uitable_server *s = list[first + r];
		snprintf(cell[SC_SERVER], sizeof(cell[0]), "%s", s->addr);
		snprintf(cell[SC_FLOWS], sizeof(cell[0]), "%u", s->flows);
		snprintf(cell[SC_EXACT], sizeof(cell[0]), "%u", s->exact);
		uitable_server_iw(s, cell[SC_IW], sizeof(cell[0]));
		snprintf(cell[SC_APP], sizeof(cell[0]), "%s", s->app[0] ? s->app : "-");
		snprintf(cell[SC_NAME], sizeof(cell[0]), "%s", s->name);
		const char *cells[N_SC];
		for (int i = 0; i < N_SC; i++)
			cells[i] = cell[i];
		cols_row(y + 2 + r, c, N_SC, cells, w);
	}
}

enum { RC_CLIENT, RC_SERVER, RC_APP, RC_CWIN, RC_SWIN, RC_FF, RC_CLASS, N_RC };

static void draw_recent(ui *u, int y, int w, int h)
{
	heading(u, y, 0, "Recent flows", u->focus == PANE_RECENT);
	static const struct uitable_recent *list[UITABLE_RECENT];
	int n = 0, skip = u->scroll[PANE_RECENT];
	for (unsigned k = 0; k < u->t.nrecent && n < h - 2; k++) {
		const struct uitable_recent *e = uitable_recent_at(&u->t, k);
		if (!uitable_matches(u->filter, e->match))
			continue;
		if (skip > 0) {
			skip--;
			continue;
		}
		list[n++] = e;
	}
	struct col c[N_RC] = {
		[RC_CLIENT] = { "client", false, true, 0 }, [RC_SERVER] = { "server", false, true, 0 },
		[RC_APP] = { "app", false, false, 0 },      [RC_CWIN] = { "c_win", true, false, 0 },
		[RC_SWIN] = { "s_win", true, false, 0 },    [RC_FF] = { "server ff", false, false, 0 },
		[RC_CLASS] = { "class", false, false, 0 },
	};
	/* 15 + 21: an IPv4 client and server with its port, uncut at 80 columns */
	static const struct give gives[] = { { RC_APP, 6 }, { RC_CLIENT, 15 }, { RC_SERVER, 21 },
	                                     { RC_CLIENT, 6 }, { RC_SERVER, 9 } };
	cols_init(c, N_RC);
	const char *cells[N_RC];
	for (int r = 0; r < n; r++) {
		const struct uitable_recent *e = list[r];
		cells[RC_CLIENT] = e->client;
		cells[RC_SERVER] = e->server;
		cells[RC_APP] = e->app;
		cells[RC_CWIN] = e->cwin;
		cells[RC_SWIN] = e->swin;
		cells[RC_FF] = e->ff;
		cells[RC_CLASS] = e->cls;
		for (int i = 0; i < N_RC; i++)
			col_want(&c[i], cells[i]);
	}
	cols_fit(c, N_RC, gives, (int)(sizeof(gives) / sizeof(gives[0])), w);
	for (int i = 0; i < N_RC; i++)
		cells[i] = c[i].head;
	cols_row(y + 1, c, N_RC, cells, w);
	for (int r = 0; r < n; r++) {
		const struct uitable_recent *e = list[r];
		const char *row[N_RC] = { e->client, e->server, e->app, e->cwin, e->swin, e->ff, e->cls };
		cols_row(y + 2 + r, c, N_RC, row, w);
	}
}

static void draw_help(int rows, int cols)
{
	static const char *const lines[] = {
		"iwscope dashboard keys", "",
		"q        quit (every flow is written first)",
		"p space  pause / resume the display (and a replay)",
		"/        filter servers and flows (server, app, name, class; any case)",
		"         Enter keeps the filter, Esc clears it",
		"Tab      next pane (servers, recent flows)",
		"j k      scroll down / up (also the arrow keys, PgUp, PgDn)",
		"s        change the server sort: flows, IW, recent, name",
		"?        this help (any key closes it)", "",
		RECORD_WEAK_LEGEND,
	};
	int n = (int)(sizeof(lines) / sizeof(lines[0]));
	int y0 = (rows - n) / 2 > 0 ? (rows - n) / 2 : 0;
	for (int i = 0; i < n && y0 + i < rows; i++) {
		move(y0 + i, 0);
		clrtoeol();
		mvprintw(y0 + i, 2, "%.*s", cols - 4, lines[i]);
	}
}

/* The title line in cols cells: " iwscope", then what fits of the note, PAUSED, the filter,
 * the flow counts, the rates and the source, in that order of importance (the filter and
 * the source cut to fit, keeping their ends), shown in their usual order. */
static void draw_title(ui *u, int cols)
{
	enum { T_NAME, T_SOURCE, T_PKTS, T_FRATE, T_FLOWS, T_OPEN, T_PAUSED, T_FILTER, T_NOTE, N_T };
	static const int order[] = { T_NAME, T_NOTE, T_PAUSED, T_FILTER, T_FLOWS, T_OPEN, T_PKTS, T_FRATE, T_SOURCE };
	char seg[N_T][192];
	memset(seg, 0, sizeof(seg));
	snprintf(seg[T_NAME], sizeof(seg[0]), " iwscope");
	snprintf(seg[T_SOURCE], sizeof(seg[0]), "%s", u->o.source ? u->o.source : "");
	snprintf(seg[T_PKTS], sizeof(seg[0]), "%.0f pkt/s", u->pkt_rate);
	snprintf(seg[T_FRATE], sizeof(seg[0]), "%.1f flows/s", u->flow_rate);
	snprintf(seg[T_FLOWS], sizeof(seg[0]), "%llu flows", (unsigned long long)u->t.flows);
	snprintf(seg[T_OPEN], sizeof(seg[0]), "%u open", u->open_flows);
	if (u->paused)
		snprintf(seg[T_PAUSED], sizeof(seg[0]), "[PAUSED]");
	if (u->filter_len || u->editing)
		snprintf(seg[T_FILTER], sizeof(seg[0]), "[filter: %s]", u->filter);
	if (u->note)
		snprintf(seg[T_NOTE], sizeof(seg[0]), "[%.160s]", u->note);
	bool on[N_T] = { false };
	int used = 0;
	for (unsigned k = 0; k < sizeof(order) / sizeof(order[0]); k++) {
		int t = order[k], sep = used ? 2 : 0, len = (int)strlen(seg[t]);
		if (!len)
			continue;
		if (used + sep + len > cols) {
			int room = cols - used - sep;
			char part[sizeof(u->filter) + 2];
			if (t == T_FILTER && room >= 12) {  /* "[filter: ~x]": the end being typed */
				cut(part, sizeof(part), u->filter, room - 10, true);
				snprintf(seg[t], sizeof(seg[0]), "[filter: %s]", part);
			} else if (t == T_SOURCE && room >= 8) {
				char src[sizeof(seg[0])];
				cut(src, sizeof(src), seg[t], room, true);
				memcpy(seg[t], src, sizeof(src));
			} else {
				continue;
			}
			len = (int)strlen(seg[t]);
		}
		on[t] = true;
		used += sep + len;
	}
	char title[N_T * 194] = "";
	size_t tl = 0;
	for (int t = 0; t < N_T; t++)
		if (on[t])
			tl += (size_t)snprintf(title + tl, sizeof(title) - tl, "%s%s", tl ? "  " : "", seg[t]);
	style_on(u, C_TITLE, A_REVERSE);
	mvhline(0, 0, ' ', cols);
	mvaddnstr(0, 0, title, cols);
	style_off(u, C_TITLE, A_REVERSE);
}

void ui_draw(ui *u, bool force)
{
	uint64_t now = clock_mono_us();
	double dt = (double)(now - u->last_draw_us) / 1e6;
	if (dt >= 0.2) {
		u->pkt_rate = (double)(u->packets - u->last_packets) / dt;
		u->flow_rate = (double)(u->t.flows - u->last_flows) / dt;
		u->last_packets = u->packets;
		u->last_flows = u->t.flows;
		u->last_draw_us = now;
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
	draw_title(u, cols);
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
		if (act == UI_NONE)
			act = UI_REDRAW; /* shown at once, also while paused */
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
			u->sort = (u->sort + 1) % UITABLE_SORTS;
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

enum ui_action ui_turn(ui *u, uint64_t packets, uint32_t open_flows, uint64_t now_us,
                       uint64_t refresh_us, uint64_t *last_draw_us)
{
	enum ui_action a = ui_keys(u);
	if (a == UI_QUIT)
		return a;
	ui_counters(u, packets, open_flows);
	if (now_us - *last_draw_us >= refresh_us || a != UI_NONE) {
		ui_draw(u, a != UI_NONE);
		*last_draw_us = now_us;
	}
	return a;
}

/* ---- the registry's "dashboard" kind (sink_kinds.h): a live run or a replay on a terminal ---- */

static bool kind_wanted(const struct sink_conf *c) { return c->dashboard; }

static int kind_open(const struct sink_conf *c, struct sink *out, char *err, size_t errlen)
{
	(void)err;
	(void)errlen;
	struct ui_opts uo = { c->source, c->color };
	ui *dash = ui_open(&uo);
	*out = dash ? ui_sink(dash) : (struct sink){ NULL, NULL };
	return 0;
}

const struct sink_kind ui_kind = {
	.name = "dashboard", .terminal = true, .wanted = kind_wanted, .open = kind_open,
};
