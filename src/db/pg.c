/* PostgreSQL via libpq: connection with failures told apart (try later vs. give up), the schema
 * created on first use, batches upserted with COPY, queries for reports. */
#include "pg.h"

#include <dlfcn.h>
#include <netdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <libpq-fe.h>

#include "config.h"
#include "schema.h"

extern const char pg_schema_sql[]; /* build/schema_sql.c, from schema/postgresql.sql + views */

#define SCHEMA_COMMENT "iwscope schema "
#define SCHEMA_LOCK 1230459715 /* advisory lock id while creating the schema: 'IWSC' */

/* libpq is loaded when first needed, not linked: with the libraries it pulls in (Kerberos,
 * LDAP, GnuTLS, OpenSSL ...) linking it added 22 shared objects and some 10 ms to the start
 * of every run, which most runs, writing SQLite, never use. */
#define PQ_FUNCS(X) X(PQlibVersion) X(PQerrorMessage) X(PQconninfoParse) X(PQconninfoFree) \
	X(PQpingParams) X(PQconnectdbParams) X(PQstatus) X(PQsetNoticeProcessor) X(PQfinish) \
	X(PQexec) X(PQresultStatus) X(PQclear) X(PQntuples) X(PQnfields) X(PQfname) X(PQftype) \
	X(PQgetvalue) X(PQgetisnull) X(PQputCopyData) X(PQputCopyEnd) X(PQgetResult)

static struct {
#define PQ_POINTER(f) __typeof__(f) *f;
	PQ_FUNCS(PQ_POINTER)
#undef PQ_POINTER
	bool loaded;
	char why[256]; /* when not loaded */
} pq;

static void pq_load_once(void)
{
	void *h = dlopen(LIBPQ_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(pq.why, sizeof(pq.why), "%s", dlerror());
		return;
	}
#define PQ_RESOLVE(f)                                                                           \
	if (!(pq.f = (__typeof__(pq.f))dlsym(h, #f))) {                                         \
		snprintf(pq.why, sizeof(pq.why), "%s: no %s", LIBPQ_SONAME, #f);                \
		dlclose(h);                                                                     \
		return;                                                                         \
	}
	PQ_FUNCS(PQ_RESOLVE)
#undef PQ_RESOLVE
	pq.loaded = true;
}

/* Whether libpq is loaded (loading it the first time); else err says why. */
static bool pq_load(char *err, size_t errlen)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, pq_load_once);
	if (!pq.loaded && err)
		snprintf(err, errlen, "cannot load the PostgreSQL client library: %s", pq.why);
	return pq.loaded;
}

struct pgdb {
	PGconn *conn;
	bool temp_ready[3]; /* the staging table of schema_tables[i] exists in this session */
	char err[1024];
};

bool pg_is_uri(const char *t)
{
	return !strncmp(t, "postgresql://", 13) || !strncmp(t, "postgres://", 11);
}

void pg_redact(const char *uri, char *out, size_t len)
{
	const char *scheme = strstr(uri, "://");
	const char *at = scheme ? strchr(scheme + 3, '@') : NULL;
	const char *colon = at ? memchr(scheme + 3, ':', (size_t)(at - scheme - 3)) : NULL;
	if (!colon) {
		snprintf(out, len, "%s", uri);
		return;
	}
	snprintf(out, len, "%.*s:***%s", (int)(colon - uri), uri, at);
}

const char *pg_libpq_version(void)
{
	static char v[16];
	if (!pq_load(NULL, 0))
		return "not found";
	int n = pq.PQlibVersion();
	snprintf(v, sizeof(v), "%d.%d", n / 10000, n % 10000);
	return v;
}

const char *pg_error(const pgdb *db) { return db->err; }
const char *pg_schema_text(void) { return pg_schema_sql; }

/* libpq's message (often several lines: one per address tried, plus hints) as one line. */
static void one_line(const char *msg, char *out, size_t len)
{
	size_t n = 0;
	bool space = false;
	for (; *msg && n + 1 < len; msg++) {
		if (*msg == '\n' || *msg == '\t' || *msg == ' ') {
			space = n > 0;
			continue;
		}
		if (space && n + 2 < len)
			out[n++] = ' ';
		space = false;
		out[n++] = *msg;
	}
	out[n] = '\0';
}

static void set_err(pgdb *db, const char *what)
{
	char msg[900];
	one_line(pq.PQerrorMessage(db->conn), msg, sizeof(msg));
	snprintf(db->err, sizeof(db->err), "%s: %s", what, msg);
}

static void quiet_notices(void *arg, const char *msg)
{
	(void)arg;
	(void)msg;
}

/* True when every host name in uri fails to resolve: retrying will not help. */
static bool hosts_unknown(const char *uri)
{
	PQconninfoOption *opts = pq.PQconninfoParse(uri, NULL);
	if (!opts)
		return false;
	const char *host = NULL, *hostaddr = NULL;
	for (PQconninfoOption *o = opts; o->keyword; o++) {
		if (!strcmp(o->keyword, "host"))
			host = o->val;
		else if (!strcmp(o->keyword, "hostaddr"))
			hostaddr = o->val;
	}
	bool unknown = false;
	if (host && *host && !(hostaddr && *hostaddr)) {
		char list[512];
		snprintf(list, sizeof(list), "%s", host);
		unknown = true;
		char *save = NULL;
		for (char *h = strtok_r(list, ",", &save); h; h = strtok_r(NULL, ",", &save)) {
			if (h[0] == '/' || h[0] == '@') { /* a Unix socket directory */
				unknown = false;
				break;
			}
			struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res = NULL;
			int rc = getaddrinfo(h, NULL, &hints, &res);
			if (res)
				freeaddrinfo(res);
			if (rc != EAI_NONAME && rc != EAI_FAIL) {
				unknown = false;
				break;
			}
		}
	}
	pq.PQconninfoFree(opts);
	return unknown;
}

static PGconn *connect_uri(const char *uri, PGPing *ping)
{
	const char *kw[4], *val[4];
	int n = 0;
	if (!getenv("PGCONNECT_TIMEOUT")) {
		kw[n] = "connect_timeout";
		val[n++] = PG_CONNECT_TIMEOUT_S;
	}
	kw[n] = "application_name";
	val[n++] = "iwscope";
	kw[n] = "dbname"; /* expanded: the URI's own settings win over the two above */
	val[n++] = uri;
	kw[n] = NULL;
	val[n] = NULL;
	if (ping) {
		*ping = pq.PQpingParams(kw, val, 1);
		return NULL;
	}
	return pq.PQconnectdbParams(kw, val, 1);
}

/* Runs sql, which returns no rows (or rows nobody reads). 0 or -1 with err set. */
static int run(pgdb *db, const char *sql, const char *what)
{
	PGresult *r = pq.PQexec(db->conn, sql);
	ExecStatusType st = pq.PQresultStatus(r);
	pq.PQclear(r);
	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
		set_err(db, what);
		return -1;
	}
	return 0;
}

/* Reads the schema comment on runs: 1 and the comment in out, 0 when there is no table runs,
 * -1 on error. */
static int schema_comment(pgdb *db, char *out, size_t len)
{
	/* pg_class itself, not to_regclass(): after waiting on the advisory lock this statement's
	 * snapshot sees a schema another probe just committed; a cached lookup might not */
	PGresult *r = pq.PQexec(db->conn,
	                     "SELECT c.oid IS NOT NULL, coalesce(d.description, '') FROM (SELECT 1) o "
	                     "LEFT JOIN pg_catalog.pg_class c ON c.relname = 'runs' AND c.relnamespace = "
	                     "(SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = current_schema()) "
	                     "LEFT JOIN pg_catalog.pg_description d ON d.objoid = c.oid AND "
	                     "d.classoid = 'pg_catalog.pg_class'::regclass AND d.objsubid = 0");
	if (pq.PQresultStatus(r) != PGRES_TUPLES_OK || pq.PQntuples(r) != 1) {
		pq.PQclear(r);
		set_err(db, "cannot read the schema");
		return -1;
	}
	int exists = pq.PQgetvalue(r, 0, 0)[0] == 't';
	snprintf(out, len, "%s", pq.PQgetvalue(r, 0, 1));
	pq.PQclear(r);
	return exists;
}

/* The version an "iwscope schema N" comment names, if this iwscope can upgrade it. */
static int upgradable(const char *comment)
{
	if (strncmp(comment, SCHEMA_COMMENT, strlen(SCHEMA_COMMENT)))
		return 0;
	long v = strtol(comment + strlen(SCHEMA_COMMENT), NULL, 10);
	return v >= SCHEMA_OLDEST && v < SCHEMA_VERSION ? (int)v : 0;
}

/* Upgrades an older schema in place under the schema lock, in one transaction (schema.h);
 * comment gets the version found then. */
static int upgrade(pgdb *db, char *comment, size_t len)
{
	char lock[64], mark[64];
	snprintf(lock, sizeof(lock), "SELECT pg_advisory_xact_lock(%d)", SCHEMA_LOCK);
	snprintf(mark, sizeof(mark), "COMMENT ON TABLE runs IS '" SCHEMA_COMMENT "%d'", SCHEMA_VERSION);
	if (run(db, "BEGIN", "cannot upgrade the schema") != 0 || run(db, lock, "cannot upgrade the schema") != 0 ||
	    schema_comment(db, comment, len) < 0)
		goto fail;
	int from = upgradable(comment); /* another probe may have upgraded it meanwhile */
	if (from) {
		char *sql = schema_upgrade_sql(from);
		if (!sql) {
			set_err(db, "cannot upgrade the schema");
			goto fail;
		}
		int rc = run(db, sql, "cannot upgrade the schema");
		free(sql);
		if (rc != 0 || run(db, mark, "cannot upgrade the schema") != 0)
			goto fail;
		snprintf(comment, len, SCHEMA_COMMENT "%d", SCHEMA_VERSION);
	}
	return run(db, "COMMIT", "cannot upgrade the schema");
fail:
	pq.PQclear(pq.PQexec(db->conn, "ROLLBACK"));
	return -1;
}

static int check_schema(pgdb *db, bool create, const char *shown)
{
	char comment[256], want[64];
	snprintf(want, sizeof(want), SCHEMA_COMMENT "%d", SCHEMA_VERSION);
	int exists = schema_comment(db, comment, sizeof(comment));
	if (exists < 0)
		return -1;
	if (!exists && create) {
		/* two probes starting at once: one creates, the other waits and finds it made */
		if (run(db, "BEGIN", "cannot create the schema") != 0)
			return -1;
		char lock[64];
		snprintf(lock, sizeof(lock), "SELECT pg_advisory_xact_lock(%d)", SCHEMA_LOCK);
		if (run(db, lock, "cannot create the schema") != 0 ||
		    (exists = schema_comment(db, comment, sizeof(comment))) < 0 ||
		    (!exists && run(db, pg_schema_sql, "cannot create the schema") != 0) ||
		    run(db, "COMMIT", "cannot create the schema") != 0) {
			pq.PQclear(pq.PQexec(db->conn, "ROLLBACK"));
			return -1;
		}
		snprintf(comment, sizeof(comment), "%s", want);
		exists = 1;
	}
	if (!exists) {
		snprintf(db->err, sizeof(db->err), "%s: no iwscope tables in this database", shown);
		return -1;
	}
	if (strcmp(comment, want) && create && upgradable(comment)) {
		if (upgrade(db, comment, sizeof(comment)) != 0)
			return -1;
	}
	if (strcmp(comment, want)) {
		if (!strncmp(comment, SCHEMA_COMMENT, strlen(SCHEMA_COMMENT)))
			snprintf(db->err, sizeof(db->err), "%s: iwscope schema version %s, this iwscope "
			         "uses version %d", shown, comment + strlen(SCHEMA_COMMENT), SCHEMA_VERSION);
		else
			snprintf(db->err, sizeof(db->err), "%s: not an iwscope database (it has a table "
			         "runs of its own; refusing to touch it)", shown);
		return -1;
	}
	return 0;
}

pgdb *pg_open(const char *uri, bool create, enum pg_fail *fail, char *err, size_t errlen)
{
	char shown[512];
	pg_redact(uri, shown, sizeof(shown));
	*fail = PG_FAIL_FATAL;
	if (!pq_load(err, errlen))
		return NULL;
	pgdb *db = calloc(1, sizeof(*db));
	if (!db) {
		snprintf(err, errlen, "%s: out of memory", shown);
		return NULL;
	}
	db->conn = connect_uri(uri, NULL);
	if (!db->conn) {
		snprintf(err, errlen, "%s: out of memory", shown);
		free(db);
		return NULL;
	}
	if (pq.PQstatus(db->conn) != CONNECTION_OK) {
		char msg[900];
		one_line(pq.PQerrorMessage(db->conn), msg, sizeof(msg));
		snprintf(err, errlen, "%s: %s", shown, msg);
		PGPing ping;
		connect_uri(uri, &ping);
		/* a server that answers a ping but refused us (password, role, database) will keep
		 * refusing; one that does not answer may come back, unless its name means nothing */
		if (ping == PQPING_REJECT || (ping == PQPING_NO_RESPONSE && !hosts_unknown(uri)))
			*fail = PG_FAIL_TRANSIENT;
		pg_close(db);
		return NULL;
	}
	pq.PQsetNoticeProcessor(db->conn, quiet_notices, NULL);
	if (check_schema(db, create, shown) != 0) {
		/* lost the server while checking: worth another try */
		if (pq.PQstatus(db->conn) != CONNECTION_OK)
			*fail = PG_FAIL_TRANSIENT;
		snprintf(err, errlen, "%s", db->err);
		pg_close(db);
		return NULL;
	}
	return db;
}

void pg_close(pgdb *db)
{
	if (!db)
		return;
	pq.PQfinish(db->conn);
	free(db);
}

/* Appends v to the COPY text buffer, escaped (text format: \N is NULL). */
static int copy_value(char **buf, size_t *len, size_t *cap, const char *v)
{
	size_t need = v ? 2 * strlen(v) + 2 : 3;
	if (*len + need > *cap) {
		size_t c = *cap ? *cap : 65536;
		while (c < *len + need)
			c *= 2;
		char *b = realloc(*buf, c);
		if (!b)
			return -1;
		*buf = b;
		*cap = c;
	}
	char *o = *buf + *len;
	if (!v) {
		memcpy(o, "\\N", 2);
		*len += 2;
		return 0;
	}
	for (; *v; v++) {
		switch (*v) {
		case '\\': *o++ = '\\'; *o++ = '\\'; break;
		case '\n': *o++ = '\\'; *o++ = 'n'; break;
		case '\r': *o++ = '\\'; *o++ = 'r'; break;
		case '\t': *o++ = '\\'; *o++ = 't'; break;
		default: *o++ = *v;
		}
	}
	*len = (size_t)(o - *buf);
	return 0;
}

/* COPYs t into the session's staging table for it. 0 or -1. */
static int copy_rows(pgdb *db, size_t ti, const struct db_rows *t, const char *cols)
{
	char sql[9000];
	if (!db->temp_ready[ti]) {
		snprintf(sql, sizeof(sql), "CREATE TEMP TABLE IF NOT EXISTS iwscope_%s_in (LIKE %s) "
		         "ON COMMIT DELETE ROWS", t->table, t->table);
		if (run(db, sql, "cannot make a staging table") != 0)
			return -1;
		db->temp_ready[ti] = true;
	}
	snprintf(sql, sizeof(sql), "COPY iwscope_%s_in (%s) FROM STDIN", t->table, cols);
	PGresult *r = pq.PQexec(db->conn, sql);
	ExecStatusType st = pq.PQresultStatus(r);
	pq.PQclear(r);
	if (st != PGRES_COPY_IN) {
		set_err(db, "cannot start COPY");
		return -1;
	}
	char *buf = NULL;
	size_t len = 0, cap = 0;
	int rc = 0;
	for (unsigned row = 0; row < t->nrows && rc == 0; row++) {
		for (int c = 0; c < t->ncols && rc == 0; c++) {
			rc = copy_value(&buf, &len, &cap, t->vals[(size_t)row * (size_t)t->ncols + (size_t)c]);
			if (rc == 0)
				buf[len++] = c + 1 < t->ncols ? '\t' : '\n'; /* copy_value left room */
		}
		if (rc == 0 && (len >= (1u << 20) || row + 1 == t->nrows)) {
			if (pq.PQputCopyData(db->conn, buf, (int)len) != 1)
				rc = -1;
			len = 0;
		}
	}
	free(buf);
	if (pq.PQputCopyEnd(db->conn, rc == 0 ? NULL : "iwscope: out of memory") != 1)
		rc = -1;
	while ((r = pq.PQgetResult(db->conn))) {
		if (pq.PQresultStatus(r) != PGRES_COMMAND_OK)
			rc = -1;
		pq.PQclear(r);
	}
	if (rc != 0)
		set_err(db, "COPY failed");
	return rc;
}

/* Builds "a,b" (or "a=excluded.a,..." leaving out skip's ",a,") from t's column names. */
static int columns(const struct db_rows *t, const char *skip, char *out, size_t len)
{
	size_t n = 0;
	out[0] = '\0';
	for (int i = 0; i < t->ncols; i++)
		if (!(skip && schema_is_key(skip, t->names[i])) &&
		    schema_list_add(out, len, &n, t->names[i], skip != NULL) != 0)
			return -1;
	return 0;
}

int pg_send_batch(void *arg, const struct db_rows *tables, unsigned ntables)
{
	pgdb *db = arg;
	if (run(db, "BEGIN", "cannot start a transaction") != 0)
		return -1;
	static char cols[8192], set[16384], sql[8192 * 2 + 16384 + 1024];
	for (unsigned i = 0; i < ntables; i++) {
		const struct db_rows *t = &tables[i];
		const struct schema_table *st = schema_table(t->table);
		if (!st) {
			snprintf(db->err, sizeof(db->err), "unknown table %s", t->table);
			goto fail;
		}
		if (!t->nrows)
			continue;
		if (columns(t, NULL, cols, sizeof(cols)) != 0 ||
		    columns(t, st->key_cols, set, sizeof(set)) != 0) {
			snprintf(db->err, sizeof(db->err), "%s: too many columns", t->table);
			goto fail;
		}
		if (copy_rows(db, (size_t)(st - schema_tables), t, cols) != 0)
			goto fail;
		snprintf(sql, sizeof(sql), "INSERT INTO %s (%s) SELECT %s FROM iwscope_%s_in "
		         "ON CONFLICT (%s) DO UPDATE SET %s WHERE %s", t->table, cols, cols, t->table,
		         st->key, set, st->guard);
		if (run(db, sql, "cannot write rows") != 0)
			goto fail;
	}
	if (run(db, "COMMIT", "cannot commit") == 0)
		return 0;
fail:
	if (pq.PQstatus(db->conn) == CONNECTION_OK)
		pq.PQclear(pq.PQexec(db->conn, "ROLLBACK"));
	return -1;
}

int pg_exec(pgdb *db, const char *sql) { return run(db, sql, "statement failed"); }

/* A result column's type from its type OID (the built-in ones, pg_type.dat): integers and
 * numbers as such, everything else as text. */
static enum db_type pg_type(Oid oid)
{
	switch (oid) {
	case 20: /* int8 */
	case 21: /* int2 */
	case 23: /* int4 */
		return DB_INT;
	case 700:  /* float4 */
	case 701:  /* float8 */
	case 1700: /* numeric */
		return DB_REAL;
	default:
		return DB_TEXT;
	}
}

int pg_query(pgdb *db, const char *sql, db_row_fn row, void *arg)
{
	PGresult *r = pq.PQexec(db->conn, sql);
	if (pq.PQresultStatus(r) != PGRES_TUPLES_OK) {
		pq.PQclear(r);
		set_err(db, "query failed");
		return -1;
	}
	int n = pq.PQnfields(r);
	if (n > 64)
		n = 64;
	const char *names[64], *vals[64];
	enum db_type coltype[64], types[64];
	for (int i = 0; i < n; i++) {
		names[i] = pq.PQfname(r, i);
		coltype[i] = pg_type(pq.PQftype(r, i));
	}
	if (row(arg, n, names, NULL, NULL) == 0)
		for (int t = 0; t < pq.PQntuples(r); t++) {
			for (int i = 0; i < n; i++) {
				bool null = pq.PQgetisnull(r, t, i);
				vals[i] = null ? NULL : pq.PQgetvalue(r, t, i);
				types[i] = null ? DB_NULL : coltype[i];
			}
			if (row(arg, n, names, vals, types) != 0)
				break;
		}
	pq.PQclear(r);
	return 0;
}
