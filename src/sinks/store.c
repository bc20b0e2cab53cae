/* An iwscope SQLite database: schema/sqlite.sql + schema/views.sql (embedded at build time)
 * created, checked or upgraded at open, WAL, and the SQLite sink: prepared statements, rows in
 * batched transactions committed at least once a second. Also opens files read-only for
 * `report`, `plot` and `merge`, and the spool of the PostgreSQL sink (spool.c). */
#include "store.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "clock.h"
#include "config.h"
#include "record_columns.h"
#include "schema.h"

extern const char store_schema_sql[]; /* build/schema_sql.c, generated from schema/ */

#define APPLICATION_ID 0x49575343 /* 'IWSC' */

struct store {
	sqlite3 *db;
	sqlite3_stmt *ins_flow;
	char path[256];
	char err[1024];
	int64_t run_id;
	char probe[PROBE_MAX];
	unsigned pending;        /* rows in the open transaction */
	bool in_txn;
	bool bulk;               /* a capture file's run: an empty flows table loads unindexed */
	bool indexes_dropped;    /* the flows table's secondary indexes wait for the run's end;
	                          * meanwhile rows are plain inserts, without the foreign key's
	                          * check */
	bool rollback_journal;   /* that load runs in rollback-journal mode, WAL again after it */
	bool read_as_upgraded;   /* a read of an older schema through TEMP views (read-only file) */
	uint64_t last_commit_us;  /* monotonic */
	int64_t replaced_runs, replaced_flows; /* --replace: what the run took the place of */
};

const char *store_sqlite_version(void) { return sqlite3_libversion(); }
int store_schema_version(void) { return SCHEMA_VERSION; }
const char *store_error(const store *s) { return s->err; }
const char *store_schema_text(void) { return store_schema_sql; }
struct sqlite3 *store_db(store *s) { return s->db; }
const char *store_path(const store *s) { return s->path; }
bool store_read_as_upgraded(const store *s) { return s->read_as_upgraded; }

void store_fail(store *s, const char *what)
{
	snprintf(s->err, sizeof(s->err), "%s: %s: %s", s->path, what,
	         s->db ? sqlite3_errmsg(s->db) : "out of memory");
}

void store_failf(store *s, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(s->err, sizeof(s->err), fmt, ap);
	va_end(ap);
}

int store_exec(store *s, const char *sql, const char *what)
{
	char *msg = NULL;
	if (sqlite3_exec(s->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
		snprintf(s->err, sizeof(s->err), "%s: %s: %s", s->path, what, msg ? msg : "error");
		sqlite3_free(msg);
		return -1;
	}
	return 0;
}

int store_int(store *s, const char *sql, int64_t *out)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
		return -1;
	int rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*out = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return rc == SQLITE_ROW ? 0 : -1;
}

/* Checks that the open file is an iwscope database of our version or one we can upgrade
 * (*ver), or empty (fresh = true). */
static int check_identity(store *s, bool *fresh, int64_t *ver)
{
	int64_t app = 0, objects = 0;
	*ver = 0;
	if (store_int(s, "PRAGMA application_id", &app) != 0 ||
	    store_int(s, "PRAGMA user_version", ver) != 0 ||
	    store_int(s, "SELECT count(*) FROM sqlite_master", &objects) != 0) {
		store_fail(s, "cannot read the database");
		return -1;
	}
	*fresh = app == 0 && *ver == 0 && objects == 0;
	if (*fresh)
		return 0;
	if (app != APPLICATION_ID) {
		snprintf(s->err, sizeof(s->err), "%s: not an iwscope database (refusing to touch it)",
		         s->path);
		return -1;
	}
	if (*ver > SCHEMA_VERSION || *ver < SCHEMA_OLDEST) {
		snprintf(s->err, sizeof(s->err),
		         "%s: iwscope schema version %lld, this iwscope uses version %d%s", s->path,
		         (long long)*ver, SCHEMA_VERSION,
		         *ver > SCHEMA_VERSION ? " (a newer iwscope made it)" : " and cannot upgrade it");
		return -1;
	}
	return 0;
}

/* Upgrades a database of an older schema version in place, in one transaction (schema.h). */
static int upgrade(store *s)
{
	if (store_exec(s, "BEGIN IMMEDIATE", "cannot start the upgrade") != 0)
		return -1;
	bool fresh;
	int64_t ver;
	if (check_identity(s, &fresh, &ver) != 0) /* another process may have done it meanwhile */
		goto fail;
	if (ver < SCHEMA_VERSION) {
		char *sql = schema_upgrade_sql((int)ver);
		char pragma[48];
		snprintf(pragma, sizeof(pragma), "PRAGMA user_version = %d", SCHEMA_VERSION);
		if (!sql) {
			snprintf(s->err, sizeof(s->err), "%s: cannot upgrade schema version %lld",
			         s->path, (long long)ver);
			goto fail;
		}
		int rc = store_exec(s, sql, "cannot upgrade the schema");
		free(sql);
		if (rc != 0 || store_exec(s, pragma, "cannot upgrade the schema") != 0)
			goto fail;
	}
	return store_exec(s, "COMMIT", "cannot commit the upgrade");
fail:
	sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
	return -1;
}

static int build_indexes(store *s);

/* Sets the journal mode, and the synchronous level to go with it; whether the database is now
 * in that mode. SQLite leaves the mode as it was while another connection has the file open. */
static bool journal_mode(store *s, const char *mode, const char *sync)
{
	char sql[64];
	snprintf(sql, sizeof(sql), "PRAGMA journal_mode=%s", mode);
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
		return false;
	const char *now = sqlite3_step(st) == SQLITE_ROW ? (const char *)sqlite3_column_text(st, 0) : NULL;
	bool ok = now && !strcasecmp(now, mode);
	sqlite3_finalize(st);
	if (ok) {
		snprintf(sql, sizeof(sql), "PRAGMA synchronous=%s", sync);
		ok = sqlite3_exec(s->db, sql, NULL, NULL, NULL) == SQLITE_OK;
	}
	return ok;
}

static store *store_new(const char *path)
{
	store *s = calloc(1, sizeof(*s));
	if (s)
		snprintf(s->path, sizeof(s->path), "%s", path);
	return s;
}

static store *fail_open(store *s, char *err, size_t errlen)
{
	snprintf(err, errlen, "%s", s->err[0] ? s->err : "cannot open the database");
	store_close(s);
	return NULL;
}

/* The schema's secondary indexes one by one (schema_each_index), s as arg. */
static int each_secondary_index(store *s, schema_index_fn fn)
{
	return schema_each_index(store_schema_sql, fn, s);
}

static int drop_index(void *arg, const char *name, int nlen, const char *stmt, int slen)
{
	store *s = arg;
	(void)stmt, (void)slen;
	char sql[256];
	snprintf(sql, sizeof(sql), "DROP INDEX IF EXISTS %.*s", nlen, name);
	return store_exec(s, sql, "cannot defer an index");
}

static int create_index(void *arg, const char *name, int nlen, const char *stmt, int slen)
{
	store *s = arg;
	(void)name, (void)nlen;
	char sql[1024];
	const int lead = (int)strlen("CREATE INDEX ");
	snprintf(sql, sizeof(sql), "CREATE INDEX IF NOT EXISTS %.*s", slen - lead, stmt + lead);
	return store_exec(s, sql, "cannot build an index");
}

/* An index that is missing (a run that loaded unindexed was killed) is built; one that is
 * there costs a read only. */
static int heal_index(void *arg, const char *name, int nlen, const char *stmt, int slen)
{
	store *s = arg;
	char sql[256]; /* the name is the embedded schema's own */
	int64_t there = 0;
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND "
	         "name = '%.*s'", nlen, name);
	if (store_int(s, sql, &there) != 0) {
		store_fail(s, "cannot read the schema");
		return -1;
	}
	return there ? 0 : create_index(s, name, nlen, stmt, slen);
}

/* Whether c is part of a flow's key: an upsert leaves those alone. */
static bool is_key_column(const char *c)
{
	return schema_is_key(schema_table("flows")->key_cols, c);
}

/* The flow insert: an upsert on the flows' key, or a plain insert for a bulk load, which
 * writes each flow once. */
static int prepare_insert(store *s, bool upsert)
{
	char sql[8192];
	size_t n = (size_t)snprintf(sql, sizeof(sql), "INSERT INTO flows (probe,run_id");
	for (unsigned i = 0; i < record_ncolumns; i++)
		n += (size_t)snprintf(sql + n, sizeof(sql) - n, ",%s", record_columns[i].name);
	n += (size_t)snprintf(sql + n, sizeof(sql) - n, ") VALUES (?,?");
	for (unsigned i = 0; i < record_ncolumns; i++)
		n += (size_t)snprintf(sql + n, sizeof(sql) - n, ",?");
	if (!upsert) {
		n += (size_t)snprintf(sql + n, sizeof(sql) - n, ")");
		goto prepare;
	}
	/* a flow written early gets its final state in place: same row; a stale copy (an early
	 * state arriving after the final one, as a merge can bring) never replaces a final row */
	n += (size_t)snprintf(sql + n, sizeof(sql) - n, ") ON CONFLICT (" FLOW_KEY ") DO UPDATE SET ");
	bool first = true;
	for (unsigned i = 0; i < record_ncolumns; i++) {
		const char *c = record_columns[i].name;
		if (is_key_column(c) || !strcmp(c, "ts_us"))
			continue;
		n += (size_t)snprintf(sql + n, sizeof(sql) - n, "%s%s=excluded.%s", first ? "" : ",", c, c);
		first = false;
	}
	n += (size_t)snprintf(sql + n, sizeof(sql) - n, " WHERE " FLOW_NOT_STALE);
prepare:
	if (n >= sizeof(sql))
		return -1;
	sqlite3_finalize(s->ins_flow);
	s->ins_flow = NULL;
	if (sqlite3_prepare_v2(s->db, sql, -1, &s->ins_flow, NULL) != SQLITE_OK) {
		store_fail(s, "cannot prepare the flow insert");
		return -1;
	}
	return 0;
}

/* Before SQLite's first use: no allocation statistics (nothing here reads them), so an
 * allocation takes no global mutex: 4% of a row's instructions. */
static void sqlite_setup(void)
{
	static bool done;
	if (!done) {
		done = true;
		sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
	}
}

store *store_open(const char *path, char *err, size_t errlen)
{
	sqlite_setup();
	store *s = store_new(path);
	if (!s) {
		snprintf(err, errlen, "%s: out of memory", path);
		return NULL;
	}
	struct stat st;
	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		snprintf(s->err, sizeof(s->err), "%s: not a regular file", path);
		return fail_open(s, err, errlen);
	}
	/* NOMUTEX: a store is used by one thread at a time (handed to the stage thread and back
	 * with its start and join), so SQLite's per-call locking is dead weight */
	if (sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
	                    NULL) != SQLITE_OK) {
		store_fail(s, "cannot open");
		return fail_open(s, err, errlen);
	}
	sqlite3_extended_result_codes(s->db, 1);
	sqlite3_busy_timeout(s->db, STORE_BUSY_MS);
	bool fresh;
	int64_t ver;
	if (check_identity(s, &fresh, &ver) != 0)
		return fail_open(s, err, errlen);
	if (sqlite3_db_readonly(s->db, "main") == 1) {
		snprintf(s->err, sizeof(s->err), "%s: database is read-only", path);
		return fail_open(s, err, errlen);
	}
	if (store_exec(s, "PRAGMA journal_mode=WAL", "cannot enable WAL") != 0 ||
	    store_exec(s, "PRAGMA synchronous=NORMAL", "cannot set synchronous") != 0 ||
	    store_exec(s, "PRAGMA foreign_keys=ON", "cannot enable foreign keys") != 0)
		return fail_open(s, err, errlen);
	if (fresh) {
		if (store_exec(s, "BEGIN IMMEDIATE", "cannot start the schema transaction") != 0)
			return fail_open(s, err, errlen);
		/* another process may have created it meanwhile: check again inside the lock */
		if (check_identity(s, &fresh, &ver) != 0) {
			sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
			return fail_open(s, err, errlen);
		}
		if (fresh && store_exec(s, store_schema_sql, "cannot create the schema") != 0) {
			sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
			return fail_open(s, err, errlen);
		}
		if (store_exec(s, "COMMIT", "cannot commit the schema") != 0)
			return fail_open(s, err, errlen);
	} else if ((ver < SCHEMA_VERSION && upgrade(s) != 0) ||
	           each_secondary_index(s, heal_index) != 0) {
		return fail_open(s, err, errlen);
	}
	if (prepare_insert(s, true) != 0)
		return fail_open(s, err, errlen);
	return s;
}

/* "file:PATH?immutable=1": path as an SQLite URI (RFC 3986 escapes) that reads the file as
 * one nothing writes meanwhile: no locks, no -shm file. Malloc'd, NULL when out of memory. */
static char *immutable_uri(const char *path)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = strlen(path);
	char *uri = malloc(n * 3 + 32), *o = uri;
	if (!uri)
		return NULL;
	o += sprintf(o, "file:%s", path[0] == '/' ? "//" : ""); /* an empty authority */
	for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		    strchr("/-._~", *p)) {
			*o++ = (char)*p;
		} else {
			*o++ = '%';
			*o++ = hex[*p >> 4];
			*o++ = hex[*p & 15];
		}
	}
	strcpy(o, "?immutable=1");
	return uri;
}

/* Opens path for reading only, or (immutable) as a file nothing changes while it is read.
 * 0, or -1 with s->err. */
static int open_read_only(store *s, const char *path, bool immutable)
{
	char *uri = immutable ? immutable_uri(path) : NULL;
	if (immutable && !uri) {
		snprintf(s->err, sizeof(s->err), "%s: out of memory", path);
		return -1;
	}
	int rc = sqlite3_open_v2(uri ? uri : path, &s->db,
	                         SQLITE_OPEN_READONLY | (uri ? SQLITE_OPEN_URI : 0), NULL);
	free(uri);
	if (rc != SQLITE_OK) {
		store_fail(s, "cannot open");
		return -1;
	}
	sqlite3_extended_result_codes(s->db, 1);
	sqlite3_busy_timeout(s->db, STORE_BUSY_MS);
	return 0;
}

/* The journal beside path that holds what the file alone does not (a write-ahead log with
 * frames, a hot rollback journal): "-wal", "-journal", or NULL when there is none. */
static const char *pending_journal(const char *path)
{
	static const char *const suffix[] = { "-wal", "-journal" };
	for (size_t i = 0; i < 2; i++) {
		char j[4200];
		struct stat st;
		snprintf(j, sizeof(j), "%s%s", path, suffix[i]);
		if (stat(j, &st) == 0 && st.st_size > 0)
			return suffix[i];
	}
	return NULL;
}

/* Whether this process may write path and make files beside it (an upgrade's journal). */
static bool writable(const char *path)
{
	char dir[4096];
	snprintf(dir, sizeof(dir), "%s", path);
	char *slash = strrchr(dir, '/');
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else
		slash[slash == dir] = '\0'; /* "/x.db": the root */
	return access(path, W_OK) == 0 && access(dir, W_OK) == 0;
}

store *store_open_read(const char *path, char *err, size_t errlen)
{
	sqlite_setup();
	store *s = store_new(path);
	if (!s) {
		snprintf(err, errlen, "%s: out of memory", path);
		return NULL;
	}
	bool fresh;
	int64_t ver;
	if (open_read_only(s, path, false) != 0)
		return fail_open(s, err, errlen);
	if (check_identity(s, &fresh, &ver) != 0) {
		/* A WAL database where SQLite cannot make the -shm file it reads through: a
		 * read-only file system (SQLITE_CANTOPEN) or folder (SQLITE_READONLY_DIRECTORY).
		 * When no journal holds anything, the file alone is the whole database and is read
		 * as it is; else rows would be missing (or half-written ones read), and that is said. */
		int code = sqlite3_extended_errcode(s->db) & 0xff;
		const char *journal;
		if (code != SQLITE_CANTOPEN && code != SQLITE_READONLY)
			return fail_open(s, err, errlen);
		if ((journal = pending_journal(path))) {
			snprintf(s->err, sizeof(s->err), "%s: %s, which it cannot read here without writing "
			         "(a read-only file system or folder); open it once where it can be written",
			         path, !strcmp(journal, "-wal") ? "rows are still in its write-ahead log (-wal)"
			                                       : "an interrupted write left a -journal");
			return fail_open(s, err, errlen);
		}
		sqlite3_close(s->db);
		s->db = NULL;
		if (open_read_only(s, path, true) != 0 || check_identity(s, &fresh, &ver) != 0)
			return fail_open(s, err, errlen);
	}
	if (fresh) {
		snprintf(s->err, sizeof(s->err), "%s: not an iwscope database (empty)", path);
		return fail_open(s, err, errlen);
	}
	if (ver < SCHEMA_VERSION && !writable(path)) {
		/* an older schema that cannot be upgraded here: read as if it were, unchanged */
		char *sql = schema_read_as_upgraded_sql((int)ver);
		if (!sql) {
			snprintf(s->err, sizeof(s->err), "%s: iwscope schema version %lld must be upgraded to "
			         "%d once, which needs write access to the file", path, (long long)ver,
			         SCHEMA_VERSION);
			return fail_open(s, err, errlen);
		}
		int rc = store_exec(s, sql, "cannot read the older schema");
		free(sql);
		if (rc != 0)
			return fail_open(s, err, errlen);
		s->read_as_upgraded = true;
	} else if (ver < SCHEMA_VERSION) {
		/* an older schema: upgraded once through a writing connection, then read as usual */
		sqlite3_close(s->db);
		s->db = NULL;
		store *w = store_open(path, err, errlen);
		if (!w) {
			snprintf(s->err, sizeof(s->err), "%s: iwscope schema version %lld must be upgraded to "
			         "%d, which needs write access (%s)", path, (long long)ver, SCHEMA_VERSION, err);
			return fail_open(s, err, errlen);
		}
		store_close(w);
		if (open_read_only(s, path, false) != 0)
			return fail_open(s, err, errlen);
	}
	return s;
}

void store_close(store *s)
{
	if (!s)
		return;
	if (s->in_txn)
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
	build_indexes(s); /* a run that failed: its rows stay, and so does the schema */
	sqlite3_finalize(s->ins_flow);
	sqlite3_close(s->db);
	free(s);
}

static int bind_i64(sqlite3_stmt *st, int i, int64_t v)
{
	return v == NULL64 ? sqlite3_bind_null(st, i) : sqlite3_bind_int64(st, i, v);
}

/* SQLITE_STATIC: SQLite reads the text during the step that follows, while the record is
 * still the caller's (its texts are inside it or static); every row binds every column anew,
 * so no pointer outlives its row. */
static int bind_text(sqlite3_stmt *st, int i, const char *v)
{
	return v ? sqlite3_bind_text(st, i, v, -1, SQLITE_STATIC) : sqlite3_bind_null(st, i);
}

int store_commit(store *s)
{
	if (!s->in_txn)
		return 0;
	if (store_exec(s, "COMMIT", "cannot commit") != 0) {
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
		s->in_txn = false;
		return -1;
	}
	s->in_txn = false;
	s->pending = 0;
	s->last_commit_us = clock_mono_us();
	return 0;
}

/* Runs sql with ?1 = probe and ?2 = source; the first column of its first row, if any, in *out. */
static int probe_source_int(store *s, const char *sql, const char *probe, const char *source,
                            int64_t *out)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_text(st, 1, probe, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, source, -1, SQLITE_STATIC);
	int rc = sqlite3_step(st);
	if (rc == SQLITE_ROW && out)
		*out = sqlite3_column_type(st, 0) == SQLITE_NULL ? 0 : sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : -1;
}

#define EARLIER_RUNS "(SELECT id FROM runs WHERE probe = ?1 AND source = ?2)"

/* A capture file's source already analysed here by this probe: refused (its flows would count
 * twice), or its earlier runs removed (--replace; the caller's transaction adds the new one).
 * 0 when the run may go on. */
static int earlier_runs(store *s, const struct run_info *run)
{
	int64_t n = 0, id = 0, flows = 0;
	if (probe_source_int(s, "SELECT count(*) FROM runs WHERE probe = ?1 AND source = ?2",
	                     s->probe, run->source, &n) != 0 ||
	    probe_source_int(s, "SELECT max(id) FROM runs WHERE probe = ?1 AND source = ?2",
	                     s->probe, run->source, &id) != 0 ||
	    probe_source_int(s, "SELECT count(*) FROM flows WHERE probe = ?1 AND run_id IN " EARLIER_RUNS,
	                     s->probe, run->source, &flows) != 0) {
		store_fail(s, "cannot look for earlier runs of this source");
		return -1;
	}
	if (!n)
		return 0;
	if (run->again == RUN_NEW_ONLY) {
		snprintf(s->err, sizeof(s->err),
		         "%s: %s was analysed here before (run %lld of probe %s, %lld flows): "
		         "--replace analyses it again in its place, --append adds it a second time",
		         s->path, run->source, (long long)id, s->probe, (long long)flows);
		return -1;
	}
	if (probe_source_int(s, "DELETE FROM flows WHERE probe = ?1 AND run_id IN " EARLIER_RUNS,
	                     s->probe, run->source, NULL) != 0 ||
	    probe_source_int(s, "DELETE FROM run_decode WHERE probe = ?1 AND run_id IN " EARLIER_RUNS,
	                     s->probe, run->source, NULL) != 0 ||
	    probe_source_int(s, "DELETE FROM runs WHERE probe = ?1 AND source = ?2",
	                     s->probe, run->source, NULL) != 0) {
		store_fail(s, "cannot remove the earlier runs of this source");
		return -1;
	}
	s->replaced_runs = n;
	s->replaced_flows = flows;
	return 0;
}

void store_replaced(const store *s, int64_t *runs, int64_t *flows)
{
	*runs = s->replaced_runs;
	*flows = s->replaced_flows;
}

/* Records the run. Its id is its start time in microseconds, or one more than the probe's
 * latest run here if that is later: unique per probe, and the same wherever the rows go. An
 * earlier run of the same capture files is refused or replaced in the same transaction. */
static int sink_begin(void *self, const struct run_info *run)
{
	store *s = self;
	sqlite3_stmt *st;
	const char *sql = "INSERT INTO runs (probe, id, started_us, source, filter, options, "
	                  "iwscope_version, libpcap_version, ndpi_version, status) VALUES (?1, "
	                  "max(?2, coalesce((SELECT max(id) + 1 FROM runs WHERE probe = ?1), 0)), "
	                  "?2, ?3, ?4, ?5, ?6, ?7, ?8, 'running') RETURNING id";
	snprintf(s->probe, sizeof(s->probe), "%s", run->probe);
	bool check = run->again == RUN_NEW_ONLY || run->again == RUN_REPLACE;
	if (check && store_exec(s, "BEGIN IMMEDIATE", "cannot record the run") != 0)
		return -1;
	if (check && earlier_runs(s, run) != 0) {
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
		return -1;
	}
	if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) {
		store_fail(s, "cannot record the run");
		if (check)
			sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
		return -1;
	}
	bind_text(st, 1, s->probe);
	bind_i64(st, 2, run->started_us);
	bind_text(st, 3, run->source);
	bind_text(st, 4, run->filter);
	bind_text(st, 5, run->options);
	bind_text(st, 6, IWSCOPE_VERSION);
	bind_text(st, 7, run->libpcap_version);
	bind_text(st, 8, run->ndpi_version);
	int rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		s->run_id = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	if (rc != SQLITE_ROW) {
		store_fail(s, "cannot record the run");
		if (check)
			sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
		return -1;
	}
	if (check && store_exec(s, "COMMIT", "cannot record the run") != 0) {
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
		return -1;
	}
	/* A bulk load into an empty table: secondary indexes built once at the end, plain inserts
	 * (each flow written once, its run just recorded), a rollback journal and no syncs, as
	 * tcpdump -w; a power failure mid-run may damage a file that held no flows (the capture
	 * can be run again). Why each, measured: bench/RESULTS.md, History. */
	int64_t empty = 0;
	if (s->bulk && store_int(s, "SELECT NOT EXISTS (SELECT 1 FROM flows)", &empty) == 0 && empty) {
		s->rollback_journal = journal_mode(s, "delete", "OFF");
		if (each_secondary_index(s, drop_index) != 0)
			return -1;
		s->indexes_dropped = true;
		if (store_exec(s, "PRAGMA foreign_keys=OFF", "cannot defer the foreign key") != 0 ||
		    prepare_insert(s, false) != 0)
			return -1;
	}
	s->last_commit_us = clock_mono_us();
	return 0;
}

/* The indexes a bulk load left out, built now. 0 or -1. */
static int build_indexes(store *s)
{
	if (!s->indexes_dropped)
		return 0;
	s->indexes_dropped = false;
	if (each_secondary_index(s, create_index) != 0 ||
	    store_exec(s, "PRAGMA foreign_keys=ON", "cannot enable foreign keys") != 0)
		return -1;
	/* back to WAL, for readers during later runs; should another connection hold the file
	 * now, the next writer's open sets it */
	if (s->rollback_journal && journal_mode(s, "wal", "NORMAL"))
		s->rollback_journal = false;
	return prepare_insert(s, true);
}

void store_bulk(store *s) { s->bulk = true; }

static int sink_flow(void *self, const struct flow_record *r)
{
	store *s = self;
	sqlite3_stmt *st = s->ins_flow;
	if (!s->in_txn) {
		if (store_exec(s, "BEGIN IMMEDIATE", "cannot start a transaction") != 0)
			return -1;
		s->in_txn = true;
	}
	bind_text(st, 1, s->probe);
	bind_i64(st, 2, s->run_id);
	int i = 3; /* every column of record_columns, in its order: the statement's */
#define BIND_INT(v) bind_i64(st, i++, (int64_t)(v))
#define BIND_TEXT(v) bind_text(st, i++, (v))
#define BIND(name, type, value) BIND_##type(value);
#define BIND_SIDES(name, type, value) \
	{ const struct side_record *sd = &r->c; BIND_##type(value); } \
	{ const struct side_record *sd = &r->s; BIND_##type(value); }
	FLOW_HEAD(BIND) SIDE(BIND_SIDES) FLOW_TAIL(BIND) SIDE_TAIL(BIND_SIDES)
#undef BIND_INT
#undef BIND_TEXT
#undef BIND
#undef BIND_SIDES
	int rc = sqlite3_step(st); /* every parameter is bound anew for each row */
	sqlite3_reset(st);
	if (rc != SQLITE_DONE) {
		store_fail(s, "cannot write a flow");
		return -1;
	}
	if (++s->pending >= STORE_BATCH_ROWS)
		return store_commit(s);
	return 0;
}

static int sink_tick(void *self)
{
	store *s = self;
	if (s->in_txn && clock_mono_us() - s->last_commit_us >= 1000000u)
		return store_commit(s);
	return 0;
}

static int sink_end(void *self, const struct run_info *run)
{
	store *s = self;
	if (store_commit(s) != 0)
		return -1;
	if (store_exec(s, "BEGIN IMMEDIATE", "cannot start a transaction") != 0)
		return -1;
	s->in_txn = true;
	sqlite3_stmt *st;
	const char *sql = "UPDATE runs SET finished_us=?, status=?, packets=?, bytes=?, tcp_packets=?, "
	                  "decode_errors=?, flows=?, evicted=?, skipped_files=?, pcap_received=?, "
	                  "pcap_dropped=?, dpi_peak_states=?, one_direction=?, syn_opts_cut=?, "
	                  "acked_unseen=? WHERE id=? AND probe=?";
	if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
		goto fail;
	bind_i64(st, 1, run->finished_us);
	bind_text(st, 2, run->status);
	bind_i64(st, 3, (int64_t)run->packets);
	bind_i64(st, 4, (int64_t)run->bytes);
	bind_i64(st, 5, (int64_t)run->tcp_packets);
	bind_i64(st, 6, (int64_t)run->decode_errors);
	bind_i64(st, 7, (int64_t)run->flows);
	bind_i64(st, 8, (int64_t)run->evicted);
	bind_i64(st, 9, (int64_t)run->skipped_files);
	bind_i64(st, 10, run->pcap_received);
	bind_i64(st, 11, run->pcap_dropped);
	bind_i64(st, 12, run->dpi_peak_states);
	bind_i64(st, 13, (int64_t)run->one_direction);
	bind_i64(st, 14, (int64_t)run->syn_opts_cut);
	bind_i64(st, 15, (int64_t)run->acked_unseen);
	bind_i64(st, 16, s->run_id);
	bind_text(st, 17, s->probe);
	int rc = sqlite3_step(st);
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		goto fail;
	if (sqlite3_prepare_v2(s->db, "INSERT INTO run_decode (probe, run_id, reason, packets) "
	                       "VALUES (?,?,?,?)", -1, &st, NULL) != SQLITE_OK)
		goto fail;
	for (unsigned k = 0; k < run->nreasons; k++) {
		bind_text(st, 1, s->probe);
		bind_i64(st, 2, s->run_id);
		bind_text(st, 3, run->reason_names[k]);
		bind_i64(st, 4, (int64_t)run->reasons[k]);
		rc = sqlite3_step(st);
		sqlite3_reset(st);
		if (rc != SQLITE_DONE) {
			sqlite3_finalize(st);
			goto fail;
		}
	}
	sqlite3_finalize(st);
	if (store_commit(s) != 0)
		return -1;
	return build_indexes(s);
fail:
	store_fail(s, "cannot finish the run");
	sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
	s->in_txn = false;
	return -1;
}

static void sink_close(void *self) { store_close(self); }

static const char *sink_error(void *self) { return store_error(self); }

static const struct sink_ops store_ops = {
	.name = "sqlite",
	.begin = sink_begin,
	.flow = sink_flow,
	.tick = sink_tick,
	.end = sink_end,
	.close = sink_close,
	.error = sink_error,
};

struct sink store_sink(store *s)
{
	struct sink k = { &store_ops, s };
	return k;
}

int store_query(store *s, const char *sql, db_row_fn row, void *arg)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) {
		store_fail(s, "query failed");
		return -1;
	}
	int n = sqlite3_column_count(st);
	const char *names[64], *vals[64];
	enum db_type types[64];
	if (n > 64)
		n = 64;
	for (int i = 0; i < n; i++)
		names[i] = sqlite3_column_name(st, i);
	int rc = SQLITE_DONE;
	if (row(arg, n, names, NULL, NULL) == 0) {
		while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
			for (int i = 0; i < n; i++) {
				/* the value's own type: a text column's '0x1F' stays text */
				switch (sqlite3_column_type(st, i)) {
				case SQLITE_INTEGER: types[i] = DB_INT; break;
				case SQLITE_FLOAT: types[i] = DB_REAL; break;
				case SQLITE_NULL: types[i] = DB_NULL; break;
				default: types[i] = DB_TEXT; break;
				}
				vals[i] = (const char *)sqlite3_column_text(st, i);
			}
			if (row(arg, n, names, vals, types) != 0)
				break;
		}
	}
	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		store_fail(s, "query failed");
		sqlite3_finalize(st);
		return -1;
	}
	sqlite3_finalize(st);
	return 0;
}
