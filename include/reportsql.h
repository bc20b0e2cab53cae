/* reportsql: the tables of `iwscope report`, each with the SQL that fills it in both dialects
 * (dbread.h): what SQLite and PostgreSQL share, and ClickHouse's, run on its server. */
#ifndef IWSCOPE_REPORTSQL_H
#define IWSCOPE_REPORTSQL_H

#include <stddef.h>

#include "dbread.h"

/* One table of the report. Its columns are named as in the database (schema/): those names
 * are the JSON keys and the CSV header. */
struct report_section {
	const char *key;   /* snake_case: the JSON key, the CSV heading */
	const char *title; /* the table's heading */
	int rows;          /* rows a table shows unless --limit says otherwise; 0 = all */
	struct dbread_sql sql;
};

/* The tables of `report --by by` (NULL: the summary), *n of them; NULL for an unknown by. */
const struct report_section *reportsql_sections(const char *by, size_t *n);

#endif
