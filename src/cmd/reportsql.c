/* The questions `iwscope report` asks, table by table, in both dialects. ClickHouse's text
 * answers as the common one does on SQLite, row for row and in the same order: FINAL reads
 * through the copies of a row not merged yet (schema/clickhouse.sql), countIf and
 * uniqExact for FILTER and count(DISTINCT), intDiv where SQLite divides integers, LIMIT 1
 * BY for row_number() = 1, a subquery around a UNION ALL to order it, NULLS FIRST where
 * SQLite's ascending order puts NULL first (ClickHouse puts it last), floor(x * 10^n + 0.5) /
 * 10^n for round(x, n) of a share or ratio (never negative), as SQLite rounds a tie away from
 * zero where ClickHouse's round() goes to the even digit (1 of 16: 6.3, not 6.2); the views
 * (server_iw, iw_classes ...) exist in ClickHouse with the same columns and read FINAL
 * themselves. */
#include "reportsql.h"

#include <string.h>

#define DEFAULT_ROWS 100 /* a table's rows unless its section or --limit says otherwise */

/* ORDER BY a first flight's class as a number, as SQLite's CAST(ltrim(col, '>=IW') AS
 * INTEGER) orders it: ">=IW10" and "IW10" are 10, NULL first */
#define CH_BY_IW_NUMBER(col) "toInt64OrZero(replaceRegexpOne(" col ", '^[>=IW]+', '')) NULLS FIRST"

static const struct report_section summary_sections[] = {
	{ "runs", "Runs", DEFAULT_ROWS, {
	  "SELECT probe, id AS run_id, status, source, packets, tcp_packets, decode_errors, flows, "
	  "evicted, one_direction, syn_opts_cut, acked_unseen FROM runs ORDER BY probe, id",
	  "SELECT probe, id AS run_id, status, source, packets, tcp_packets, decode_errors, flows, "
	  "evicted, one_direction, syn_opts_cut, acked_unseen FROM runs FINAL ORDER BY probe, id" } },
	/* runs.skipped holds a line per file ("FILE: why"); a newline inside a string literal is
	 * the same in SQLite, PostgreSQL and ClickHouse */
	{ "skipped_files", "Input files not read whole", DEFAULT_ROWS, {
	  "SELECT probe, id AS run_id, skipped_files AS files, replace(skipped, '\n', '; ') AS skipped "
	  "FROM runs WHERE skipped IS NOT NULL ORDER BY probe, id",
	  "SELECT probe, id AS run_id, skipped_files AS files, replaceAll(runs.skipped, '\n', '; ') "
	  "AS skipped FROM runs FINAL WHERE runs.skipped IS NOT NULL ORDER BY probe, id" } },
	{ "handshakes", "Handshakes", DEFAULT_ROWS, {
	  "SELECT handshake, count(*) AS flows, "
	  "round(100.0 * count(*) / (SELECT count(*) FROM flows), 1) AS pct "
	  "FROM flows GROUP BY handshake ORDER BY flows DESC, handshake",
	  "SELECT handshake, count() AS flows, "
	  "floor(1000.0 * count() / (SELECT count() FROM flows FINAL) + 0.5) / 10 AS pct "
	  "FROM flows FINAL GROUP BY handshake ORDER BY flows DESC, handshake" } },
	{ "rwnd_classes", "Receiver classes (SYN window)", DEFAULT_ROWS, {
	  "SELECT side, rwnd_class, flows FROM rwnd_classes ORDER BY side, flows DESC, rwnd_class",
	  NULL } },
	/* first flights per transport (TCP's in segments, QUIC's in datagrams: one count would
	 * mix them), TCP first */
	{ "iw_classes", "Server initial windows (first flight of each server)", DEFAULT_ROWS, {
	  "SELECT transport, iw_class, iw_limit, iw_std, flows "
	  "FROM iw_classes ORDER BY transport DESC, iw_limit <> 'cwnd', "
	  "CAST(ltrim(iw_class, '>=IW') AS INTEGER), iw_class, iw_limit",
	  "SELECT transport, iw_class, iw_limit, iw_std, flows "
	  "FROM iw_classes ORDER BY transport DESC, iw_limit != 'cwnd' NULLS FIRST, "
	  CH_BY_IW_NUMBER("iw_class") ", iw_class, iw_limit NULLS FIRST" } },
	{ "client_iw_classes", "Client first flights", DEFAULT_ROWS, {
	  "SELECT coalesce(transport, 'tcp') AS transport, c_iw_class, c_iw_limit, count(*) AS flows "
	  "FROM flows WHERE c_iw_class IS NOT NULL GROUP BY 1, 2, 3 "
	  "ORDER BY 1 DESC, c_iw_limit <> 'cwnd', CAST(ltrim(c_iw_class, '>=IW') AS INTEGER), 2, 3",
	  "SELECT coalesce(transport, 'tcp') AS transport, c_iw_class, c_iw_limit, count() AS flows "
	  "FROM flows FINAL WHERE c_iw_class IS NOT NULL GROUP BY transport, c_iw_class, c_iw_limit "
	  "ORDER BY transport DESC, c_iw_limit != 'cwnd' NULLS FIRST, " CH_BY_IW_NUMBER("c_iw_class")
	  ", c_iw_class, c_iw_limit NULLS FIRST" } },
	{ "iw_limits", "Why first flights stopped", DEFAULT_ROWS, {
	  "SELECT 'server' AS sender, coalesce(transport, 'tcp') AS transport, s_iw_limit AS iw_limit, "
	  "count(*) AS flows FROM flows WHERE s_iw_limit IS NOT NULL GROUP BY 2, 3 UNION ALL "
	  "SELECT 'client', coalesce(transport, 'tcp'), c_iw_limit, count(*) FROM flows "
	  "WHERE c_iw_limit IS NOT NULL GROUP BY 2, 3 ORDER BY 1 DESC, 2 DESC, 4 DESC, 3",
	  "SELECT sender, transport, iw_limit, flows FROM ("
	  "SELECT 'server' AS sender, coalesce(transport, 'tcp') AS transport, s_iw_limit AS iw_limit, "
	  "count() AS flows FROM flows FINAL WHERE s_iw_limit IS NOT NULL GROUP BY transport, iw_limit "
	  "UNION ALL SELECT 'client' AS sender, coalesce(transport, 'tcp') AS transport, "
	  "c_iw_limit AS iw_limit, count() AS flows FROM flows FINAL WHERE c_iw_limit IS NOT NULL "
	  "GROUP BY transport, iw_limit) ORDER BY sender DESC, transport DESC, flows DESC, iw_limit" } },
	{ "iw_evidence", "Evidence behind the server verdicts", DEFAULT_ROWS, {
	  "SELECT s_iw_limit, s_iw_end, s_iw_next, "
	  "count(*) AS flows, CAST(sum(s_iw_pause_us) AS BIGINT) / nullif(count(s_iw_pause_us), 0) / 1000 "
	  "AS pause_ms FROM flows "
	  "WHERE s_iw_limit IS NOT NULL AND s_iw_limit <> 'none' GROUP BY 1, 2, 3 "
	  "ORDER BY s_iw_limit <> 'cwnd', 4 DESC, 1, 2, 3",
	  /* if() computes both branches: greatest() keeps the unused one from dividing by 0 */
	  "SELECT s_iw_limit, s_iw_end, s_iw_next, count() AS flows, "
	  "if(count(s_iw_pause_us) = 0, NULL, "
	  "intDiv(intDiv(sum(s_iw_pause_us), greatest(count(s_iw_pause_us), 1)), 1000)) AS pause_ms "
	  "FROM flows FINAL WHERE s_iw_limit IS NOT NULL AND s_iw_limit != 'none' "
	  "GROUP BY s_iw_limit, s_iw_end, s_iw_next ORDER BY s_iw_limit != 'cwnd', flows DESC, "
	  "s_iw_limit, s_iw_end NULLS FIRST, s_iw_next NULLS FIRST" } },
	{ "disagreeing_servers", "Servers whose flows disagree", 20, {
	  "SELECT server_ip, server_port, exact_flows, iw_min, iw_max, lower_bound, verdict "
	  "FROM server_iw WHERE disagree = 1 ORDER BY flows DESC, server_ip, server_port",
	  NULL } },
	{ "frames_not_analysed", "Frames not analysed", DEFAULT_ROWS, {
	  "SELECT reason, sum(packets) AS packets FROM run_decode GROUP BY reason "
	  "ORDER BY packets DESC, reason",
	  "SELECT reason, sum(run_decode.packets) AS packets FROM run_decode FINAL GROUP BY reason "
	  "ORDER BY packets DESC, reason" } },
	/* what eviction cost (issue 29): an evicted flow's row ends where it was evicted (its
	 * later packets make no second row), so its first flights may have had no end yet */
	{ "evicted", "Flows evicted early (the flow table was full: --flow-cap)", DEFAULT_ROWS, {
	  "SELECT probe, run_id, count(*) AS flows, "
	  "sum(CASE WHEN handshake = 'complete' THEN 1 ELSE 0 END) AS complete, "
	  "sum(CASE WHEN s_iw_limit = 'cwnd' THEN 1 ELSE 0 END) AS exact_server_iw, "
	  "sum(CASE WHEN s_iw_limit = 'cwnd' THEN 0 ELSE 1 END) AS no_exact_server_iw FROM flows "
	  "WHERE end_reason = 'evicted' GROUP BY probe, run_id ORDER BY probe, run_id",
	  "SELECT probe, run_id, count() AS flows, countIf(handshake = 'complete') AS complete, "
	  "countIf(ifNull(s_iw_limit, '') = 'cwnd') AS exact_server_iw, "
	  "count() - exact_server_iw AS no_exact_server_iw FROM flows FINAL "
	  "WHERE end_reason = 'evicted' GROUP BY probe, run_id ORDER BY probe, run_id" } },
};

/* app_weak beside app_proto: 1 where nDPI's answer is weak, flows.dpi_method offport or guess
 * (record_dpi_weak); a table shows it as "MQTT?" and a legend (report.c). A server's app_weak
 * is its shown app's (the most common, as server_iw picks it): 1 when none of the server's
 * flows of that app was read in the payload on its usual port. By application, the weak
 * flows of an app are a row of their own (a guess always names an app: Unknown is never weak). */
#define DPI_WEAK "dpi_method IN ('offport', 'guess')"
#define CH_DPI_WEAK "ifNull(dpi_method, '') IN ('offport', 'guess')"

static const struct report_section server_sections[] = {
	{ "servers", "Servers: initial window verdicts", 100, {
	  "SELECT s.server_ip, s.server_port, s.transport, s.flows, s.exact_flows, s.iw, s.iw_min, "
	  "s.iw_max, s.lower_bound, s.iw_std, s.verdict, s.app_proto, coalesce(w.app_weak, 0) AS app_weak, "
	  "s.server_name FROM server_iw AS s LEFT JOIN (SELECT coalesce(transport, 'tcp') AS transport, "
	  "server_ip, server_port, app_proto, min(CASE WHEN " DPI_WEAK " THEN 1 ELSE 0 END) AS app_weak "
	  "FROM flows WHERE s_iw_limit IS NOT NULL AND s_iw_limit <> 'none' AND app_proto IS NOT NULL "
	  "GROUP BY 1, 2, 3, 4) AS w ON w.transport = s.transport AND w.server_ip = s.server_ip "
	  "AND w.server_port = s.server_port AND w.app_proto = s.app_proto "
	  "ORDER BY s.flows DESC, s.server_ip, s.server_port, s.transport",
	  "SELECT server_ip, server_port, transport, flows, exact_flows, iw, iw_min, iw_max, "
	  "lower_bound, iw_std, verdict, app_proto, app_weak, server_name FROM server_iw "
	  "ANY LEFT JOIN (SELECT transport, server_ip, server_port, app_weak FROM ("
	  "SELECT coalesce(transport, 'tcp') AS transport, server_ip, server_port, app_proto AS app, "
	  "min(if(" CH_DPI_WEAK ", 1, 0)) AS app_weak FROM flows FINAL "
	  "WHERE s_iw_limit IS NOT NULL AND s_iw_limit != 'none' AND app_proto IS NOT NULL "
	  "GROUP BY transport, server_ip, server_port, app ORDER BY count() DESC, app "
	  "LIMIT 1 BY transport, server_ip, server_port)) USING (transport, server_ip, server_port) "
	  "ORDER BY flows DESC, server_ip, server_port, transport" } },
};

static const struct report_section app_sections[] = {
	{ "iw_by_app", "Server initial windows by application", DEFAULT_ROWS, {
	  "SELECT coalesce(app_proto, 'Unknown') AS app_proto, "
	  "CASE WHEN " DPI_WEAK " THEN 1 ELSE 0 END AS app_weak, coalesce(transport, 'tcp') AS transport, "
	  "s_iw_class AS iw_class, s_iw_limit AS iw_limit, count(*) AS flows, "
	  "count(DISTINCT server_ip) AS servers FROM flows WHERE s_iw_class IS NOT NULL "
	  "GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3 DESC, s_iw_limit <> 'cwnd', 6 DESC, 4, 5",
	  "SELECT coalesce(app_proto, 'Unknown') AS app_proto, if(" CH_DPI_WEAK ", 1, 0) AS app_weak, "
	  "coalesce(transport, 'tcp') AS transport, s_iw_class AS iw_class, s_iw_limit AS iw_limit, "
	  "count() AS flows, uniqExact(server_ip) AS servers FROM flows FINAL "
	  "WHERE s_iw_class IS NOT NULL GROUP BY app_proto, app_weak, transport, iw_class, iw_limit "
	  "ORDER BY app_proto, app_weak, transport DESC, iw_limit != 'cwnd' NULLS FIRST, flows DESC, "
	  "iw_class, iw_limit NULLS FIRST" } },
	{ "iw_by_name", "Server initial windows by server name", 50, {
	  "SELECT server_name, transport, iw_class, iw_limit, flows FROM iw_by_name "
	  "ORDER BY flows DESC, 1, 2 DESC, 3, 4",
	  "SELECT server_name, transport, iw_class, iw_limit, flows FROM iw_by_name "
	  "ORDER BY flows DESC, server_name, transport DESC, iw_class, iw_limit NULLS FIRST" } },
	{ "rwnd_by_app", "Receiver classes by application", DEFAULT_ROWS, {
	  "SELECT coalesce(app_proto, 'Unknown') AS app_proto, "
	  "CASE WHEN " DPI_WEAK " THEN 1 ELSE 0 END AS app_weak, "
	  "c_rwnd_class AS rwnd_class, count(*) AS flows FROM flows WHERE c_rwnd_class IS NOT NULL "
	  "GROUP BY 1, 2, 3 ORDER BY 1, 2, flows DESC, 3",
	  "SELECT coalesce(app_proto, 'Unknown') AS app_proto, if(" CH_DPI_WEAK ", 1, 0) AS app_weak, "
	  "c_rwnd_class AS rwnd_class, count() AS flows FROM flows FINAL WHERE c_rwnd_class IS NOT NULL "
	  "GROUP BY app_proto, app_weak, rwnd_class ORDER BY app_proto, app_weak, flows DESC, rwnd_class" } },
};

static const struct report_section rwnd_sections[] = {
	{ "rwnd_by_syn_win", "Receiver classes by SYN window", DEFAULT_ROWS, {
	  "SELECT 'client' AS side, c_rwnd_class AS rwnd_class, c_syn_win AS syn_win, c_mss AS mss, "
	  "count(*) AS flows FROM flows WHERE c_rwnd_class IS NOT NULL GROUP BY 2, 3, 4 "
	  "UNION ALL SELECT 'server', s_rwnd_class, s_syn_win, s_mss, count(*) FROM flows "
	  "WHERE s_rwnd_class IS NOT NULL GROUP BY 2, 3, 4 ORDER BY 1, 5 DESC, 2, 3, 4",
	  "SELECT side, rwnd_class, syn_win, mss, flows FROM ("
	  "SELECT 'client' AS side, c_rwnd_class AS rwnd_class, c_syn_win AS syn_win, c_mss AS mss, "
	  "count() AS flows FROM flows FINAL WHERE c_rwnd_class IS NOT NULL "
	  "GROUP BY rwnd_class, syn_win, mss UNION ALL "
	  "SELECT 'server' AS side, s_rwnd_class AS rwnd_class, s_syn_win AS syn_win, s_mss AS mss, "
	  "count() AS flows FROM flows FINAL WHERE s_rwnd_class IS NOT NULL "
	  "GROUP BY rwnd_class, syn_win, mss) "
	  "ORDER BY side, flows DESC, rwnd_class, syn_win NULLS FIRST, mss NULLS FIRST" } },
};

static const struct report_section standard_sections[] = {
	{ "iw_by_standard", "Exact server IWs by standard", DEFAULT_ROWS, {
	  "SELECT s_iw_std AS iw_std, s_iw_class AS iw_class, count(*) AS flows, "
	  "count(DISTINCT server_ip) AS servers FROM flows WHERE s_iw_limit = 'cwnd' "
	  "GROUP BY 1, 2 ORDER BY 3 DESC, 1, 2",
	  "SELECT s_iw_std AS iw_std, s_iw_class AS iw_class, count() AS flows, "
	  "uniqExact(server_ip) AS servers FROM flows FINAL WHERE s_iw_limit = 'cwnd' "
	  "GROUP BY iw_std, iw_class ORDER BY flows DESC, iw_std NULLS FIRST, iw_class NULLS FIRST" } },
};

/* Clients, as --by server shows senders: each one's most common SYN (window, its class, MSS,
 * scale), how many windows it used, and its flows whose window could not take an IW10. */
static const struct report_section client_sections[] = {
	{ "clients", "Clients: receive windows (SYN)", 100, {
	  "WITH f AS (SELECT client_ip, c_rwnd_class, c_syn_win, c_mss, c_wscale FROM flows "
	  "WHERE c_syn_win IS NOT NULL), "
	  "per AS (SELECT client_ip, count(*) AS flows, count(DISTINCT c_syn_win) AS windows, "
	  "sum(CASE WHEN c_rwnd_class IN ('6KB', '8192', 'small') THEN 1 ELSE 0 END) AS below_iw10 "
	  "FROM f GROUP BY client_ip), "
	  "syn AS (SELECT client_ip, c_rwnd_class, c_syn_win, c_mss, c_wscale, row_number() OVER "
	  "(PARTITION BY client_ip ORDER BY count(*) DESC, c_syn_win, c_mss, c_wscale) AS k FROM f "
	  "GROUP BY client_ip, c_rwnd_class, c_syn_win, c_mss, c_wscale) "
	  "SELECT per.client_ip, flows, syn.c_rwnd_class AS rwnd_class, syn.c_syn_win AS syn_win, "
	  "syn.c_mss AS mss, syn.c_wscale AS wscale, windows, below_iw10 FROM per "
	  "JOIN syn ON syn.client_ip = per.client_ip AND syn.k = 1 "
	  "ORDER BY flows DESC, per.client_ip",
	  "SELECT client_ip, flows, rwnd_class, syn_win, mss, wscale, windows, below_iw10 FROM ("
	  "SELECT client_ip, count() AS flows, uniqExact(c_syn_win) AS windows, "
	  "countIf(ifNull(c_rwnd_class, '') IN ('6KB', '8192', 'small')) AS below_iw10 "
	  "FROM flows FINAL WHERE c_syn_win IS NOT NULL GROUP BY client_ip) ANY INNER JOIN ("
	  "SELECT client_ip, c_rwnd_class AS rwnd_class, c_syn_win AS syn_win, c_mss AS mss, "
	  "c_wscale AS wscale FROM flows FINAL WHERE c_syn_win IS NOT NULL "
	  "GROUP BY client_ip, rwnd_class, syn_win, mss, wscale ORDER BY count() DESC, syn_win, "
	  "mss NULLS FIRST, wscale NULLS FIRST LIMIT 1 BY client_ip) USING client_ip "
	  "ORDER BY flows DESC, client_ip" } },
};

static const struct report_section transport_sections[] = {
	{ "iw_by_transport", "Server first flights by transport", DEFAULT_ROWS, {
	  "SELECT coalesce(transport, 'tcp') AS transport, s_iw_class AS iw_class, s_iw_limit AS iw_limit, "
	  "count(*) AS flows, count(DISTINCT server_ip) AS servers FROM flows "
	  "WHERE s_iw_limit IS NOT NULL AND s_iw_limit <> 'none' GROUP BY 1, 2, 3 "
	  "ORDER BY 1, s_iw_limit <> 'cwnd', CAST(ltrim(s_iw_class, '>=IW') AS INTEGER), 2, 3",
	  "SELECT coalesce(transport, 'tcp') AS transport, s_iw_class AS iw_class, "
	  "s_iw_limit AS iw_limit, count() AS flows, uniqExact(server_ip) AS servers FROM flows FINAL "
	  "WHERE s_iw_limit IS NOT NULL AND s_iw_limit != 'none' GROUP BY transport, iw_class, iw_limit "
	  "ORDER BY transport, iw_limit != 'cwnd', " CH_BY_IW_NUMBER("iw_class") ", "
	  "iw_class NULLS FIRST, iw_limit" } },
	{ "quic_versions", "QUIC connections by version and ALPN", DEFAULT_ROWS, {
	  "SELECT quic_version, CASE WHEN quic_version = 1 THEN 'v1' WHEN quic_version = 1798521807 "
	  "THEN 'v2' WHEN quic_version BETWEEN 4278190080 AND 4278190335 "
	  "THEN 'draft-' || CAST(quic_version - 4278190080 AS TEXT) "
	  "WHEN quic_version BETWEEN 4207849472 AND 4207849727 "
	  "THEN 'mvfst-' || CAST(quic_version - 4207849472 AS TEXT) "
	  "WHEN quic_version / 16777216 IN (81, 84) THEN CASE WHEN quic_version / 16777216 = 81 "
	  "THEN 'Q0' ELSE 'T0' END || CAST((quic_version / 256 % 256 - 48) * 10 + quic_version % 256 - 48 "
	  "AS TEXT) END AS name, alpn, count(*) AS flows, sum(quic_retry) AS retry, sum(quic_vn) AS vn, "
	  "sum(quic_0rtt) AS zero_rtt, sum(quic_amp_limited) AS amp_limited, "
	  "round(avg(1.0 * quic_s_preval / nullif(quic_c_preval, 0)), 2) AS amp_ratio "
	  "FROM flows WHERE transport = 'quic' GROUP BY 1, 2, 3 ORDER BY 4 DESC, 1, 3",
	  "SELECT quic_version, multiIf(quic_version = 1, 'v1', quic_version = 1798521807, 'v2', "
	  "quic_version >= 4278190080 AND quic_version <= 4278190335, "
	  "concat('draft-', toString(quic_version - 4278190080)), "
	  "quic_version >= 4207849472 AND quic_version <= 4207849727, "
	  "concat('mvfst-', toString(quic_version - 4207849472)), "
	  "intDiv(quic_version, 16777216) IN (81, 84), "
	  "concat(if(intDiv(quic_version, 16777216) = 81, 'Q0', 'T0'), "
	  "toString((intDiv(quic_version, 256) % 256 - 48) * 10 + quic_version % 256 - 48)), NULL) "
	  "AS name, alpn, count() AS flows, sum(quic_retry) AS retry, sum(quic_vn) AS vn, "
	  "sum(quic_0rtt) AS zero_rtt, sum(quic_amp_limited) AS amp_limited, "
	  "floor(100 * avg(1.0 * quic_s_preval / nullIf(quic_c_preval, 0)) + 0.5) / 100 AS amp_ratio "
	  "FROM flows FINAL WHERE transport = 'quic' GROUP BY quic_version, name, alpn "
	  "ORDER BY flows DESC, quic_version NULLS FIRST, alpn NULLS FIRST" } },
	{ "quic_amplification", "QUIC servers past the 3x limit (RFC 9000 8.1)", DEFAULT_ROWS, {
	  "SELECT server_ip, server_port, server_name, quic_c_preval, quic_s_preval, "
	  "round(1.0 * quic_s_preval / quic_c_preval, 2) AS amp_ratio FROM flows "
	  "WHERE transport = 'quic' AND quic_s_preval > 3 * quic_c_preval "
	  "ORDER BY 6 DESC, 1, 2",
	  "SELECT server_ip, server_port, server_name, quic_c_preval, quic_s_preval, "
	  "floor(100.0 * quic_s_preval / nullIf(quic_c_preval, 0) + 0.5) / 100 AS amp_ratio FROM flows FINAL "
	  "WHERE transport = 'quic' AND quic_s_preval > 3 * quic_c_preval "
	  "ORDER BY amp_ratio DESC, server_ip, server_port" } },
};

#define SECTIONS(name, arr) { name, arr, sizeof(arr) / sizeof(arr[0]) }

static const struct {
	const char *by; /* NULL: the summary */
	const struct report_section *secs;
	size_t n;
} groupings[] = {
	SECTIONS(NULL, summary_sections),          SECTIONS("server", server_sections),
	SECTIONS("app", app_sections),             SECTIONS("rwnd", rwnd_sections),
	SECTIONS("standard", standard_sections),   SECTIONS("transport", transport_sections),
	SECTIONS("client", client_sections),
};

const struct report_section *reportsql_sections(const char *by, size_t *n)
{
	for (size_t i = 0; i < sizeof(groupings) / sizeof(groupings[0]); i++)
		if (by ? groupings[i].by && !strcmp(groupings[i].by, by) : !groupings[i].by) {
			*n = groupings[i].n;
			return groupings[i].secs;
		}
	return NULL;
}
