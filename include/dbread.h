/* dbread: read access for reports and plots, to an SQLite file, a postgresql:// or a
 * clickhouse:// database, one interface over the three (one backend each: sqldb.c, pg.c,
 * ch.c). Every question is asked of the database itself: the answer's rows are all that
 * comes back. */
#ifndef IWSCOPE_DBREAD_H
#define IWSCOPE_DBREAD_H

#include <stddef.h>

#include "dbrows.h"

typedef struct dbread dbread;

/* One question in the two SQL dialects reports are written in: the SQL SQLite and PostgreSQL
 * share (schema/views.sql shows what that is), and ClickHouse's (18.16 and later: FINAL on
 * the tables, to read through the rows not merged yet; names, not numbers, in GROUP BY and
 * ORDER BY; NULLS FIRST where SQLite puts NULL first). clickhouse NULL: the common text is
 * ClickHouse's too (a question of the views only, which read FINAL themselves). */
struct dbread_sql {
	const char *common;
	const char *clickhouse;
};

/* Opens target (a file, postgresql://... or clickhouse://...) read-only after checking it is an iwscope
 * database of this schema version. NULL with one line in err. */
dbread *dbread_open(const char *target, char *err, size_t errlen);

/* Runs q in the database's dialect and calls row() for each row: values as text, ClickHouse's
 * Float ones as SQLite writes a REAL (15 significant digits, always a point: 100.0), so that
 * a report reads the same from every database. 0 or -1. */
int dbread_query(dbread *d, const struct dbread_sql *q, db_row_fn row, void *arg);

const char *dbread_error(const dbread *d);

void dbread_close(dbread *d);

#endif
