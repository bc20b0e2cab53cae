/* An iwscope SQLite database's connection: schema/sqlite.sql + schema/views.sql (embedded at
 * build time) created, checked or upgraded at open, WAL; files opened read-only for `report`,
 * `plot` and `merge`; the runs' records and the secondary indexes a bulk load defers. The SQLite
 * sink (sinks/store.c), the spool (spool.c), merge (dbmerge.c) and reports (dbread.c) use it. */
#include "sqldb.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <errno.h>

#include <sqlite3.h>

#include "config.h"
#include "schema.h"

extern const char sqldb_schema_sql[]; /* build/schema_sql.c, generated from schema/ */

#define APPLICATION_ID 0x49575343 /* 'IWSC' */

struct sqldb {
	sqlite3 *db;
	char path[256];
	char err[2048];        /* the last error: a message fits whole (schema_source_shown) */
	bool read_as_upgraded;   /* a read of an older schema through TEMP views (read-only file) */
};

const char *sqldb_sqlite_version(void) { return sqlite3_libversion(); }
int sqldb_schema_version(void) { return SCHEMA_VERSION; }
const char *sqldb_error(const sqldb *d) { return d->err; }
const char *sqldb_schema_text(void) { return sqldb_schema_sql; }
struct sqlite3 *sqldb_handle(sqldb *d) { return d->db; }
const char *sqldb_path(const sqldb *d) { return d->path; }
bool sqldb_read_as_upgraded(const sqldb *d) { return d->read_as_upgraded; }

void sqldb_fail(sqldb *d, const char *what)
{
	snprintf(d->err, sizeof(d->err), "%s: %s: %s", d->path, what,
	         d->db ? sqlite3_errmsg(d->db) : "out of memory");
}

void sqldb_failf(sqldb *d, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(d->err, sizeof(d->err), fmt, ap);
	va_end(ap);
}

int sqldb_exec(sqldb *d, const char *sql, const char *what)
{
	char *msg = NULL;
	if (sqlite3_exec(d->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
		snprintf(d->err, sizeof(d->err), "%s: %s: %s", d->path, what, msg ? msg : "error");
		sqlite3_free(msg);
		return -1;
	}
	return 0;
}

int sqldb_int(sqldb *d, const char *sql, int64_t *out)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(d->db, sql, -1, &st, NULL) != SQLITE_OK)
		return -1;
	int rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*out = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return rc == SQLITE_ROW ? 0 : -1;
}

/* Checks that the open file is an iwscope database of our version or one we can upgrade
 * (*ver), or empty (fresh = true). */
static int check_identity(sqldb *d, bool *fresh, int64_t *ver)
{
	int64_t app = 0, objects = 0;
	*ver = 0;
	if (sqldb_int(d, "PRAGMA application_id", &app) != 0 ||
	    sqldb_int(d, "PRAGMA user_version", ver) != 0 ||
	    sqldb_int(d, "SELECT count(*) FROM sqlite_master", &objects) != 0) {
		sqldb_fail(d, "cannot read the database");
		return -1;
	}
	*fresh = app == 0 && *ver == 0 && objects == 0;
	if (*fresh)
		return 0;
	if (app != APPLICATION_ID) {
		snprintf(d->err, sizeof(d->err), "%s: not an iwscope database (refusing to touch it)",
		         d->path);
		return -1;
	}
	if (*ver > SCHEMA_VERSION || *ver < SCHEMA_OLDEST) {
		snprintf(d->err, sizeof(d->err),
		         "%s: iwscope schema version %lld, this iwscope uses version %d%s", d->path,
		         (long long)*ver, SCHEMA_VERSION,
		         *ver > SCHEMA_VERSION ? " (a newer iwscope made it)" : " and cannot upgrade it");
		return -1;
	}
	return 0;
}

/* Upgrades a database of an older schema version in place, in one transaction (schema.h). */
static int upgrade(sqldb *d)
{
	if (sqldb_exec(d, "BEGIN IMMEDIATE", "cannot start the upgrade") != 0)
		return -1;
	bool fresh;
	int64_t ver;
	if (check_identity(d, &fresh, &ver) != 0) /* another process may have done it meanwhile */
		goto fail;
	if (ver < SCHEMA_VERSION) {
		char *sql = schema_upgrade_sql((int)ver);
		char pragma[48];
		snprintf(pragma, sizeof(pragma), "PRAGMA user_version = %d", SCHEMA_VERSION);
		if (!sql) {
			snprintf(d->err, sizeof(d->err), "%s: cannot upgrade schema version %lld",
			         d->path, (long long)ver);
			goto fail;
		}
		int rc = sqldb_exec(d, sql, "cannot upgrade the schema");
		free(sql);
		if (rc != 0 || sqldb_exec(d, pragma, "cannot upgrade the schema") != 0)
			goto fail;
	}
	return sqldb_exec(d, "COMMIT", "cannot commit the upgrade");
fail:
	sqlite3_exec(d->db, "ROLLBACK", NULL, NULL, NULL);
	return -1;
}

/* Sets the journal mode, and the synchronous level to go with it; whether the database is now
 * in that mode. SQLite leaves the mode as it was while another connection has the file open. */
bool sqldb_journal_mode(sqldb *d, const char *mode, const char *sync)
{
	char sql[64];
	snprintf(sql, sizeof(sql), "PRAGMA journal_mode=%s", mode);
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(d->db, sql, -1, &st, NULL) != SQLITE_OK)
		return false;
	const char *now = sqlite3_step(st) == SQLITE_ROW ? (const char *)sqlite3_column_text(st, 0) : NULL;
	bool ok = now && !strcasecmp(now, mode);
	sqlite3_finalize(st);
	if (ok) {
		snprintf(sql, sizeof(sql), "PRAGMA synchronous=%s", sync);
		ok = sqlite3_exec(d->db, sql, NULL, NULL, NULL) == SQLITE_OK;
	}
	return ok;
}

static sqldb *new_conn(const char *path)
{
	sqldb *d = calloc(1, sizeof(*d));
	if (d)
		snprintf(d->path, sizeof(d->path), "%s", path);
	return d;
}

static sqldb *fail_open(sqldb *d, char *err, size_t errlen)
{
	snprintf(err, errlen, "%s", d->err[0] ? d->err : "cannot open the database");
	sqldb_close(d);
	return NULL;
}

/* The schema's secondary indexes one by one (schema_each_index), d as arg. */
static int each_secondary_index(sqldb *d, schema_index_fn fn)
{
	return schema_each_index(sqldb_schema_sql, fn, d);
}

static int drop_index(void *arg, const char *name, int nlen, const char *stmt, int slen)
{
	sqldb *d = arg;
	(void)stmt, (void)slen;
	char sql[256];
	snprintf(sql, sizeof(sql), "DROP INDEX IF EXISTS %.*s", nlen, name);
	return sqldb_exec(d, sql, "cannot defer an index");
}

static int create_index(void *arg, const char *name, int nlen, const char *stmt, int slen)
{
	sqldb *d = arg;
	(void)name, (void)nlen;
	char sql[1024];
	const int lead = (int)strlen("CREATE INDEX ");
	snprintf(sql, sizeof(sql), "CREATE INDEX IF NOT EXISTS %.*s", slen - lead, stmt + lead);
	return sqldb_exec(d, sql, "cannot build an index");
}

/* An index that is missing (a run that loaded unindexed was killed) is built; one that is
 * there costs a read only. */
static int heal_index(void *arg, const char *name, int nlen, const char *stmt, int slen)
{
	sqldb *d = arg;
	char sql[256]; /* the name is the embedded schema's own */
	int64_t there = 0;
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND "
	         "name = '%.*s'", nlen, name);
	if (sqldb_int(d, sql, &there) != 0) {
		sqldb_fail(d, "cannot read the schema");
		return -1;
	}
	return there ? 0 : create_index(d, name, nlen, stmt, slen);
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

/* The folder path is in ("." for a bare name, "/" for "/x.db"), into dir. */
static void folder_of(const char *path, char *dir, size_t len)
{
	snprintf(dir, len, "%s", path);
	char *slash = strrchr(dir, '/');
	if (!slash)
		snprintf(dir, len, ".");
	else
		slash[slash == dir] = '\0';
}

/* Why a database that does not exist yet cannot be created at path, as sqlite3 and tcpdump say
 * it ("directory /x does not exist", "Permission denied"), into d->err; false when nothing is in
 * the way that can be seen before trying. */
static bool cannot_create(sqldb *d, const char *path)
{
	struct stat st;
	char dir[256]; /* as d->path */
	if (stat(path, &st) == 0 || errno != ENOENT)
		return false;
	folder_of(path, dir, sizeof(dir));
	if (stat(dir, &st) != 0) {
		snprintf(d->err, sizeof(d->err), "%s: cannot create the database: directory %s %s", path,
		         dir, errno == ENOENT ? "does not exist" : strerror(errno));
		return true;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(d->err, sizeof(d->err), "%s: cannot create the database: %s is not a directory",
		         path, dir);
		return true;
	}
	if (access(dir, W_OK | X_OK) != 0) {
		snprintf(d->err, sizeof(d->err), "%s: cannot create the database in %s: %s", path, dir,
		         strerror(errno));
		return true;
	}
	return false;
}

sqldb *sqldb_open(const char *path, char *err, size_t errlen)
{
	sqlite_setup();
	sqldb *d = new_conn(path);
	if (!d) {
		snprintf(err, errlen, "%s: out of memory", path);
		return NULL;
	}
	struct stat st;
	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		snprintf(d->err, sizeof(d->err), "%s: not a regular file", path);
		return fail_open(d, err, errlen);
	}
	if (cannot_create(d, path))
		return fail_open(d, err, errlen);
	/* NOMUTEX: a connection is used by one thread at a time (handed to the stage thread and back
	 * with its start and join), so SQLite's per-call locking is dead weight */
	if (sqlite3_open_v2(path, &d->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
	                    NULL) != SQLITE_OK) {
		sqldb_fail(d, "cannot open");
		return fail_open(d, err, errlen);
	}
	sqlite3_extended_result_codes(d->db, 1);
	sqlite3_busy_timeout(d->db, STORE_BUSY_MS);
	bool fresh;
	int64_t ver;
	if (check_identity(d, &fresh, &ver) != 0)
		return fail_open(d, err, errlen);
	if (sqlite3_db_readonly(d->db, "main") == 1) {
		snprintf(d->err, sizeof(d->err), "%s: database is read-only", path);
		return fail_open(d, err, errlen);
	}
	if (sqldb_exec(d, "PRAGMA journal_mode=WAL", "cannot enable WAL") != 0 ||
	    sqldb_exec(d, "PRAGMA synchronous=NORMAL", "cannot set synchronous") != 0 ||
	    sqldb_exec(d, "PRAGMA foreign_keys=ON", "cannot enable foreign keys") != 0)
		return fail_open(d, err, errlen);
	if (fresh) {
		if (sqldb_exec(d, "BEGIN IMMEDIATE", "cannot start the schema transaction") != 0)
			return fail_open(d, err, errlen);
		/* another process may have created it meanwhile: check again inside the lock */
		if (check_identity(d, &fresh, &ver) != 0) {
			sqlite3_exec(d->db, "ROLLBACK", NULL, NULL, NULL);
			return fail_open(d, err, errlen);
		}
		if (fresh && sqldb_exec(d, sqldb_schema_sql, "cannot create the schema") != 0) {
			sqlite3_exec(d->db, "ROLLBACK", NULL, NULL, NULL);
			return fail_open(d, err, errlen);
		}
		if (sqldb_exec(d, "COMMIT", "cannot commit the schema") != 0)
			return fail_open(d, err, errlen);
	} else if ((ver < SCHEMA_VERSION && upgrade(d) != 0) ||
	           each_secondary_index(d, heal_index) != 0) {
		return fail_open(d, err, errlen);
	}
	return d;
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
 * 0, or -1 with d->err. */
static int open_read_only(sqldb *d, const char *path, bool immutable)
{
	char *uri = immutable ? immutable_uri(path) : NULL;
	if (immutable && !uri) {
		snprintf(d->err, sizeof(d->err), "%s: out of memory", path);
		return -1;
	}
	int rc = sqlite3_open_v2(uri ? uri : path, &d->db,
	                         SQLITE_OPEN_READONLY | (uri ? SQLITE_OPEN_URI : 0), NULL);
	free(uri);
	if (rc != SQLITE_OK) {
		sqldb_fail(d, "cannot open");
		return -1;
	}
	sqlite3_extended_result_codes(d->db, 1);
	sqlite3_busy_timeout(d->db, STORE_BUSY_MS);
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
	folder_of(path, dir, sizeof(dir));
	return access(path, W_OK) == 0 && access(dir, W_OK) == 0;
}

sqldb *sqldb_open_read(const char *path, char *err, size_t errlen)
{
	sqlite_setup();
	sqldb *d = new_conn(path);
	if (!d) {
		snprintf(err, errlen, "%s: out of memory", path);
		return NULL;
	}
	bool fresh;
	int64_t ver;
	struct stat st;
	if (stat(path, &st) != 0) {
		snprintf(d->err, sizeof(d->err), "%s: %s", path,
		         errno == ENOENT ? "no such file" : strerror(errno));
		return fail_open(d, err, errlen);
	}
	if (S_ISDIR(st.st_mode)) {
		snprintf(d->err, sizeof(d->err), "%s: is a directory, not a database", path);
		return fail_open(d, err, errlen);
	}
	if (open_read_only(d, path, false) != 0)
		return fail_open(d, err, errlen);
	if (check_identity(d, &fresh, &ver) != 0) {
		/* A WAL database where SQLite cannot make the -shm file it reads through: a
		 * read-only file system (SQLITE_CANTOPEN) or folder (SQLITE_READONLY_DIRECTORY).
		 * When no journal holds anything, the file alone is the whole database and is read
		 * as it is; else rows would be missing (or half-written ones read), and that is said. */
		int code = sqlite3_extended_errcode(d->db) & 0xff;
		const char *journal;
		if (code != SQLITE_CANTOPEN && code != SQLITE_READONLY)
			return fail_open(d, err, errlen);
		if ((journal = pending_journal(path))) {
			snprintf(d->err, sizeof(d->err), "%s: %s, which it cannot read here without writing "
			         "(a read-only file system or folder); open it once where it can be written",
			         path, !strcmp(journal, "-wal") ? "rows are still in its write-ahead log (-wal)"
			                                       : "an interrupted write left a -journal");
			return fail_open(d, err, errlen);
		}
		sqlite3_close(d->db);
		d->db = NULL;
		if (open_read_only(d, path, true) != 0 || check_identity(d, &fresh, &ver) != 0)
			return fail_open(d, err, errlen);
	}
	if (fresh) {
		snprintf(d->err, sizeof(d->err), "%s: not an iwscope database (empty)", path);
		return fail_open(d, err, errlen);
	}
	if (ver < SCHEMA_VERSION && !writable(path)) {
		/* an older schema that cannot be upgraded here: read as if it were, unchanged */
		char *sql = schema_read_as_upgraded_sql((int)ver);
		if (!sql) {
			snprintf(d->err, sizeof(d->err), "%s: iwscope schema version %lld must be upgraded to "
			         "%d once, which needs write access to the file", path, (long long)ver,
			         SCHEMA_VERSION);
			return fail_open(d, err, errlen);
		}
		int rc = sqldb_exec(d, sql, "cannot read the older schema");
		free(sql);
		if (rc != 0)
			return fail_open(d, err, errlen);
		d->read_as_upgraded = true;
	} else if (ver < SCHEMA_VERSION) {
		/* an older schema: upgraded once through a writing connection, then read as usual */
		sqlite3_close(d->db);
		d->db = NULL;
		sqldb *w = sqldb_open(path, err, errlen);
		if (!w) {
			snprintf(d->err, sizeof(d->err), "%s: iwscope schema version %lld must be upgraded to "
			         "%d, which needs write access (%s)", path, (long long)ver, SCHEMA_VERSION, err);
			return fail_open(d, err, errlen);
		}
		sqldb_close(w);
		if (open_read_only(d, path, false) != 0)
			return fail_open(d, err, errlen);
	}
	return d;
}

void sqldb_close(sqldb *d)
{
	if (!d)
		return;
	sqlite3_close(d->db);
	free(d);
}

int sqldb_drop_indexes(sqldb *d) { return each_secondary_index(d, drop_index); }
int sqldb_build_indexes(sqldb *d) { return each_secondary_index(d, create_index); }

int sqldb_bind_i64(sqlite3_stmt *st, int i, int64_t v)
{
	return v == NULL64 ? sqlite3_bind_null(st, i) : sqlite3_bind_int64(st, i, v);
}

/* SQLITE_STATIC: SQLite reads the text during the step that follows, while the record is
 * still the caller's (its texts are inside it or static); every row binds every column anew,
 * so no pointer outlives its row. */
int sqldb_bind_text(sqlite3_stmt *st, int i, const char *v)
{
	return v ? sqlite3_bind_text(st, i, v, -1, SQLITE_STATIC) : sqlite3_bind_null(st, i);
}

/* Runs sql with ?1 = probe and ?2 = source; the first column of its first row, if any, in *out. */
static int probe_source_int(sqldb *d, const char *sql, const char *probe, const char *source,
                            int64_t *out)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(d->db, sql, -1, &st, NULL) != SQLITE_OK)
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
#define EARLIER_PRODUCED "FROM runs WHERE probe = ?1 AND source = ?2 AND " RUN_PRODUCED

/* A capture file's source already analysed here by this probe: refused (its flows would count
 * twice), or its earlier runs removed (--replace; the caller's transaction adds the new one).
 * 0 when the run may go on. */
static int earlier_runs(sqldb *d, const char *probe, const struct run_info *run,
                        int64_t *replaced_runs, int64_t *replaced_flows)
{
	int64_t n = 0, id = 0, flows = 0;
	if (probe_source_int(d, "SELECT count(*) " EARLIER_PRODUCED, probe, run->source, &n) != 0 ||
	    probe_source_int(d, "SELECT max(id) " EARLIER_PRODUCED,
	                     probe, run->source, &id) != 0 ||
	    probe_source_int(d, "SELECT count(*) FROM flows WHERE probe = ?1 AND run_id IN " EARLIER_RUNS,
	                     probe, run->source, &flows) != 0) {
		sqldb_fail(d, "cannot look for earlier runs of this source");
		return -1;
	}
	if (!n)
		return 0;
	if (run->again == RUN_NEW_ONLY) {
		/* a run still 'running' without a flow: another process reading these files now, or
		 * one that stopped without recording its end; which, the file cannot say */
		int64_t running = 0;
		if (probe_source_int(d, "SELECT count(*) " EARLIER_PRODUCED " AND status = 'running'",
		                     probe, run->source, &running) != 0) {
			sqldb_fail(d, "cannot look for earlier runs of this source");
			return -1;
		}
		char shown[SCHEMA_SOURCE_SHOWN];
		schema_source_shown(run->source, shown, sizeof(shown));
		if (running == n && !flows)
			snprintf(d->err, sizeof(d->err),
			         "%s: %s is being analysed here (run %lld of probe %s, still running, no flows "
			         "yet: another iwscope now, or one stopped before recording its end): "
			         "--replace analyses it again in its place, --append adds it a second time",
			         d->path, shown, (long long)id, probe);
		else
			snprintf(d->err, sizeof(d->err),
			         "%s: %s was analysed here before (run %lld of probe %s, %lld flows): "
			         "--replace analyses it again in its place, --append adds it a second time",
			         d->path, shown, (long long)id, probe, (long long)flows);
		return -1;
	}
	if (probe_source_int(d, "DELETE FROM flows WHERE probe = ?1 AND run_id IN " EARLIER_RUNS,
	                     probe, run->source, NULL) != 0 ||
	    probe_source_int(d, "DELETE FROM run_decode WHERE probe = ?1 AND run_id IN " EARLIER_RUNS,
	                     probe, run->source, NULL) != 0 ||
	    probe_source_int(d, "DELETE FROM runs WHERE probe = ?1 AND source = ?2",
	                     probe, run->source, NULL) != 0) {
		sqldb_fail(d, "cannot remove the earlier runs of this source");
		return -1;
	}
	*replaced_runs = n;
	*replaced_flows = flows;
	return 0;
}

int sqldb_run_record(sqldb *d, const char *probe, const struct run_info *run, int64_t *run_id,
                     int64_t *replaced_runs, int64_t *replaced_flows)
{
	sqlite3_stmt *st;
	const char *sql = "INSERT INTO runs (probe, id, started_us, source, filter, options, "
	                  "iwscope_version, libpcap_version, ndpi_version, status) VALUES (?1, "
	                  "max(?2, coalesce((SELECT max(id) + 1 FROM runs WHERE probe = ?1), 0)), "
	                  "?2, ?3, ?4, ?5, ?6, ?7, ?8, 'running') RETURNING id";
	if ((run->again == RUN_NEW_ONLY || run->again == RUN_REPLACE) &&
	    earlier_runs(d, probe, run, replaced_runs, replaced_flows) != 0)
		return -1;
	if (sqlite3_prepare_v2(d->db, sql, -1, &st, NULL) != SQLITE_OK) {
		sqldb_fail(d, "cannot record the run");
		return -1;
	}
	sqldb_bind_text(st, 1, probe);
	sqldb_bind_i64(st, 2, run->started_us);
	sqldb_bind_text(st, 3, run->source);
	sqldb_bind_text(st, 4, run->filter);
	sqldb_bind_text(st, 5, run->options);
	sqldb_bind_text(st, 6, IWSCOPE_VERSION);
	sqldb_bind_text(st, 7, run->libpcap_version);
	sqldb_bind_text(st, 8, run->ndpi_version);
	int rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*run_id = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	if (rc != SQLITE_ROW) {
		sqldb_fail(d, "cannot record the run");
		return -1;
	}
	return 0;
}

int sqldb_run_finish(sqldb *d, const char *probe, int64_t run_id, const struct run_info *run)
{
	sqlite3_stmt *st;
	const char *sql = "UPDATE runs SET finished_us=?, status=?, packets=?, bytes=?, tcp_packets=?, "
	                  "decode_errors=?, flows=?, evicted=?, skipped_files=?, pcap_received=?, "
	                  "pcap_dropped=?, dpi_peak_states=?, one_direction=?, syn_opts_cut=?, "
	                  "acked_unseen=?, skipped=?, digest=? WHERE id=? AND probe=?";
	if (sqlite3_prepare_v2(d->db, sql, -1, &st, NULL) != SQLITE_OK)
		goto fail;
	sqldb_bind_i64(st, 1, run->finished_us);
	sqldb_bind_text(st, 2, run->status);
	sqldb_bind_i64(st, 3, (int64_t)run->packets);
	sqldb_bind_i64(st, 4, (int64_t)run->bytes);
	sqldb_bind_i64(st, 5, (int64_t)run->tcp_packets);
	sqldb_bind_i64(st, 6, (int64_t)run->decode_errors);
	sqldb_bind_i64(st, 7, (int64_t)run->flows);
	sqldb_bind_i64(st, 8, (int64_t)run->evicted);
	sqldb_bind_i64(st, 9, (int64_t)run->skipped_files);
	sqldb_bind_i64(st, 10, run->pcap_received);
	sqldb_bind_i64(st, 11, run->pcap_dropped);
	sqldb_bind_i64(st, 12, run->dpi_peak_states);
	sqldb_bind_i64(st, 13, (int64_t)run->one_direction);
	sqldb_bind_i64(st, 14, (int64_t)run->syn_opts_cut);
	sqldb_bind_i64(st, 15, (int64_t)run->acked_unseen);
	sqldb_bind_text(st, 16, run->skipped);
	sqldb_bind_text(st, 17, run->digest);
	sqldb_bind_i64(st, 18, run_id);
	sqldb_bind_text(st, 19, probe);
	int rc = sqlite3_step(st);
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		goto fail;
	if (sqlite3_prepare_v2(d->db, "INSERT INTO run_decode (probe, run_id, reason, packets) "
	                       "VALUES (?,?,?,?)", -1, &st, NULL) != SQLITE_OK)
		goto fail;
	for (unsigned k = 0; k < run->nreasons; k++) {
		sqldb_bind_text(st, 1, probe);
		sqldb_bind_i64(st, 2, run_id);
		sqldb_bind_text(st, 3, run->reason_names[k]);
		sqldb_bind_i64(st, 4, (int64_t)run->reasons[k]);
		rc = sqlite3_step(st);
		sqlite3_reset(st);
		if (rc != SQLITE_DONE) {
			sqlite3_finalize(st);
			goto fail;
		}
	}
	sqlite3_finalize(st);
	return 0;
fail:
	sqldb_fail(d, "cannot finish the run");
	return -1;
}

int sqldb_query(sqldb *d, const char *sql, db_row_fn row, void *arg)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(d->db, sql, -1, &st, NULL) != SQLITE_OK) {
		sqldb_fail(d, "query failed");
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
		sqldb_fail(d, "query failed");
		sqlite3_finalize(st);
		return -1;
	}
	sqlite3_finalize(st);
	return 0;
}
