/* The run as a plan: the command line -> source, sinks and threads; opening each, closing all. */
#include "plan.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "exitcode.h"
#include "source.h"

/* The registry of sources (source.h), in the order they are asked. */
#define SOURCE_KIND_ENTRY(name) &source_##name##_kind,
static const struct source_kind *const sources[] = { SOURCE_KIND_LIST(SOURCE_KIND_ENTRY) };
#undef SOURCE_KIND_ENTRY

/* What the run reads, as runs.source and the dashboard say it: the files, or the interfaces,
 * separated by spaces, every one whole (malloc'd; NULL when out of memory). */
static char *source_text(const struct config *cfg)
{
	const char *const *names = cfg->iface ? cfg->ifaces : cfg->files;
	unsigned count = cfg->iface ? cfg->nifaces : cfg->nfiles;
	size_t len = 1;
	for (unsigned i = 0; i < count; i++)
		len += strlen(names[i]) + 1;
	char *buf = malloc(len), *o = buf;
	if (!buf)
		return NULL;
	*o = '\0';
	for (unsigned i = 0; i < count; i++)
		o += sprintf(o, "%s%s", i ? " " : "", names[i]);
	return buf;
}

void plan_note_skipped(struct plan *p, const char *path, const char *why)
{
	size_t add = strlen(path) + strlen(why) + 4;
	char *grown = realloc(p->skipped, p->skipped_len + add);
	if (!grown)
		return; /* said on stderr all the same */
	p->skipped = grown;
	p->skipped_len += (size_t)sprintf(grown + p->skipped_len, "%s%s: %s",
	                                  p->skipped_len ? "\n" : "", path, why);
}

void plan_from_config(struct plan *p, const struct config *cfg)
{
	memset(p, 0, sizeof(*p));
	p->cfg = cfg;
	for (unsigned i = 0; i < cfg->nfiles; i++)
		p->from_stdin |= !strcmp(cfg->files[i], "-");
	/* the first kind that is wanted; the last, files, wants anything */
	for (size_t i = 0; i < sizeof(sources) / sizeof(sources[0]) && !p->source; i++)
		if (sources[i]->wanted(p))
			p->source = sources[i];
	const struct source_kind *k = p->source;
	/* files: nDPI and the sinks on a second thread; live and replay stay on one, next to the
	 * dashboard that shows the flows as they are written */
	p->threaded = k->bulk && cfg->threads > 1;
	p->source_text = source_text(cfg);
	if (!p->source_text)
		p->source_text = calloc(1, 1);
	bool want_ui = k->streaming && !cfg->no_ui && isatty(STDOUT_FILENO) && isatty(STDIN_FILENO);
	p->sc = (struct sink_conf){ .uri = cfg->db, .spool = cfg->spool, .source = p->source_text,
		.quiet = cfg->quiet, .bulk = k->bulk, .json = cfg->json,
		/* headless: a line per finished flow */
		.lines = cfg->verbose || (k->streaming && !want_ui),
		.dashboard = want_ui, .color = !cfg->no_color };
	/* Rows of flows still open (early rows) are for live capture, replay and a pipe: a file is
	 * read faster than its flows lasted, and its rows all arrive within the run anyway, each
	 * written once. */
	p->eo = (struct engine_opts){ .flow_cap = cfg->flow_cap, .force_timing = cfg->force_timing,
		.threaded = p->threaded, .early_rows = !k->bulk,
		.source_files = cfg->iface ? NULL : p->files };
}

/* capture files: those that cannot be opened are reported now and skipped; when none can, no
 * database is created or touched (standard input is read as it comes) */
int plan_check_files(struct plan *p)
{
	const struct config *cfg = p->cfg;
	if (!p->source_text)
		return EXIT_RUNTIME;
	/* a folder is no capture: said before anything is opened or created */
	for (unsigned i = 0; i < cfg->nfiles; i++) {
		struct stat st;
		if (strcmp(cfg->files[i], "-") && stat(cfg->files[i], &st) == 0 && S_ISDIR(st.st_mode)) {
			fprintf(stderr, "iwscope: %s: is a directory, not a capture file\n", cfg->files[i]);
			return EXIT_RUNTIME;
		}
	}
	for (unsigned i = 0; i < cfg->nfiles; i++) {
		/* a pipe, a FIFO, /dev/stdin: opening it would consume it, so it is read as it
		 * comes and its problems are reported then */
		struct stat st;
		if (!strcmp(cfg->files[i], "-") ||
		    (stat(cfg->files[i], &st) == 0 && !S_ISREG(st.st_mode))) {
			p->files[p->nfiles++] = cfg->files[i];
			continue;
		}
		int filter_error = 0;
		char why[512];
		capture_file *cf = capture_file_open(cfg->files[i], cfg->filter, &filter_error, why,
		                                     sizeof(why));
		if (filter_error)
			return EXIT_USAGE;
		if (cf) {
			p->files[p->nfiles++] = cfg->files[i];
		} else {
			p->unreadable++;
			plan_note_skipped(p, cfg->files[i], why);
		}
		capture_file_close(cf);
	}
	if (cfg->force_timing)
		snprintf(p->options, sizeof(p->options), "timing");
	return p->nfiles ? 0 : EXIT_RUNTIME;
}

int plan_open_source(struct plan *p)
{
	return p->source->open(p);
}

/* Opens the kind k into the next slot (nothing when it is not available here). 0 or -1. */
static int open_kind(struct plan *p, const struct sink_kind *k)
{
	char err[1100];
	struct sink s = { NULL, NULL };
	if (p->nsinks == PLAN_SINKS_MAX || k->open(&p->sc, &s, err, sizeof(err)) != 0) {
		fprintf(stderr, "iwscope: %s\n", p->nsinks == PLAN_SINKS_MAX ? "too many sinks" : err);
		return -1;
	}
	if (!s.ops)
		return 0;
	p->kinds[p->nsinks] = k;
	p->sinks[p->nsinks++] = s;
	if (k->terminal)
		p->dash = s.self; /* the dashboard is the one terminal kind (sink.c) */
	return 0;
}

int plan_open_sinks(struct plan *p)
{
	bool primary = false;
	const struct sink_kind *k;
	for (unsigned i = 0; (k = sink_kind_at(i)); i++) {
		if (k->terminal || (k->primary && primary) || !k->wanted(&p->sc))
			continue;
		if (open_kind(p, k) != 0)
			return EXIT_RUNTIME;
		primary |= k->primary;
	}
	return 0;
}

int plan_open_dpi(struct plan *p)
{
	const struct config *cfg = p->cfg;
	if (cfg->no_dpi || p->source->endless) /* live: each worker opens its own */
		return 0;
	/* with a stage, nDPI starts up there while this thread reads the first packets */
	p->dpi = p->threaded ? dpi_new(cfg->dpi_packets) : dpi_open(cfg->dpi_packets);
	if (p->dpi)
		return 0;
	fprintf(stderr, "iwscope: cannot initialise nDPI\n");
	return EXIT_RUNTIME;
}

int plan_begin(struct plan *p, const struct run_info *run)
{
	for (unsigned i = 0; i < p->nsinks; i++)
		if (p->sinks[i].ops->begin(p->sinks[i].self, run) != 0) {
			fprintf(stderr, "iwscope: %s\n", p->sinks[i].ops->error(p->sinks[i].self));
			return EXIT_RUNTIME;
		}
	return 0;
}

/* Gives path (and its -wal, -shm) to pw's user. 0 or -1 (said). */
static int give_file(const char *path, const struct passwd *pw, const char *user)
{
	const char *suffix[] = { "", "-wal", "-shm" };
	for (size_t i = 0; i < 3; i++) {
		char name[1100];
		snprintf(name, sizeof(name), "%s%s", path, suffix[i]);
		if (chown(name, pw->pw_uid, pw->pw_gid) != 0 && errno != ENOENT) {
			fprintf(stderr, "iwscope: %s: cannot give it to %s: %s\n", name, user, strerror(errno));
			return -1;
		}
	}
	return 0;
}

/* Gives the sinks' files to the user and becomes that user (tcpdump -Z). */
int plan_drop_privileges(struct plan *p)
{
	const char *user = p->cfg->user;
	if (!user)
		return 0;
	struct passwd *pw = getpwnam(user);
	if (!pw) {
		fprintf(stderr, "iwscope: -Z %s: no such user\n", user);
		return EXIT_RUNTIME;
	}
	for (unsigned i = 0; i < p->nsinks; i++) {
		const char *file = p->kinds[i]->file ? p->kinds[i]->file(&p->sc) : NULL;
		if (file && give_file(file, pw, user) != 0)
			return EXIT_RUNTIME;
	}
	if (initgroups(pw->pw_name, pw->pw_gid) != 0 || setgid(pw->pw_gid) != 0 ||
	    setuid(pw->pw_uid) != 0) {
		fprintf(stderr, "iwscope: -Z %s: %s\n", user, strerror(errno));
		return EXIT_RUNTIME;
	}
	if (setuid(0) == 0) { /* must be impossible now */
		fprintf(stderr, "iwscope: -Z %s: root could be regained; stopping\n", user);
		return EXIT_RUNTIME;
	}
	return 0;
}

void plan_open_terminal(struct plan *p, const struct run_info *run)
{
	const struct sink_kind *k;
	for (unsigned i = 0; (k = sink_kind_at(i)); i++) {
		if (!k->terminal || !k->wanted(&p->sc) || open_kind(p, k) != 0 || !p->dash)
			continue;
		struct sink *s = &p->sinks[p->nsinks - 1];
		s->ops->begin(s->self, run);
	}
}

int plan_start(struct plan *p)
{
	return p->source->start(p);
}

int plan_start_engine(struct plan *p)
{
	if (!(p->eng = engine_new(&p->eo, p->sinks, p->nsinks, p->dpi))) {
		fprintf(stderr, "iwscope: out of memory for the flow table\n");
		return EXIT_RUNTIME;
	}
	return 0;
}

void plan_release_terminal(struct plan *p, const struct run_info *run)
{
	unsigned kept = 0;
	for (unsigned i = 0; i < p->nsinks; i++) {
		if (p->kinds[i]->terminal) {
			p->sinks[i].ops->end(p->sinks[i].self, run);
			p->sinks[i].ops->close(p->sinks[i].self);
			continue;
		}
		p->kinds[kept] = p->kinds[i];
		p->sinks[kept++] = p->sinks[i];
	}
	p->nsinks = kept;
	p->dash = NULL;
}

const char *plan_sink_error(const struct plan *p)
{
	for (unsigned i = 0; i < p->nsinks; i++) {
		const char *e = p->sinks[i].ops->error(p->sinks[i].self);
		if (e && *e)
			return e;
	}
	return "a sink failed";
}

int plan_end(struct plan *p, const struct run_info *run, bool best_effort)
{
	for (unsigned i = 0; i < p->nsinks; i++) {
		if (p->sinks[i].ops->end(p->sinks[i].self, run) == 0 || best_effort)
			continue;
		fprintf(stderr, "iwscope: %s\n", p->sinks[i].ops->error(p->sinks[i].self));
		return EXIT_RUNTIME;
	}
	return 0;
}

void plan_close(struct plan *p)
{
	livecap_free(p->lc);
	engine_free(p->eng);
	for (unsigned i = p->nsinks; i-- > 0;)
		p->sinks[i].ops->close(p->sinks[i].self);
	dpi_close(p->dpi);
	for (unsigned i = 0; i < p->nlive; i++)
		capture_live_close(p->live[i]);
	free(p->source_text);
	free(p->skipped);
	memset(p, 0, sizeof(*p));
}
