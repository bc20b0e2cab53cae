/* sink_kinds: the registry of the kinds of sink, a line each, in the order the run opens them
 * (the primary kinds first, a terminal kind last). SINK_KIND_LIST's line X(NAME) names the
 * const struct sink_kind NAME_kind (sink.h) that the kind's own file defines, with its
 * wanted() and open(); sink.c makes its table of them (sink_kind_at).
 *
 * Adding a sink: its file in src/sinks/ (its sink_ops and its NAME_kind; the file includes this
 * header, so that the compiler checks the definition against the declaration) and one line
 * here (README: "Adding a source, a sink or a column"). */
#ifndef IWSCOPE_SINK_KINDS_H
#define IWSCOPE_SINK_KINDS_H

#include "sink.h"

#define SINK_KIND_LIST(X)                                                                     \
	X(store)  /* "sqlite": an SQLite file (-o FILE), store.c */                             \
	X(pgsink) /* "postgresql": postgresql://, through a spool, pgsink.c (and outbox.c) */   \
	X(chsink) /* "clickhouse": clickhouse://, through a spool, chsink.c (and outbox.c) */   \
	X(lines)  /* "lines": a line or JSON line per flow on stdout, lines.c (and json.c) */   \
	X(ui)     /* "dashboard": the ncurses dashboard, the terminal kind, ui.c */

#define SINK_KIND_DECLARE(name) extern const struct sink_kind name##_kind;
SINK_KIND_LIST(SINK_KIND_DECLARE)
#undef SINK_KIND_DECLARE

#endif
