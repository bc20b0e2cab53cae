/* One line per finished flow, for -v and headless use: text for people, JSON for scripts. */
#include "lines.h"

#include <inttypes.h>
#include <stdlib.h>

struct lines {
	FILE *out;
	bool json;
};

static const char *txt(const char *s) { return s ? s : "-"; }

static void json_str(FILE *o, const char *key, const char *v)
{
	fprintf(o, ",\"%s\":", key);
	if (!v) {
		fputs("null", o);
		return;
	}
	fputc('"', o);
	for (; *v; v++) {
		unsigned char ch = (unsigned char)*v;
		if (ch == '"' || ch == '\\')
			fprintf(o, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(o, "\\u%04x", ch);
		else
			fputc(ch, o);
	}
	fputc('"', o);
}

static void json_int(FILE *o, const char *key, int64_t v)
{
	if (v == NULL64)
		fprintf(o, ",\"%s\":null", key);
	else
		fprintf(o, ",\"%s\":%" PRId64, key, v);
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
		fprintf(o, "%s.%d > %s.%d %s %s syn_win %s/%s rwnd %s/%s server %s %s client %s %s\n",
		        r->client_ip, r->client_port, r->server_ip, r->server_port, r->handshake,
		        txt(r->app_proto), cw, sw, txt(r->c.rwnd_class), txt(r->s.rwnd_class),
		        txt(r->s.iw_class), txt(r->s.iw_limit), txt(r->c.iw_class), txt(r->c.iw_limit));
		return ferror(o) ? -1 : 0;
	}
	fprintf(o, "{\"ts_us\":%" PRId64, r->ts_us);
	json_str(o, "client_ip", r->client_ip);
	json_int(o, "client_port", r->client_port);
	json_str(o, "server_ip", r->server_ip);
	json_int(o, "server_port", r->server_port);
	json_str(o, "handshake", r->handshake);
	json_int(o, "rtt_us", r->rtt_us);
	json_int(o, "c_syn_win", r->c.syn_win);
	json_int(o, "s_syn_win", r->s.syn_win);
	json_int(o, "c_mss", r->c.mss);
	json_int(o, "s_mss", r->s.mss);
	json_str(o, "c_rwnd_class", r->c.rwnd_class);
	json_str(o, "s_rwnd_class", r->s.rwnd_class);
	json_int(o, "s_iw_segs", r->s.iw_segs);
	json_int(o, "s_iw_bytes", r->s.iw_bytes);
	json_str(o, "s_iw_limit", r->s.iw_limit);
	json_str(o, "s_iw_class", r->s.iw_class);
	json_int(o, "c_iw_segs", r->c.iw_segs);
	json_str(o, "c_iw_limit", r->c.iw_limit);
	json_str(o, "c_iw_class", r->c.iw_class);
	json_str(o, "s_iw_rule", r->s.iw_rule);
	json_str(o, "s_iw_end", r->s.iw_end);
	json_str(o, "s_iw_next", r->s.iw_next);
	json_int(o, "s_iw_pause_us", r->s.iw_pause_us);
	json_str(o, "c_iw_rule", r->c.iw_rule);
	json_str(o, "c_iw_end", r->c.iw_end);
	json_str(o, "c_iw_next", r->c.iw_next);
	json_int(o, "c_iw_pause_us", r->c.iw_pause_us);
	json_str(o, "app_proto", r->app_proto);
	json_str(o, "server_name", r->server_name);
	json_str(o, "end_reason", r->end_reason);
	fputs("}\n", o);
	return ferror(o) ? -1 : 0;
}

static int lines_nop(void *self, const struct run_info *run)
{
	(void)self;
	(void)run;
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
	.end = lines_nop,
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
