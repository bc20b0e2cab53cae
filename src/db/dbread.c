/* Reports and plots read SQLite, PostgreSQL or ClickHouse through this: one backend each
 * (sqldb.c, pg.c, ch.c), each asked in its own dialect (struct dbread_sql). The database
 * answers every question itself, ClickHouse through FINAL (its rows not merged yet read as
 * one) on the server that holds them, or on every shard through the Distributed tables: only
 * the answers' rows come back. */
#include "dbread.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ch.h"
#include "pg.h"
#include "sqldb.h"

enum dialect { DIALECT_COMMON, DIALECT_CLICKHOUSE };

/* One kind of database: whether a target names it, and its connection's operations. */
struct backend {
	bool (*is_target)(const char *target);
	void *(*open)(const char *target, char *err, size_t errlen);
	int (*query)(void *conn, const char *sql, db_row_fn row, void *arg);
	const char *(*error)(const void *conn);
	void (*close)(void *conn);
	enum dialect dialect;
	bool reals_as_sqlite; /* Float values rewritten as SQLite writes them (ClickHouse's 100 is
	                       * 100.0); PostgreSQL's left as it sends them */
};

struct dbread {
	const struct backend *be;
	void *conn;
};

/* ---- the three backends ---- */

static bool is_file(const char *target)
{
	return !ch_is_uri(target) && !pg_is_uri(target);
}

static void *sqlite_open(const char *target, char *err, size_t errlen)
{
	return sqldb_open_read(target, err, errlen);
}

static int sqlite_query(void *c, const char *sql, db_row_fn row, void *arg)
{
	return sqldb_query(c, sql, row, arg);
}

static const char *sqlite_error(const void *c) { return sqldb_error(c); }

static void sqlite_close(void *c) { sqldb_close(c); }

static bool is_pg(const char *target) { return pg_is_uri(target); }

static void *pgr_open(const char *target, char *err, size_t errlen)
{
	enum pg_fail fail;
	return pg_open(target, false, &fail, err, errlen);
}

static int pgr_query(void *c, const char *sql, db_row_fn row, void *arg)
{
	return pg_query(c, sql, row, arg);
}

static const char *pgr_error(const void *c) { return pg_error(c); }

static void pgr_close(void *c) { pg_close(c); }

static bool is_ch(const char *target) { return ch_is_uri(target); }

static void *chr_open(const char *target, char *err, size_t errlen)
{
	enum ch_fail fail;
	return ch_open(target, false, &fail, err, errlen);
}

static int chr_query(void *c, const char *sql, db_row_fn row, void *arg)
{
	return ch_query(c, sql, row, arg);
}

static const char *chr_error(const void *c) { return ch_error(c); }

static void chr_close(void *c) { ch_close(c); }

static const struct backend backends[] = {
	{ is_ch, chr_open, chr_query, chr_error, chr_close, DIALECT_CLICKHOUSE, true },
	{ is_pg, pgr_open, pgr_query, pgr_error, pgr_close, DIALECT_COMMON, false },
	{ is_file, sqlite_open, sqlite_query, sqlite_error, sqlite_close, DIALECT_COMMON, false },
};

/* ---- REAL values as SQLite writes them ---- */

#define REAL_MAX_COLS 64

/* The caller's row function, its rows' REAL values rewritten first. */
struct reals {
	db_row_fn row;
	void *arg;
	char text[REAL_MAX_COLS][48];
};

/* v as SQLite's "%!.15g" writes a double: 15 significant digits, a point always (100.0,
 * 1.0e+20). v itself when it is no finite number. */
static const char *sqlite_real(const char *v, char *out, size_t len)
{
	char *end, g[40];
	double x = strtod(v, &end);
	if (end == v || *end || !isfinite(x))
		return v;
	snprintf(g, sizeof(g), "%.15g", x);
	char *e = strchr(g, 'e');
	if (strchr(g, '.'))
		snprintf(out, len, "%s", g);
	else if (e)
		snprintf(out, len, "%.*s.0%s", (int)(e - g), g, e);
	else
		snprintf(out, len, "%s.0", g);
	return out;
}

static int reals_row(void *arg, int ncols, const char *const *names, const char *const *vals,
                     const enum db_type *types)
{
	struct reals *r = arg;
	if (!vals || ncols > REAL_MAX_COLS)
		return r->row(r->arg, ncols, names, vals, types);
	const char *v[REAL_MAX_COLS];
	for (int i = 0; i < ncols; i++)
		v[i] = vals[i] && types[i] == DB_REAL
		       ? sqlite_real(vals[i], r->text[i], sizeof(r->text[i])) : vals[i];
	return r->row(r->arg, ncols, names, v, types);
}

/* ---- the interface ---- */

dbread *dbread_open(const char *target, char *err, size_t errlen)
{
	dbread *d = calloc(1, sizeof(*d));
	if (!d) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	d->be = &backends[0];
	while (!d->be->is_target(target))
		d->be++; /* the last one, a file, takes every other target */
	if (!(d->conn = d->be->open(target, err, errlen))) {
		free(d);
		return NULL;
	}
	return d;
}

int dbread_query(dbread *d, const struct dbread_sql *q, db_row_fn row, void *arg)
{
	const char *sql = d->be->dialect == DIALECT_CLICKHOUSE && q->clickhouse ? q->clickhouse
	                                                                         : q->common;
	if (!d->be->reals_as_sqlite)
		return d->be->query(d->conn, sql, row, arg);
	struct reals r = { .row = row, .arg = arg };
	return d->be->query(d->conn, sql, reals_row, &r);
}

const char *dbread_error(const dbread *d)
{
	return d->be->error(d->conn);
}

void dbread_close(dbread *d)
{
	if (!d)
		return;
	d->be->close(d->conn);
	free(d);
}
