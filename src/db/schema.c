/* The schema as data: the tables a copy moves, with their keys, the secondary indexes a bulk
 * load defers, and the SQL that upgrades an older database (schema/migrate.sql). No database
 * library here: both dialects use it. */
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

int schema_each_index(const char *sql, schema_index_fn fn, void *arg)
{
	static const char lead[] = "\nCREATE INDEX ";
	for (const char *p = strstr(sql, lead); p; p = strstr(p + 1, lead)) {
		const char *stmt = p + 1, *name = stmt + sizeof(lead) - 2;
		const char *end = strchr(stmt, ';');
		if (!end)
			break;
		int rc = fn(arg, name, (int)strcspn(name, " ("), stmt, (int)(end - stmt));
		if (rc)
			return rc;
	}
	return 0;
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

/* The columns migrations add to one table, for schema_read_as_upgraded_sql. */
struct added {
	char table[64];
	char cols[1024]; /* ", NULL AS a, NULL AS b" */
};

/* A migration's "UPDATE t SET c = 'value' WHERE c IS NULL;" (what older rows of a column read):
 * a column this read adds (NULL AS c) shows the value instead; one the file already has keeps
 * its NULLs (the views coalesce them). Returns 1 when line is such an UPDATE, 0 when it is not,
 * -1 when the value does not fit. */
static int old_rows_value(const char *line, struct added *add, size_t nadd)
{
	char t[64], c[64], c2[64], value[64];
	int at = -1;
	if (sscanf(line, "UPDATE %63[a-z_] SET %63[a-z_0-9] = '%63[a-z0-9]' WHERE %63[a-z_0-9] IS NULL%n",
	           t, c, value, c2, &at) != 4 || at < 0 || strcmp(line + at, ";") || strcmp(c, c2))
		return 0;
	for (size_t i = 0; i < nadd; i++) {
		if (strcmp(add[i].table, t))
			continue;
		char was[80], now[160], *p = add[i].cols;
		snprintf(was, sizeof(was), ", NULL AS %s", c);
		snprintf(now, sizeof(now), ", '%s' AS %s", value, c);
		size_t wl = strlen(was), nl = strlen(now), len = strlen(p);
		for (char *q = strstr(p, was); q; q = strstr(q + 1, was)) {
			if (q[wl] != '\0' && q[wl] != ',')
				continue; /* a longer name that begins with c */
			if (len - wl + nl >= sizeof(add[i].cols))
				return -1;
			memmove(q + nl, q + wl, len - (size_t)(q - p) - wl + 1);
			memcpy(q, now, nl);
			break;
		}
	}
	return 1;
}

char *schema_read_as_upgraded_sql(int from)
{
	if (from < SCHEMA_OLDEST || from >= SCHEMA_VERSION)
		return NULL;
	struct added add[8];
	size_t nadd = 0;
	for (int v = from + 1; v <= SCHEMA_VERSION; v++) {
		size_t n;
		const char *m = migration(v, &n), *end = m ? m + n : NULL;
		if (!m)
			return NULL;
		/* line by line: comments and blank lines, what older rows read (an UPDATE), else
		 * "ALTER TABLE t ADD COLUMN c TYPE;" */
		for (const char *line = m; line < end;) {
			const char *eol = memchr(line, '\n', (size_t)(end - line));
			size_t len = eol ? (size_t)(eol - line) : (size_t)(end - line);
			char t[64], c[64], type[64];
			char buf[256];
			if (len >= sizeof(buf))
				return NULL;
			memcpy(buf, line, len);
			buf[len] = '\0';
			line += len + 1;
			if (buf[strspn(buf, " \t")] == '\0' || !strncmp(buf, "--", 2))
				continue;
			int upd = old_rows_value(buf, add, nadd);
			if (upd < 0)
				return NULL;
			if (upd)
				continue;
			/* one word of type and nothing after it: a DEFAULT would not be NULL */
			int at = -1;
			if (sscanf(buf, "ALTER TABLE %63[a-z_] ADD COLUMN %63[a-z_0-9] %63[A-Z]%n", t, c,
			           type, &at) != 3 || at < 0 || strcmp(buf + at, ";"))
				return NULL; /* not a column added: only an upgrade reads it right */
			size_t i;
			for (i = 0; i < nadd && strcmp(add[i].table, t); i++)
				;
			if (i == nadd) {
				if (nadd == sizeof(add) / sizeof(add[0]))
					return NULL;
				snprintf(add[nadd].table, sizeof(add[nadd].table), "%s", t);
				add[nadd++].cols[0] = '\0';
			}
			size_t used = strlen(add[i].cols);
			int w = snprintf(add[i].cols + used, sizeof(add[i].cols) - used, ", NULL AS %s", c);
			if (w < 0 || (size_t)w >= sizeof(add[i].cols) - used)
				return NULL;
		}
	}
	char *buf = NULL;
	size_t used = 0, cap = 0;
	for (size_t i = 0; i < nadd; i++) {
		char view[1200];
		int w = snprintf(view, sizeof(view), "CREATE TEMP VIEW %s AS SELECT *%s FROM main.%s;\n",
		                 add[i].table, add[i].cols, add[i].table);
		if (w < 0 || (size_t)w >= sizeof(view) || append(&buf, &used, &cap, view, (size_t)w) != 0)
			goto fail;
	}
	/* schema/views.sql with each view made TEMP: they read the tables above, not the file's */
	static const char lead[] = "CREATE VIEW ";
	const char *p = schema_views_sql;
	for (const char *q; (q = strstr(p, lead)); p = q + sizeof(lead) - 1) {
		if (append(&buf, &used, &cap, p, (size_t)(q - p)) != 0 ||
		    append(&buf, &used, &cap, "CREATE TEMP VIEW ", 17) != 0)
			goto fail;
	}
	if (append(&buf, &used, &cap, p, strlen(p)) != 0)
		goto fail;
	return buf;
fail:
	free(buf);
	return NULL;
}

void schema_source_shown(const char *source, char *buf, size_t len)
{
	size_t n = strlen(source);
	if (n < len) {
		memcpy(buf, source, n + 1);
		return;
	}
	size_t first = strcspn(source, " "), more = 0;
	for (const char *p = source + first; *p;) {
		p += strspn(p, " ");
		if (*p)
			more++;
		p += strcspn(p, " ");
	}
	char tail[64] = "";
	if (more)
		snprintf(tail, sizeof(tail), " (and %zu more file%s)", more, more == 1 ? "" : "s");
	size_t room = len - strlen(tail) - 1; /* the first input, cut ("...") when even it is too long */
	if (first <= room)
		snprintf(buf, len, "%.*s%s", (int)first, source, tail);
	else
		snprintf(buf, len, "%.*s...%s", (int)(room - 3), source, tail);
}
