/* ClickHouse over HTTP through libcurl: the URI and its password, requests with ClickHouse's
 * errors as one line, failures told apart (try later vs. give up), the schema created on first
 * use, batches inserted as TabSeparated, query results streamed back row by row. */
#include "ch.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CURL_DISABLE_TYPECHECK
#include <curl/curl.h>

#include "config.h"
#include "schema.h"

extern const char ch_schema_sql[]; /* build/schema_sql.c, from schema/clickhouse.sql */

/* libcurl is loaded when first needed, not linked, as libpq is (pg.c): most runs write SQLite
 * and should not pay for its start-up. X(symbol, field). */
#define CURL_FUNCS(X) X(curl_global_init, global_init) X(curl_easy_init, init)                \
	X(curl_easy_setopt, setopt) X(curl_easy_perform, perform) X(curl_easy_getinfo, getinfo) \
	X(curl_easy_cleanup, cleanup) X(curl_easy_strerror, strerror) X(curl_easy_reset, reset) \
	X(curl_slist_append, slist_append) X(curl_slist_free_all, slist_free_all)               \
	X(curl_easy_escape, escape) X(curl_free, free) X(curl_version, version)

static struct {
#define CU_POINTER(sym, field) __typeof__(sym) *field;
	CURL_FUNCS(CU_POINTER)
#undef CU_POINTER
	bool loaded;
	char why[256];
} cu;

static void cu_load_once(void)
{
	void *h = dlopen(LIBCURL_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(cu.why, sizeof(cu.why), "%s", dlerror());
		return;
	}
#define CU_RESOLVE(sym, field)                                                                  \
	if (!(cu.field = (__typeof__(cu.field))dlsym(h, #sym))) {                               \
		snprintf(cu.why, sizeof(cu.why), "%s: no %s", LIBCURL_SONAME, #sym);             \
		dlclose(h);                                                                     \
		return;                                                                         \
	}
	CURL_FUNCS(CU_RESOLVE)
#undef CU_RESOLVE
	if (cu.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		snprintf(cu.why, sizeof(cu.why), "curl_global_init failed");
		return;
	}
	cu.loaded = true;
}

static bool cu_load(char *err, size_t errlen)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, cu_load_once);
	if (!cu.loaded && err)
		snprintf(err, errlen, "cannot load the HTTP client library for ClickHouse: %s", cu.why);
	return cu.loaded;
}

const char *ch_libcurl_version(void)
{
	return cu_load(NULL, 0) ? cu.version() : "not found";
}

/* ---- the URI ---- */

struct target {
	char user[128], password[256], host[256], db[128];
	unsigned port;
	char shown[600]; /* clickhouse://USER@HOST:PORT/DB: what messages say (no password) */
	char base[700];  /* http://HOST:PORT/?database=DB */
};

bool ch_is_uri(const char *t) { return !strncmp(t, "clickhouse://", 13); }

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
	       : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* Copies [s, e) into out percent-decoded. 0, or -1 when it does not fit or is malformed. */
static int decode(const char *s, const char *e, char *out, size_t len)
{
	size_t n = 0;
	for (; s < e; s++) {
		int c = (unsigned char)*s;
		if (c == '%') {
			if (e - s < 3 || hexval(s[1]) < 0 || hexval(s[2]) < 0)
				return -1;
			c = hexval(s[1]) * 16 + hexval(s[2]);
			s += 2;
		}
		if (n + 1 >= len || c == 0)
			return -1;
		out[n++] = (char)c;
	}
	out[n] = '\0';
	return 0;
}

/* The first line of file path into out, without its newline. 0 or -1. */
static int read_secret(const char *path, char *out, size_t len)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	int rc = fgets(out, (int)len, f) ? 0 : -1;
	fclose(f);
	if (rc == 0)
		out[strcspn(out, "\r\n")] = '\0';
	else
		out[0] = '\0';
	return rc;
}

static int parse_uri(const char *uri, struct target *t, char *err, size_t errlen)
{
	memset(t, 0, sizeof(*t));
	const char *p = uri + 13, *slash = strchr(p, '/');
	const char *q = slash ? strchr(slash, '?') : NULL;
	const char *dbend = q ? q : slash ? slash + strlen(slash) : NULL;
	const char *at = slash ? memchr(p, '@', (size_t)(slash - p)) : NULL;
	if (!slash || dbend == slash + 1) {
		snprintf(err, errlen, "%.*s: give the database: clickhouse://[USER[:PASSWORD]@]HOST[:PORT]/DB",
		         (int)strcspn(uri, "@") < (int)strlen(uri) ? 13 : (int)strlen(uri), uri);
		return -1;
	}
	bool have_password = false;
	snprintf(t->user, sizeof(t->user), "default");
	if (at) {
		const char *colon = memchr(p, ':', (size_t)(at - p));
		if (decode(p, colon ? colon : at, t->user, sizeof(t->user)) != 0 ||
		    (colon && decode(colon + 1, at, t->password, sizeof(t->password)) != 0))
			goto bad;
		have_password = colon != NULL;
		p = at + 1;
	}
	const char *hend = slash, *port = NULL;
	if (*p == '[') { /* an IPv6 literal */
		const char *rb = memchr(p, ']', (size_t)(slash - p));
		if (!rb)
			goto bad;
		port = rb[1] == ':' ? rb + 2 : NULL;
		hend = rb + 1;
	} else {
		const char *colon = memchr(p, ':', (size_t)(slash - p));
		if (colon) {
			port = colon + 1;
			hend = colon;
		}
	}
	if (hend == p || (size_t)(hend - p) >= sizeof(t->host))
		goto bad;
	memcpy(t->host, p, (size_t)(hend - p));
	t->port = CH_DEFAULT_PORT;
	if (port) {
		char *e;
		unsigned long v = strtoul(port, &e, 10);
		if (e != slash || v == 0 || v > 65535)
			goto bad;
		t->port = (unsigned)v;
	}
	if (decode(slash + 1, dbend, t->db, sizeof(t->db)) != 0 || strpbrk(t->db, "`'\"\\ "))
		goto bad;
	char pwfile[512] = "";
	for (const char *kv = q ? q + 1 : NULL; kv && *kv;) {
		const char *amp = strchr(kv, '&'), *end = amp ? amp : kv + strlen(kv);
		if (!strncmp(kv, "password_file=", 14)) {
			if (decode(kv + 14, end, pwfile, sizeof(pwfile)) != 0)
				goto bad;
		} else {
			snprintf(err, errlen, "clickhouse://%s@%s:%u/%s: unknown setting %.*s (the URI takes "
			         "password_file=PATH)", t->user, t->host, t->port, t->db, (int)(end - kv), kv);
			return -1;
		}
		kv = amp ? amp + 1 : NULL;
	}
	snprintf(t->shown, sizeof(t->shown), "clickhouse://%s@%s:%u/%s", t->user, t->host, t->port, t->db);
	snprintf(t->base, sizeof(t->base), "http://%s:%u/?database=%s", t->host, t->port, t->db);
	const char *env = getenv("CLICKHOUSE_PASSWORD");
	if (!pwfile[0] && getenv("CLICKHOUSE_PASSWORD_FILE"))
		snprintf(pwfile, sizeof(pwfile), "%s", getenv("CLICKHOUSE_PASSWORD_FILE"));
	if (have_password)
		return 0;
	if (env) {
		snprintf(t->password, sizeof(t->password), "%s", env);
	} else if (pwfile[0] && read_secret(pwfile, t->password, sizeof(t->password)) != 0) {
		snprintf(err, errlen, "%s: cannot read the password file %s", t->shown, pwfile);
		return -1;
	}
	return 0;
bad:
	snprintf(err, errlen, "not a ClickHouse URI: clickhouse://[USER[:PASSWORD]@]HOST[:PORT]/DB");
	return -1;
}

void ch_shown(const char *uri, char *out, size_t len)
{
	struct target t;
	char err[600];
	if (parse_uri(uri, &t, err, sizeof(err)) == 0)
		snprintf(out, len, "%s", t.shown);
	else
		snprintf(out, len, "clickhouse://");
	memset(&t, 0, sizeof(t));
}

/* ---- requests ---- */

/* A result's rows, parsed as they arrive (TabSeparatedWithNamesAndTypes). */
struct reader {
	db_row_fn row;
	void *arg;
	bool stopped;
	int ncols;
	char **names;
	enum db_type *types;
	int lines; /* header lines seen: names, then types */
	char *line;
	size_t len, cap;
	const char **vals;
	enum db_type *vtypes;
	bool nomem;
};

struct chdb {
	CURL *curl;
	struct target t;
	struct curl_slist *headers;
	long status;     /* HTTP status of the last request */
	CURLcode code;   /* curl's result of the last request */
	int ch_code;     /* ClickHouse's error code, 0 without one */
	char body[2048]; /* the start of an error's body */
	size_t body_len;
	struct reader *rd; /* the result's reader, if any */
	char err[1200];
};

const char *ch_error(const chdb *db) { return db->err; }

/* ClickHouse's "Code: 193, e.displayText() = DB::Exception: Wrong password for user iw,
 * e.what() = DB::Exception" as "Wrong password for user iw (code 193)". */
static void ch_message(chdb *db, const char *what)
{
	db->body[db->body_len < sizeof(db->body) ? db->body_len : sizeof(db->body) - 1] = '\0';
	const char *b = db->body, *m = strstr(b, "DB::Exception: ");
	db->ch_code = !strncmp(b, "Code: ", 6) ? atoi(b + 6) : 0;
	m = m ? m + 15 : b;
	size_t n = strcspn(m, "\n");
	const char *tail = strstr(m, ", e.what() = ");
	if (tail && (size_t)(tail - m) < n)
		n = (size_t)(tail - m);
	while (n && (m[n - 1] == ' ' || m[n - 1] == '.'))
		n--;
	if (db->ch_code)
		snprintf(db->err, sizeof(db->err), "%s: %s: %.*s (code %d)", db->t.shown, what, (int)n, m,
		         db->ch_code);
	else
		snprintf(db->err, sizeof(db->err), "%s: %s: HTTP %ld %.*s", db->t.shown, what, db->status,
		         (int)n, m);
}

static int reader_line(struct reader *r, char *line);

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
	chdb *db = arg;
	size_t n = size * nmemb;
	long status = 0;
	cu.getinfo(db->curl, CURLINFO_RESPONSE_CODE, &status);
	if (status != 200 || !db->rd) { /* an error (or an answer nobody reads): keep its start */
		size_t room = sizeof(db->body) - 1 - db->body_len;
		size_t take = n < room ? n : room;
		memcpy(db->body + db->body_len, data, take);
		db->body_len += take;
		return n;
	}
	struct reader *r = db->rd;
	for (size_t i = 0; i < n && !r->stopped; i++) {
		if (r->len + 1 >= r->cap) {
			size_t cap = r->cap ? r->cap * 2 : 65536;
			char *l = realloc(r->line, cap);
			if (!l) {
				r->nomem = true;
				return 0;
			}
			r->line = l;
			r->cap = cap;
		}
		if (data[i] != '\n') {
			r->line[r->len++] = data[i];
			continue;
		}
		r->line[r->len] = '\0';
		r->len = 0;
		if (reader_line(r, r->line) != 0)
			return 0;
	}
	return n;
}

/* POSTs body to the server with extra URL parameters (escaped already), the result read by rd
 * (or kept for an error). 0 on HTTP 200; else -1 with err set ("what: why"). */
static int post(chdb *db, const char *params, const char *body, size_t len, struct reader *rd,
                const char *what)
{
	char url[2048];
	if (snprintf(url, sizeof(url), "%s%s", db->t.base, params ? params : "") >= (int)sizeof(url)) {
		snprintf(db->err, sizeof(db->err), "%s: %s: request too long", db->t.shown, what);
		return -1;
	}
	CURL *c = db->curl;
	cu.reset(c);
	cu.setopt(c, CURLOPT_URL, url);
	cu.setopt(c, CURLOPT_HTTPHEADER, db->headers);
	cu.setopt(c, CURLOPT_POST, 1L);
	cu.setopt(c, CURLOPT_POSTFIELDS, body);
	cu.setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	cu.setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	cu.setopt(c, CURLOPT_WRITEDATA, db);
	cu.setopt(c, CURLOPT_CONNECTTIMEOUT, CH_CONNECT_TIMEOUT_S);
	cu.setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
	cu.setopt(c, CURLOPT_LOW_SPEED_TIME, CH_STALL_S);
	cu.setopt(c, CURLOPT_NOSIGNAL, 1L);
	cu.setopt(c, CURLOPT_USERAGENT, "iwscope");
	db->rd = rd;
	db->body_len = 0;
	db->status = 0;
	db->ch_code = 0;
	db->code = cu.perform(c);
	cu.getinfo(c, CURLINFO_RESPONSE_CODE, &db->status);
	db->rd = NULL;
	if (rd && rd->nomem) {
		snprintf(db->err, sizeof(db->err), "%s: %s: out of memory", db->t.shown, what);
		return -1;
	}
	if (db->code == CURLE_WRITE_ERROR && rd && rd->stopped)
		return 0;
	if (db->code != CURLE_OK) {
		snprintf(db->err, sizeof(db->err), "%s: %s: %s", db->t.shown, what, cu.strerror(db->code));
		return -1;
	}
	if (db->status != 200) {
		ch_message(db, what);
		return -1;
	}
	return 0;
}

int ch_exec(chdb *db, const char *sql, const char *what)
{
	return post(db, NULL, sql, strlen(sql), NULL, what);
}

/* ---- results ---- */

static enum db_type ch_type(const char *t)
{
	if (!strncmp(t, "Nullable(", 9))
		t += 9;
	if (!strncmp(t, "Int", 3) || !strncmp(t, "UInt", 4))
		return DB_INT;
	if (!strncmp(t, "Float", 5) || !strncmp(t, "Decimal", 7))
		return DB_REAL;
	return DB_TEXT;
}

/* Splits a TabSeparated line in place into fields, unescaped; NULL for \N. The count, or -1
 * when it has more than max. */
static int split_line(char *line, const char **vals, int max)
{
	int n = 0;
	char *f = line;
	for (;;) {
		if (n == max)
			return -1;
		char *end = strchr(f, '\t');
		if (end)
			*end = '\0';
		if (!strcmp(f, "\\N")) {
			vals[n++] = NULL;
		} else {
			char *o = f;
			for (char *s = f; *s; s++) {
				if (*s != '\\' || !s[1]) {
					*o++ = *s;
					continue;
				}
				switch (*++s) {
				case 'n': *o++ = '\n'; break;
				case 't': *o++ = '\t'; break;
				case 'r': *o++ = '\r'; break;
				case 'b': *o++ = '\b'; break;
				case 'f': *o++ = '\f'; break;
				case '0': *o++ = '\0'; break;
				default: *o++ = *s; /* \\ \' and the rest: the character itself */
				}
			}
			*o = '\0';
			vals[n++] = f;
		}
		if (!end)
			return n;
		f = end + 1;
	}
}

#define CH_MAX_COLS 256

static int reader_line(struct reader *r, char *line)
{
	if (r->lines < 2) {
		const char *vals[CH_MAX_COLS];
		int n = split_line(line, vals, CH_MAX_COLS);
		if (n < 0)
			return -1;
		if (r->lines++ == 0) {
			r->ncols = n;
			r->names = calloc((size_t)n, sizeof(*r->names));
			r->types = calloc((size_t)n, sizeof(*r->types));
			r->vals = calloc((size_t)n, sizeof(*r->vals));
			r->vtypes = calloc((size_t)n, sizeof(*r->vtypes));
			if (!r->names || !r->types || !r->vals || !r->vtypes)
				goto oom;
			for (int i = 0; i < n; i++)
				if (!(r->names[i] = strdup(vals[i] ? vals[i] : "")))
					goto oom;
			return 0;
		}
		for (int i = 0; i < n && i < r->ncols; i++)
			r->types[i] = ch_type(vals[i] ? vals[i] : "");
		if (r->row(r->arg, r->ncols, (const char *const *)r->names, NULL, NULL) != 0)
			r->stopped = true;
		return r->stopped ? -1 : 0;
	}
	int n = split_line(line, r->vals, r->ncols);
	if (n != r->ncols)
		return -1; /* not a row of this result: reported as a failed read */
	for (int i = 0; i < n; i++)
		r->vtypes[i] = r->vals[i] ? r->types[i] : DB_NULL;
	if (r->row(r->arg, r->ncols, (const char *const *)r->names, r->vals, r->vtypes) != 0) {
		r->stopped = true;
		return -1;
	}
	return 0;
oom:
	r->nomem = true;
	return -1;
}

static void reader_free(struct reader *r)
{
	for (int i = 0; r->names && i < r->ncols; i++)
		free(r->names[i]);
	free(r->names);
	free(r->types);
	free(r->vals);
	free(r->vtypes);
	free(r->line);
}

int ch_query(chdb *db, const char *sql, db_row_fn row, void *arg)
{
	size_t n = strlen(sql);
	char *q = malloc(n + 64);
	if (!q) {
		snprintf(db->err, sizeof(db->err), "%s: out of memory", db->t.shown);
		return -1;
	}
	snprintf(q, n + 64, "%s FORMAT TabSeparatedWithNamesAndTypes", sql);
	struct reader r = { .row = row, .arg = arg };
	/* the whole result first: an error half way through is an HTTP error, not a cut table */
	int rc = post(db, "&wait_end_of_query=1&max_read_buffer_size=" CH_READ_BUFFER, q, strlen(q), &r,
	              "query failed");
	if (rc == 0 && r.lines < 2 && !r.stopped) {
		snprintf(db->err, sizeof(db->err), "%s: query failed: no result", db->t.shown);
		rc = -1;
	}
	reader_free(&r);
	free(q);
	return rc;
}

/* ---- batches ---- */

struct text {
	char *p;
	size_t len, cap;
	bool nomem;
};

static void put(struct text *b, const char *s, size_t n)
{
	if (b->nomem)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 65536;
		while (cap < b->len + n + 1)
			cap *= 2;
		char *p = realloc(b->p, cap);
		if (!p) {
			b->nomem = true;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

/* v as a TabSeparated field: \N for NULL, backslash, tab and line ends escaped. */
static void put_field(struct text *b, const char *v)
{
	if (!v) {
		put(b, "\\N", 2);
		return;
	}
	for (const char *s = v;;) {
		size_t plain = strcspn(s, "\\\t\n\r");
		put(b, s, plain);
		s += plain;
		if (!*s)
			return;
		put(b, *s == '\\' ? "\\\\" : *s == '\t' ? "\\t" : *s == '\n' ? "\\n" : "\\r", 2);
		s++;
	}
}

int ch_send_batch(void *arg, const struct db_rows *tables, unsigned ntables)
{
	chdb *db = arg;
	struct text body = { 0 }, query = { 0 };
	int rc = 0;
	for (unsigned i = 0; i < ntables && rc == 0; i++) {
		const struct db_rows *t = &tables[i];
		if (!t->nrows)
			continue;
		if (!schema_table(t->table)) {
			snprintf(db->err, sizeof(db->err), "unknown table %s", t->table);
			rc = -1;
			break;
		}
		body.len = query.len = 0;
		put(&query, "INSERT INTO ", 12);
		put(&query, t->table, strlen(t->table));
		put(&query, " (", 2);
		for (int c = 0; c < t->ncols; c++) {
			if (c)
				put(&query, ",", 1);
			put(&query, t->names[c], strlen(t->names[c]));
		}
		put(&query, ") FORMAT TabSeparated", 21);
		for (unsigned r = 0; r < t->nrows; r++)
			for (int c = 0; c < t->ncols; c++) {
				put_field(&body, t->vals[(size_t)r * (size_t)t->ncols + (size_t)c]);
				put(&body, c + 1 < t->ncols ? "\t" : "\n", 1);
			}
		if (body.nomem || query.nomem) {
			snprintf(db->err, sizeof(db->err), "%s: out of memory", db->t.shown);
			rc = -1;
			break;
		}
		/* the query in the URL, the rows as the body; through a Distributed table the insert
		 * returns once every shard has its rows, so a shard that is down fails the batch and
		 * the spool keeps it */
		char *esc = cu.escape(db->curl, query.p, (int)query.len);
		char *params = esc ? malloc(strlen(esc) + 64) : NULL;
		if (!params) {
			snprintf(db->err, sizeof(db->err), "%s: out of memory", db->t.shown);
			rc = -1;
		} else {
			sprintf(params, "&insert_distributed_sync=1&query=%s", esc);
			rc = post(db, params, body.p, body.len, NULL, "cannot write rows");
		}
		free(params);
		if (esc)
			cu.free(esc);
	}
	free(body.p);
	free(query.p);
	return rc;
}

/* ---- the schema ---- */

char *ch_schema_text(const char *dbname, const char *cluster)
{
	struct text out = { 0 };
	for (const char *line = ch_schema_sql; *line;) {
		size_t n = strcspn(line, "\n");
		const char *l = line, *e = line + n;
		line = *e ? e + 1 : e;
		if (!strncmp(l, "--cluster ", 10)) {
			if (!cluster)
				continue;
			l += 10;
		}
		for (const char *s = l; s < e;) {
			const char *brace = memchr(s, '{', (size_t)(e - s));
			if (!brace) {
				put(&out, s, (size_t)(e - s));
				break;
			}
			put(&out, s, (size_t)(brace - s));
			if (!strncmp(brace, "{db}", 4)) {
				put(&out, dbname, strlen(dbname));
				s = brace + 4;
			} else if (!strncmp(brace, "{local}", 7)) {
				if (cluster)
					put(&out, "_local", 6);
				s = brace + 7;
			} else if (!strncmp(brace, "{cluster}", 9)) {
				put(&out, cluster ? cluster : "", cluster ? strlen(cluster) : 0);
				s = brace + 9;
			} else {
				put(&out, "{", 1);
				s = brace + 1;
			}
		}
		put(&out, "\n", 1);
	}
	if (out.nomem) {
		free(out.p);
		return NULL;
	}
	return out.p;
}

/* Cuts the "--" comments out of sql in place (ClickHouse 18.16 refuses some over HTTP); a
 * "--" inside a quoted string stays. */
static void strip_comments(char *sql)
{
	char *o = sql;
	bool quoted = false;
	for (char *s = sql; *s;) {
		if (*s == '\'' )
			quoted = !quoted;
		if (!quoted && s[0] == '-' && s[1] == '-') {
			s += strcspn(s, "\n");
			continue;
		}
		*o++ = *s++;
	}
	*o = '\0';
}

/* Runs the one-server schema, statement by statement (the HTTP interface takes one at a time). */
static int create_schema(chdb *db)
{
	char *sql = ch_schema_text(db->t.db, NULL);
	if (!sql) {
		snprintf(db->err, sizeof(db->err), "%s: out of memory", db->t.shown);
		return -1;
	}
	strip_comments(sql);
	int rc = 0;
	for (char *s = sql, *end; rc == 0 && *s; s = end + 1) {
		end = strchr(s, ';');
		if (!end)
			break;
		*end = '\0';
		if (s[strspn(s, " \n")])
			rc = ch_exec(db, s, "cannot create the schema");
	}
	free(sql);
	return rc;
}

static int first_int(void *arg, int ncols, const char *const *names, const char *const *vals,
                     const enum db_type *types)
{
	(void)names;
	(void)types;
	if (vals && ncols > 0)
		*(long long *)arg = vals[0] ? strtoll(vals[0], NULL, 10) : 0;
	return 0;
}

/* The schema version the database holds: 0 for none yet (being created), -2 without iwscope's
 * marker table, -1 on error. */
static long long schema_version(chdb *db)
{
	long long v = 0;
	if (ch_query(db, "SELECT max(version) FROM iwscope_schema", first_int, &v) == 0)
		return v;
	return db->ch_code == 60 ? -2 : -1; /* 60: UNKNOWN_TABLE */
}

static int check_schema(chdb *db, bool create)
{
	long long v = schema_version(db);
	if (v == -1)
		return -1;
	if (v == -2) {
		long long others = 0;
		if (ch_query(db, "SELECT count() FROM system.tables WHERE database = currentDatabase() "
		             "AND name IN ('runs', 'flows')", first_int, &others) != 0)
			return -1;
		if (others) {
			snprintf(db->err, sizeof(db->err), "%s: not an iwscope database (it has a table runs "
			         "or flows of its own; refusing to touch it)", db->t.shown);
			return -1;
		}
	}
	if (v <= 0 && create) {
		/* two probes at once both create: every statement is IF NOT EXISTS */
		if (create_schema(db) != 0 || (v = schema_version(db)) == -1)
			return -1;
	}
	if (v <= 0) {
		snprintf(db->err, sizeof(db->err), "%s: no iwscope tables in this database", db->t.shown);
		return -1;
	}
	if (v != SCHEMA_VERSION) {
		snprintf(db->err, sizeof(db->err), "%s: iwscope schema version %lld, this iwscope uses "
		         "version %d", db->t.shown, v, SCHEMA_VERSION);
		return -1;
	}
	return 0;
}

chdb *ch_open(const char *uri, bool create, enum ch_fail *fail, char *err, size_t errlen)
{
	*fail = CH_FAIL_FATAL;
	if (!cu_load(err, errlen))
		return NULL;
	chdb *db = calloc(1, sizeof(*db));
	if (!db) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (parse_uri(uri, &db->t, err, errlen) != 0)
		goto fail;
	char h[400];
	snprintf(h, sizeof(h), "X-ClickHouse-User: %s", db->t.user);
	db->headers = cu.slist_append(NULL, h);
	if (db->t.password[0]) {
		snprintf(h, sizeof(h), "X-ClickHouse-Key: %s", db->t.password);
		struct curl_slist *l = db->headers ? cu.slist_append(db->headers, h) : NULL;
		memset(h, 0, sizeof(h));
		if (!l) {
			cu.slist_free_all(db->headers);
			db->headers = NULL;
		} else {
			db->headers = l;
		}
	}
	db->curl = db->headers ? cu.init() : NULL;
	if (!db->curl) {
		snprintf(err, errlen, "%s: out of memory", db->t.shown);
		goto fail;
	}
	if (check_schema(db, create) != 0) {
		/* lost the server while checking (it answered the first request): another try may work;
		 * a name that resolves to nothing or a port nobody listens on at the start is a mistake
		 * more often than an outage */
		if (db->code != CURLE_OK && db->code != CURLE_COULDNT_RESOLVE_HOST &&
		    db->code != CURLE_COULDNT_CONNECT && db->code != CURLE_OPERATION_TIMEDOUT)
			*fail = CH_FAIL_TRANSIENT;
		if (db->code == CURLE_COULDNT_RESOLVE_HOST)
			snprintf(err, errlen, "%s: unknown host %s", db->t.shown, db->t.host);
		else if (db->code == CURLE_COULDNT_CONNECT)
			snprintf(err, errlen, "%s: nothing answers at %s port %u (is ClickHouse's HTTP "
			         "interface there?)", db->t.shown, db->t.host, db->t.port);
		else
			snprintf(err, errlen, "%s", db->err);
		goto fail;
	}
	return db;
fail:
	ch_close(db);
	return NULL;
}

void ch_close(chdb *db)
{
	if (!db)
		return;
	if (db->curl)
		cu.cleanup(db->curl);
	if (db->headers)
		cu.slist_free_all(db->headers);
	memset(&db->t, 0, sizeof(db->t)); /* the password */
	free(db);
}
