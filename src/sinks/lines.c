/* One line per finished flow, for -v and headless use: text for people, JSON for scripts. */
#include "lines.h"

#include <inttypes.h>
#include <stdlib.h>

#include "classify.h"
#include "json.h"
#include "sink_kinds.h"

struct lines {
	FILE *out;
	bool json;
	bool weak_shown; /* a line's app carried RECORD_WEAK_MARK: the legend closes the run */
};

static const char *txt(const char *s) { return s ? s : "-"; }

static void json_str(FILE *o, const char *key, const char *v)
{
	fprintf(o, "\"%s\":", key);
	json_string(o, v);
}

static void json_int(FILE *o, const char *key, int64_t v)
{
	if (v == NULL64)
		fprintf(o, "\"%s\":null", key);
	else
		fprintf(o, "\"%s\":%" PRId64, key, v);
}

static int lines_flow(void *self, const struct flow_record *r)
{
	struct lines *l = self;
	FILE *o = l->out;
	if (r->update)
		return 0; /* printed when its verdicts became final */
	if (!l->json) {
		char cw[24] = "-", sw[24] = "-";
		if (r->c.syn_win != NULL64)
			snprintf(cw, sizeof(cw), "%" PRId64, r->c.syn_win);
		if (r->s.syn_win != NULL64)
			snprintf(sw, sizeof(sw), "%" PRId64, r->s.syn_win);
		bool weak = r->app_proto[0] && record_dpi_weak(r->dpi_method);
		l->weak_shown |= weak;
		fprintf(o, "%s.%d > %s.%d %s %s %s%s syn_win %s/%s rwnd %s/%s server %s %s client %s %s\n",
		        r->client_ip, r->client_port, r->server_ip, r->server_port,
		        r->transport == 17 ? "quic" : "tcp", classify_handshake_name((enum handshake_kind)r->handshake),
		        r->app_proto[0] ? r->app_proto : "-", weak ? RECORD_WEAK_MARK : "", cw, sw,
		        txt(classify_rwnd_name((enum rwnd_class)r->c.rwnd_class)),
		        txt(classify_rwnd_name((enum rwnd_class)r->s.rwnd_class)),
		        r->s.iw_class[0] ? r->s.iw_class : "-", txt(classify_limit_name((enum ff_limit)r->s.iw_limit)),
		        r->c.iw_class[0] ? r->c.iw_class : "-", txt(classify_limit_name((enum ff_limit)r->c.iw_limit)));
		return ferror(o) ? -1 : 0;
	}
	/* every column of the flows table, named as there, typed as there */
	for (unsigned c = 0; c < record_ncolumns; c++) {
		int64_t v;
		const char *t;
		fputc(c ? ',' : '{', o);
		if (record_value(r, c, &v, &t) == COL_INT)
			json_int(o, record_columns[c].name, v);
		else
			json_str(o, record_columns[c].name, t);
	}
	fputs("}\n", o);
	return ferror(o) ? -1 : 0;
}

static int lines_nop(void *self, const struct run_info *run)
{
	(void)self;
	(void)run;
	return 0;
}

/* The run's end: the legend of the mark, when a line carried it. */
static int lines_end(void *self, const struct run_info *run)
{
	struct lines *l = self;
	(void)run;
	if (l->weak_shown && fprintf(l->out, "%s\n", RECORD_WEAK_LEGEND) < 0)
		return -1;
	return 0;
}

static int lines_tick(void *self)
{
	struct lines *l = self;
	return fflush(l->out) == 0 ? 0 : -1;
}

static void lines_close(void *self) { free(self); }

static const char *lines_error(void *self)
{
	(void)self;
	return "standard output: write error";
}

static const struct sink_ops lines_ops = {
	.name = "lines",
	.begin = lines_nop,
	.flow = lines_flow,
	.tick = lines_tick,
	.end = lines_end,
	.close = lines_close,
	.error = lines_error,
};

struct sink lines_sink(FILE *out, bool json)
{
	struct sink k = { NULL, NULL };
	struct lines *l = calloc(1, sizeof(*l));
	if (!l)
		return k;
	l->out = out;
	l->json = json;
	k.ops = &lines_ops;
	k.self = l;
	return k;
}

/* ---- the registry's "lines" kind (sink_kinds.h): -v, --json, or a headless live run ---- */

static bool kind_wanted(const struct sink_conf *c) { return c->lines; }

static int kind_open(const struct sink_conf *c, struct sink *out, char *err, size_t errlen)
{
	(void)err;
	(void)errlen;
	*out = lines_sink(stdout, c->json); /* out of memory: no lines, as before */
	return 0;
}

const struct sink_kind lines_kind = {
	.name = "lines", .wanted = kind_wanted, .open = kind_open,
};
