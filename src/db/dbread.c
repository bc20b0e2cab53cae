/* Reports and plots read SQLite, PostgreSQL or ClickHouse through this; their SQL is the
 * dialects' common ground (schema/views.sql shows what that is). ClickHouse (18.16 in Debian)
 * speaks another SQL (no FILTER, no window functions, no GROUP BY 1): its rows, read through
 * their unmerged copies with FINAL, are copied into a private SQLite file that answers the
 * same SQL, so every report and chart is the one an SQLite file of those rows gives. */
#include "dbread.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "ch.h"
#include "pg.h"
#include "schema.h"
#include "sqldb.h"

struct dbread {
	sqldb *sqlite;
	pgdb *pg;
	char tmpdir[PATH_MAX]; /* the ClickHouse copy's folder, removed at close */
};

/* ---- ClickHouse: the deduplicated rows copied into a private SQLite file ---- */

struct copy {
	sqlite3_stmt *ins;
	int ncols;
	bool failed;
};

static int name_row(void *arg, int ncols, const char *const *names, const char *const *vals,
                    const enum db_type *types)
{
	(void)names;
	(void)types;
	char *list = arg;
	size_t n = strlen(list);
	if (vals && ncols > 0 && vals[0])
		snprintf(list + n, 8192 - n, "%s%s", n ? "," : "", vals[0]);
	return 0;
}

static int insert_row(void *arg, int ncols, const char *const *names, const char *const *vals,
                      const enum db_type *types)
{
	(void)names;
	(void)types;
	struct copy *c = arg;
	if (!vals)
		return ncols == c->ncols ? 0 : 1;
	for (int i = 0; i < ncols; i++)
		sqldb_bind_text(c->ins, i + 1, vals[i]); /* SQLite's column types make numbers of them */
	int rc = sqlite3_step(c->ins);
	sqlite3_reset(c->ins);
	if (rc != SQLITE_DONE) {
		c->failed = true;
		return 1;
	}
	return 0;
}

/* Copies one table of ch into the SQLite copy, every column SQLite's schema has. 0 or -1. */
static int copy_table(chdb *ch, sqldb *s, const char *table, char *err, size_t errlen)
{
	char cols[8192] = "", sql[8192 + 9000];
	snprintf(sql, sizeof(sql), "SELECT name FROM pragma_table_info('%s')", table);
	if (sqldb_query(s, sql, name_row, cols) != 0) {
		snprintf(err, errlen, "%s", sqldb_error(s));
		return -1;
	}
	struct copy c = { NULL, 1, false };
	int n = snprintf(sql, sizeof(sql), "INSERT INTO %s (%s) VALUES (?", table, cols);
	for (const char *p = cols; (p = strchr(p, ',')); p++, c.ncols++)
		n += snprintf(sql + n, sizeof(sql) - (size_t)n, ",?");
	snprintf(sql + n, sizeof(sql) - (size_t)n, ")");
	if (sqlite3_prepare_v2(sqldb_handle(s), sql, -1, &c.ins, NULL) != SQLITE_OK) {
		snprintf(err, errlen, "cannot copy %s: %s", table, sqlite3_errmsg(sqldb_handle(s)));
		return -1;
	}
	snprintf(sql, sizeof(sql), "SELECT %s FROM %s FINAL", cols, table);
	int rc = ch_query(ch, sql, insert_row, &c);
	if (rc != 0 || c.failed)
		snprintf(err, errlen, "%s", c.failed ? "cannot copy rows from ClickHouse"
		                                      : ch_error(ch));
	sqlite3_finalize(c.ins);
	return rc != 0 || c.failed ? -1 : 0;
}

static int open_ch(dbread *d, const char *target, char *err, size_t errlen)
{
	enum ch_fail fail;
	chdb *ch = ch_open(target, false, &fail, err, errlen);
	if (!ch)
		return -1;
	const char *tmp = getenv("TMPDIR");
	snprintf(d->tmpdir, sizeof(d->tmpdir), "%s/iwscope-read.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	char path[PATH_MAX + 16];
	int rc = -1;
	if (!mkdtemp(d->tmpdir)) {
		snprintf(err, errlen, "cannot make a folder for ClickHouse's rows in %s", tmp ? tmp : "/tmp");
		d->tmpdir[0] = '\0';
		goto out;
	}
	snprintf(path, sizeof(path), "%s/copy.db", d->tmpdir);
	if (!(d->sqlite = sqldb_open(path, err, errlen)))
		goto out;
	if (sqldb_exec(d->sqlite, "PRAGMA foreign_keys=OFF; PRAGMA synchronous=OFF", "copy") != 0 ||
	    sqldb_exec(d->sqlite, "BEGIN", "copy") != 0) {
		snprintf(err, errlen, "%s", sqldb_error(d->sqlite));
		goto out;
	}
	for (size_t i = 0; i < 3; i++)
		if (copy_table(ch, d->sqlite, schema_tables[i].name, err, errlen) != 0)
			goto out;
	if (sqldb_exec(d->sqlite, "COMMIT", "copy") != 0) {
		snprintf(err, errlen, "%s", sqldb_error(d->sqlite));
		goto out;
	}
	rc = 0;
out:
	ch_close(ch);
	return rc;
}

static void remove_copy(dbread *d)
{
	if (!d->tmpdir[0])
		return;
	static const char *const files[] = { "copy.db", "copy.db-wal", "copy.db-shm", "copy.db-journal" };
	char path[PATH_MAX + 32];
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", d->tmpdir, files[i]);
		unlink(path);
	}
	rmdir(d->tmpdir);
	d->tmpdir[0] = '\0';
}

/* ---- the three as one ---- */

dbread *dbread_open(const char *target, char *err, size_t errlen)
{
	dbread *d = calloc(1, sizeof(*d));
	if (!d) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (ch_is_uri(target)) {
		if (open_ch(d, target, err, errlen) != 0) {
			dbread_close(d);
			return NULL;
		}
	} else if (pg_is_uri(target)) {
		enum pg_fail fail;
		d->pg = pg_open(target, false, &fail, err, errlen);
	} else {
		d->sqlite = sqldb_open_read(target, err, errlen);
	}
	if (!d->pg && !d->sqlite) {
		free(d);
		return NULL;
	}
	return d;
}

int dbread_query(dbread *d, const char *sql, db_row_fn row, void *arg)
{
	return d->pg ? pg_query(d->pg, sql, row, arg) : sqldb_query(d->sqlite, sql, row, arg);
}

const char *dbread_error(const dbread *d)
{
	return d->pg ? pg_error(d->pg) : sqldb_error(d->sqlite);
}

void dbread_close(dbread *d)
{
	if (!d)
		return;
	pg_close(d->pg);
	sqldb_close(d->sqlite);
	remove_copy(d);
	free(d);
}
