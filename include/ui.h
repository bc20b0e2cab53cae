/* ui: the ncurses dashboard, a sink that aggregates finished flows and draws them. The only
 * user of curses.h. */
#ifndef IWSCOPE_UI_H
#define IWSCOPE_UI_H

#include <stdbool.h>
#include <stdint.h>

#include "sink.h"

struct ui_opts {
	const char *source; /* shown in the title: interface or file */
	bool color;
};

/* UI_REDRAW: a key changed what the screen shows (filter, scroll, sort, help, size). */
enum ui_action { UI_NONE = 0, UI_QUIT, UI_PAUSE, UI_REDRAW };

typedef struct ui ui;

/* Takes over the terminal; NULL if it cannot (not a terminal). */
ui *ui_open(const struct ui_opts *o);
/* Gives the terminal back. */
void ui_close(ui *u);

/* The sink that feeds the dashboard. */
struct sink ui_sink(ui *u);

/* Counters for the rate line: packets seen and flows open now. */
void ui_counters(ui *u, uint64_t packets, uint32_t open_flows);

/* Handles every pending key; returns UI_QUIT for q, UI_PAUSE when pause was toggled, UI_REDRAW
 * after any other key (draw at once, paused or not), UI_NONE without keys. */
enum ui_action ui_keys(ui *u);
bool ui_paused(const ui *u);

/* A short note for the title line (borrowed; NULL clears it). */
void ui_note(ui *u, const char *note);

/* Redraws the screen (not while paused, unless forced). */
void ui_draw(ui *u, bool force);

/* The dashboard's turn in a capture loop: its keys, the counters, a redraw every refresh_us
 * (of the monotonic clock, now_us; *last_draw_us is when it last drew) or after a key. The
 * key's action; nothing is drawn after UI_QUIT. */
enum ui_action ui_turn(ui *u, uint64_t packets, uint32_t open_flows, uint64_t now_us,
                       uint64_t refresh_us, uint64_t *last_draw_us);

#endif
