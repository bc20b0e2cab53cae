/* dbrows: rows as text, how databases hand rows on whatever their dialect: query results (what
 * report and plot read) and batches of a table's rows (what the spool and merge copy). */
#ifndef IWSCOPE_DBROWS_H
#define IWSCOPE_DBROWS_H

/* What a result value is: what JSON and table layouts go by, never a guess from its text. */
enum db_type { DB_NULL, DB_INT, DB_REAL, DB_TEXT };

/* Called once with vals and types NULL (the column names, also for a result without rows),
 * then for each result row with its values as text (NULL for SQL NULL) and their types.
 * Returns non-zero to stop. */
typedef int (*db_row_fn)(void *arg, int ncols, const char *const *names,
                         const char *const *vals, const enum db_type *types);

/* One table's rows as text, to copy them to another database. */
struct db_rows {
	const char *table;          /* runs, run_decode or flows */
	int ncols;
	const char *const *names;   /* ncols column names */
	unsigned nrows;
	const char *const *vals;    /* nrows * ncols, row after row; NULL is SQL NULL */
};

/* Takes one batch (runs, run_decode, flows or just flows) in one transaction: 0 when it is
 * committed at the other end, -1 when it is not (nothing of it counts as sent). */
typedef int (*db_batch_fn)(void *arg, const struct db_rows *tables, unsigned ntables);

#endif
