/* dbread: read access for reports and plots, to an SQLite file, a postgresql:// or a
 * clickhouse:// database. */
#ifndef IWSCOPE_DBREAD_H
#define IWSCOPE_DBREAD_H

#include <stddef.h>

#include "dbrows.h"

typedef struct dbread dbread;

/* Opens target (a file, postgresql://... or clickhouse://...) read-only after checking it is an iwscope
 * database of this schema version. NULL with one line in err. */
dbread *dbread_open(const char *target, char *err, size_t errlen);

/* Runs sql (the SQL both dialects share) and calls row() for each row. 0 or -1. */
int dbread_query(dbread *d, const char *sql, db_row_fn row, void *arg);

const char *dbread_error(const dbread *d);

void dbread_close(dbread *d);

#endif
