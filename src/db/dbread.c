/* Reports and plots read SQLite or PostgreSQL through this; their SQL is the dialects' common
 * ground (schema/views.sql shows what that is). */
#include "dbread.h"

#include <stdio.h>
#include <stdlib.h>

#include "pg.h"
#include "sqldb.h"

struct dbread {
	sqldb *sqlite;
	pgdb *pg;
};

dbread *dbread_open(const char *target, char *err, size_t errlen)
{
	dbread *d = calloc(1, sizeof(*d));
	if (!d) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (pg_is_uri(target)) {
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
	free(d);
}
