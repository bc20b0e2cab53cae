/* The schema as data: the tables a copy moves, with their keys, and the SQL that upgrades an
 * older database (schema/migrate.sql). No database library here: both dialects use it. */
#include "schema.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const char schema_views_sql[];   /* build/schema_sql.c, from schema/views.sql */
extern const char schema_migrate_sql[]; /* ... from schema/migrate.sql */

const struct schema_table schema_tables[3] = {
	{ "runs", RUN_KEY, ",probe,id,", RUN_NOT_STALE },
	{ "run_decode", DECODE_KEY, ",probe,run_id,reason,", "true" },
	{ "flows", FLOW_KEY, ",server_ip,probe,run_id,flow_key,", FLOW_NOT_STALE },
};

bool schema_is_key(const char *key_cols, const char *col)
{
	char probe[80];
	snprintf(probe, sizeof(probe), ",%s,", col);
	return strstr(key_cols, probe) != NULL;
}

int schema_list_add(char *out, size_t len, size_t *n, const char *col, bool set)
{
	int w = set ? snprintf(out + *n, len - *n, "%s%s=excluded.%s", *n ? "," : "", col, col)
	            : snprintf(out + *n, len - *n, "%s%s", *n ? "," : "", col);
	if (w < 0 || (size_t)w >= len - *n)
		return -1;
	*n += (size_t)w;
	return 0;
}

const struct schema_table *schema_table(const char *name)
{
	for (size_t i = 0; i < 3; i++)
		if (!strcmp(schema_tables[i].name, name))
			return &schema_tables[i];
	return NULL;
}

/* The statements under "-- version N" in schema/migrate.sql, up to the next such line: a
 * pointer into the text and *len; NULL when that version has none. */
static const char *migration(int version, size_t *len)
{
	char mark[32];
	int n = snprintf(mark, sizeof(mark), "\n-- version %d\n", version);
	const char *p = strstr(schema_migrate_sql, mark);
	if (!p)
		return NULL;
	p += n;
	const char *e = strstr(p, "\n-- version ");
	*len = e ? (size_t)(e - p) + 1 : strlen(p);
	return p;
}

/* Appends text of length n to the growing buffer *buf (*used bytes, *cap allocated). */
static int append(char **buf, size_t *used, size_t *cap, const char *text, size_t n)
{
	if (*used + n + 1 > *cap) {
		size_t want = (*used + n + 1) * 2;
		char *b = realloc(*buf, want);
		if (!b)
			return -1;
		*buf = b;
		*cap = want;
	}
	memcpy(*buf + *used, text, n);
	*used += n;
	(*buf)[*used] = '\0';
	return 0;
}

char *schema_upgrade_sql(int from)
{
	if (from < SCHEMA_OLDEST || from >= SCHEMA_VERSION)
		return NULL;
	char *buf = NULL;
	size_t used = 0, cap = 0;
	/* every view goes first (they may name columns a migration changes), back after */
	static const char lead[] = "CREATE VIEW ";
	for (const char *p = strstr(schema_views_sql, lead); p; p = strstr(p + 1, lead)) {
		const char *name = p + sizeof(lead) - 1;
		size_t n = strcspn(name, " \n");
		char drop[128];
		int w = snprintf(drop, sizeof(drop), "DROP VIEW IF EXISTS %.*s;\n", (int)n, name);
		if (w < 0 || (size_t)w >= sizeof(drop) || append(&buf, &used, &cap, drop, (size_t)w) != 0)
			goto fail;
	}
	for (int v = from + 1; v <= SCHEMA_VERSION; v++) {
		size_t n;
		const char *m = migration(v, &n);
		if (!m) /* a version without its migration: a build error, refuse rather than guess */
			goto fail;
		if (append(&buf, &used, &cap, m, n) != 0)
			goto fail;
	}
	if (append(&buf, &used, &cap, schema_views_sql, strlen(schema_views_sql)) != 0)
		goto fail;
	return buf;
fail:
	free(buf);
	return NULL;
}
