/* store: the SQLite sink and read access for reports. The only user of sqlite3.h. */
#ifndef IWSCOPE_STORE_H
#define IWSCOPE_STORE_H

#include <stddef.h>

#include "sink.h"

typedef struct store store;

/* Opens (creating if needed) the iwscope database at path for writing a run. A file that is
 * not an iwscope database, has another schema version, is read-only or corrupt is refused and
 * left untouched. NULL with a one-line reason in err. */
store *store_open(const char *path, char *err, size_t errlen);

/* Opens an existing iwscope database read-only (reports). NULL with a reason in err. */
store *store_open_read(const char *path, char *err, size_t errlen);

void store_close(store *s);

/* The sink that writes runs and flows into s. */
struct sink store_sink(store *s);

/* The last error of s, one line. */
const char *store_error(const store *s);

/* Runs sql (no parameters) and calls row() for each result row with column names and values
 * as text (NULL for SQL NULL). Returns 0, or -1 with store_error set. */
typedef int (*store_row_fn)(void *arg, int ncols, const char *const *names,
                            const char *const *vals);
int store_query(store *s, const char *sql, store_row_fn row, void *arg);

/* Like store_query with one text parameter bound to ?1. */
int store_query1(store *s, const char *sql, const char *param, store_row_fn row, void *arg);

/* SQLite's version string. */
const char *store_sqlite_version(void);

/* The schema version this build writes. */
int store_schema_version(void);

#endif
