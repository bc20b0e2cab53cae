-- iwscope views, shared by both dialects (schema/sqlite.sql, schema/postgresql.sql): only SQL
-- that SQLite and PostgreSQL (and Citus, over flows distributed by server_ip) both run.

-- One row per probe: its runs and flows.
CREATE VIEW probes AS
  SELECT probe, count(*) AS runs, sum(flows) AS flows, min(started_us) AS first_us,
         max(coalesce(finished_us, started_us)) AS last_us
    FROM runs GROUP BY probe;

-- How many SYNs advertised each receiver class, by side.
CREATE VIEW rwnd_classes AS
  SELECT 'client' AS side, c_rwnd_class AS rwnd_class, count(*) AS flows
    FROM flows WHERE c_rwnd_class IS NOT NULL GROUP BY c_rwnd_class
  UNION ALL
  SELECT 'server', s_rwnd_class, count(*)
    FROM flows WHERE s_rwnd_class IS NOT NULL GROUP BY s_rwnd_class;

-- One row per server address and port: what its SYN-ACKs said and how its flows went.
CREATE VIEW servers AS
  SELECT server_ip, server_port,
         count(*) AS flows,
         count(*) FILTER (WHERE handshake = 'complete') AS complete,
         min(ts_us) AS first_us, max(ts_us) AS last_us,
         max(s_mss) AS mss, max(s_wscale) AS wscale, max(s_ittl) AS ittl,
         max(s_syn_win) AS syn_win, max(s_rwnd_class) AS rwnd_class, max(s_olayout) AS olayout,
         max(app_proto) AS app_proto, max(server_name) AS server_name
    FROM flows GROUP BY server_ip, server_port;

-- One row per server address, port and transport: the IW its exact (cwnd) flows agree on,
-- the highest lower bound from the others (app, rwnd, nagle, ambiguous, amplification), and the
-- verdict they add up to (docs/METHOD.md "Per host"): exact (iw), split (exact flows disagree),
-- contradiction (a lower bound above an exact IW: iw NULL, iw_min and lower_bound show both),
-- NULL without an exact flow (lower_bound alone). disagree = 1 for split and contradiction.
-- iw_std is the standard of the IW shown (NULL when iw is); app_proto and server_name are the
-- most common among its flows (the first by name on a tie). A server's TCP and QUIC flows are
-- two rows (transport): segments and datagrams do not add up.
CREATE VIEW server_iw AS
  WITH f AS (
    SELECT coalesce(transport, 'tcp') AS transport, server_ip, server_port, s_iw_limit, s_iw_segs,
           s_iw_std, app_proto, server_name
      FROM flows WHERE s_iw_limit IS NOT NULL AND s_iw_limit <> 'none'),
  per_server AS (
    SELECT transport, server_ip, server_port,
           count(*) AS flows,
           count(*) FILTER (WHERE s_iw_limit = 'cwnd') AS exact_flows,
           min(CASE WHEN s_iw_limit = 'cwnd' THEN s_iw_segs END) AS iw_min,
           max(CASE WHEN s_iw_limit = 'cwnd' THEN s_iw_segs END) AS iw_max,
           max(CASE WHEN s_iw_limit IN ('app', 'rwnd', 'nagle', 'ambiguous', 'amplification')
                    THEN s_iw_segs END) AS lower_bound,
           max(CASE WHEN s_iw_limit = 'cwnd' THEN s_iw_std END) AS iw_std
      FROM f GROUP BY transport, server_ip, server_port),
  apps AS (
    SELECT transport, server_ip, server_port, app_proto,
           row_number() OVER (PARTITION BY transport, server_ip, server_port
                              ORDER BY count(*) DESC, app_proto) AS k
      FROM f WHERE app_proto IS NOT NULL GROUP BY transport, server_ip, server_port, app_proto),
  names AS (
    SELECT transport, server_ip, server_port, server_name,
           row_number() OVER (PARTITION BY transport, server_ip, server_port
                              ORDER BY count(*) DESC, server_name) AS k
      FROM f WHERE server_name IS NOT NULL GROUP BY transport, server_ip, server_port, server_name)
  SELECT p.server_ip, p.server_port, flows, exact_flows,
         CASE WHEN iw_min = iw_max AND NOT coalesce(lower_bound > iw_min, false) THEN iw_max END AS iw,
         iw_min, iw_max, lower_bound,
         CASE WHEN iw_min = iw_max AND NOT coalesce(lower_bound > iw_min, false) THEN iw_std END AS iw_std,
         CASE WHEN iw_min <> iw_max OR lower_bound > iw_min THEN 1 ELSE 0 END AS disagree,
         CASE WHEN exact_flows = 0 THEN NULL
              WHEN lower_bound > iw_min THEN 'contradiction'
              WHEN iw_min <> iw_max THEN 'split'
              ELSE 'exact' END AS verdict,
         a.app_proto, n.server_name, p.transport
    FROM per_server AS p
    LEFT JOIN apps AS a ON a.k = 1 AND a.transport = p.transport AND a.server_ip = p.server_ip
                       AND a.server_port = p.server_port
    LEFT JOIN names AS n ON n.k = 1 AND n.transport = p.transport AND n.server_ip = p.server_ip
                        AND n.server_port = p.server_port;

-- The server IW distribution: exact classes and lower bounds, with the standard matched, per
-- transport (tcp: segments, quic: datagrams; a class of one is not a class of the other).
CREATE VIEW iw_classes AS
  SELECT s_iw_class AS iw_class, s_iw_limit AS iw_limit, s_iw_std AS iw_std, count(*) AS flows,
         coalesce(transport, 'tcp') AS transport
    FROM flows WHERE s_iw_class IS NOT NULL
    GROUP BY s_iw_class, s_iw_limit, s_iw_std, coalesce(transport, 'tcp');

-- Server IW classes by application (nDPI) and by server name, per transport.
CREATE VIEW iw_by_app AS
  SELECT coalesce(app_proto, 'Unknown') AS app_proto, s_iw_class AS iw_class,
         s_iw_limit AS iw_limit, count(*) AS flows, count(DISTINCT server_ip) AS servers,
         coalesce(transport, 'tcp') AS transport
    FROM flows WHERE s_iw_class IS NOT NULL
    GROUP BY 1, 2, 3, 6;

CREATE VIEW iw_by_name AS
  SELECT server_name, s_iw_class AS iw_class, s_iw_limit AS iw_limit, count(*) AS flows,
         max(app_proto) AS app_proto, coalesce(transport, 'tcp') AS transport
    FROM flows WHERE s_iw_class IS NOT NULL AND server_name IS NOT NULL
    GROUP BY 1, 2, 3, 6;

-- Receiver classes (the client's SYN window) by application.
CREATE VIEW rwnd_by_app AS
  SELECT coalesce(app_proto, 'Unknown') AS app_proto, c_rwnd_class AS rwnd_class,
         count(*) AS flows
    FROM flows WHERE c_rwnd_class IS NOT NULL
    GROUP BY 1, 2;
