-- iwscope database schema, ClickHouse dialect (18.16 and later): the tables of schema/sqlite.sql,
-- column for column (a test compares them), and the views of schema/views.sql rewritten for
-- ClickHouse. `iwscope schema clickhouse [--cluster NAME] [--database DB]` prints it for that
-- database (the names in braces filled in, the cluster's lines kept with --cluster); a probe
-- writing to a server without these tables creates the one-server form itself.
--
-- Rows are never updated in place: a flow is written early and again when it ends, a run at its
-- start and at its end, and a spool batch whose answer was lost is sent again. Every table is a
-- ReplacingMergeTree on the row's identity (the key of schema.h), whose row_version (1 for a
-- final row: a flow with its end_reason, a run with finished_us) keeps the latest state when
-- parts merge; until they do, readers read through the copies with FINAL (the views do, and so
-- do iwscope report and plot).
--
-- On a cluster the tables are *_local on every shard, and runs, run_decode and flows are
-- Distributed tables over them, sharded by a hash of the server address (flows: one server's
-- flows meet on one shard, so per-server questions stay local) or of the probe (its runs).
-- The same row always goes to the same shard, so its copies meet and collapse there.
-- Run the whole text on every node of the cluster (the views read the Distributed tables).

CREATE DATABASE IF NOT EXISTS {db};

CREATE TABLE IF NOT EXISTS {db}.runs{local} (
  probe           String,     -- capture point (--probe, default the host name)
  id              Int64,  -- start time in us, unique per probe
  started_us      Int64,
  finished_us     Nullable(Int64),
  source          String,     -- files (space separated) or interface
  filter          Nullable(String),              -- BPF expression
  options         Nullable(String),              -- options that change results, e.g. 'timing'
  iwscope_version String,
  libpcap_version Nullable(String),
  ndpi_version    Nullable(String),
  status          String,     -- running | complete | partial | interrupted | failed
  packets         Nullable(Int64),           -- frames read
  bytes           Nullable(Int64),           -- their wire length
  tcp_packets     Nullable(Int64),           -- decoded TCP segments
  decode_errors   Nullable(Int64),           -- frames that could not be decoded (see run_decode)
  flows           Nullable(Int64),
  evicted         Nullable(Int64),           -- flows written early because the table was full
  skipped_files   Nullable(Int64),
  pcap_received   Nullable(Int64),           -- live capture: libpcap's counts
  pcap_dropped    Nullable(Int64),
  dpi_peak_states Nullable(Int64),           -- most flows nDPI was inspecting at once (state freed once decided);
                                     -- with --threads 2, the sum of two nDPI contexts' peaks
  -- what the capture lacks (docs/METHOD.md "What a capture lacks"): verdicts there are lower bounds or none
  one_direction   Nullable(Int64),           -- flows whose rows show packets of one side only
  syn_opts_cut    Nullable(Int64),           -- SYN and SYN-ACK frames whose options the snaplen cut
  acked_unseen    Nullable(Int64),          -- bytes acknowledged but never captured (sum of flows' c_ and s_acked_unseen)
  skipped         Nullable(String),         -- the input files skipped, a line each: "FILE: why" (NULL: none)
  digest          Nullable(String),         -- a digest of the capture's first records (the same capture read again)
  row_version     UInt8 DEFAULT if(isNull(finished_us), 0, 1) -- 1: the run's final row
) ENGINE = ReplacingMergeTree(row_version)
  PARTITION BY toYYYYMM(toDate(intDiv(id, 1000000)))
  ORDER BY (probe, id);

-- Frames not analysed, by reason: not_ip, not_tcp, ip_fragment, truncated_*, bad_*, ...
CREATE TABLE IF NOT EXISTS {db}.run_decode{local} (
  probe   String,
  run_id  Int64,
  reason  String,
  packets Int64,
  row_version UInt8 DEFAULT 1
) ENGINE = ReplacingMergeTree(row_version)
  ORDER BY (probe, run_id, reason);

-- Partitioned by the day of the flow's first packet; ordered by server, then time: a server's
-- flows are together on disk, and (probe, run_id, flow_key) after them make the order the
-- flow's identity (FLOW_KEY), which ReplacingMergeTree collapses copies by.
CREATE TABLE IF NOT EXISTS {db}.flows{local} (
  probe         String,
  run_id        Int64,
  ts_us         Int64,    -- first packet
  ip_ver        Int64,
  client_ip     String,
  client_port   Int64,
  server_ip     String,
  server_port   Int64,
  handshake     String,       -- complete | no_ack | syn_only | no_synack | refused | no_syn | simultaneous | none
  syn_us        Nullable(Int64),
  synack_us     Nullable(Int64),
  ack_us        Nullable(Int64),
  rtt_us        Nullable(Int64),             -- SYN -> ACK at the vantage point
  rtt_c_us      Nullable(Int64),             -- vantage <-> client: SYN-ACK -> ACK
  rtt_s_us      Nullable(Int64),             -- vantage <-> server: SYN -> SYN-ACK
  -- what each side advertised in its SYN / SYN-ACK
  c_syn_win     Nullable(Int64),  s_syn_win     Nullable(Int64),  -- unscaled
  c_mss         Nullable(Int64),  s_mss         Nullable(Int64),
  c_wscale      Nullable(Int64),  s_wscale      Nullable(Int64),
  c_sack        Nullable(Int64),  s_sack        Nullable(Int64),  -- SACK-permitted 0/1
  c_ts          Nullable(Int64),  s_ts          Nullable(Int64),  -- TSval, NULL without timestamps
  c_tfo         Nullable(Int64),  s_tfo         Nullable(Int64),  -- TFO option 0/1 (RFC 7413)
  c_ttl         Nullable(Int64),  s_ttl         Nullable(Int64),  -- TTL / hop limit as captured
  c_ittl        Nullable(Int64),  s_ittl        Nullable(Int64),  -- initial TTL it implies: 32/64/128/255
  c_olayout     Nullable(String),     s_olayout     Nullable(String),     -- p0f notation; NULL if cut by the snaplen
  c_quirks      Nullable(Int64),  s_quirks      Nullable(Int64),  -- bits: 1 bad option, 2 options cut, 4 data after EOL, 8 IP options, 16 payload cut
  c_syn_bytes   Nullable(Int64),  s_syn_bytes   Nullable(Int64),  -- payload on the SYN
  c_syn_retx    Nullable(Int64),  s_syn_retx    Nullable(Int64),  -- retransmitted SYNs / SYN-ACKs
  c_rwnd_class  Nullable(String),     s_rwnd_class  Nullable(String),     -- 6KB | 10MSS | 20MSS | 64KB | 8192 | 16384 | small | other
  -- what each side sent
  c_pkts        Nullable(Int64),  s_pkts        Nullable(Int64),
  c_bytes       Nullable(Int64),  s_bytes       Nullable(Int64),  -- payload bytes
  -- each side's first flight (INFERENCE.md)
  c_iw_bytes    Nullable(Int64),  s_iw_bytes    Nullable(Int64),
  c_iw_segs     Nullable(Int64),  s_iw_segs     Nullable(Int64),
  c_smss        Nullable(Int64),  s_smss        Nullable(Int64),
  c_iw_limit    Nullable(String),     s_iw_limit    Nullable(String),     -- cwnd | rwnd | nagle | app | ambiguous | loss | none
  c_iw_class    Nullable(String),     s_iw_class    Nullable(String),     -- IWn (cwnd) | >=IWn (rwnd, nagle, app, ambiguous)
  c_iw_rule     Nullable(String),     s_iw_rule     Nullable(String),     -- tsecr | timing
  c_iw_std      Nullable(String),     s_iw_std      Nullable(String),     -- rfc6928 | rfc3390 | rfc2581 | custom (cwnd only)
  c_ff_start_us Nullable(Int64),  s_ff_start_us Nullable(Int64),
  c_ff_end_us   Nullable(Int64),  s_ff_end_us   Nullable(Int64),
  c_iw_end      Nullable(String),     s_iw_end      Nullable(String),     -- what located the end: tsecr | timing | pause | none
  c_iw_next     Nullable(String),     s_iw_next     Nullable(String),     -- the next new data came after: ack | timer | request | late | burst | paced
  c_iw_pause_us Nullable(Int64),  s_iw_pause_us Nullable(Int64),  -- silence before that next new data
  duration_us   Nullable(Int64),
  end_reason    Nullable(String),                -- fin | rst | idle | evicted | reuse | capture_end
  app_proto     Nullable(String),                -- nDPI master.app, e.g. TLS.YouTube; Unknown if undetected
  app_category  Nullable(String),
  server_name   Nullable(String),                -- the host the client asked for (TLS SNI, HTTP Host without
                                    -- its :port, an IPv6 literal in brackets), else nDPI's (SSH banner, ...)
  dpi_method    Nullable(String),                -- payload | offport | guess | none
  flow_key      Int64,    -- the flow's number within its run
  c_acked_unseen Nullable(Int64), s_acked_unseen Nullable(Int64), -- that side's bytes the other acknowledged but
                                    -- the capture never showed (0: none; NULL: version < 4)
  -- version 5: the transport, and what only QUIC has (NULL for TCP; docs/METHOD.md "QUIC")
  transport     Nullable(String),                -- tcp | quic (rows older than version 5: tcp)
  quic_version  Nullable(Int64),              -- as on the wire: 1, 1798521807 (v2), 4278190109 (draft-29), Q050 ...
  alpn          Nullable(String),                -- the first ALPN protocol the client offered (QUIC)
  quic_retry    Nullable(Int64),              -- 1: the server sent a Retry
  quic_vn       Nullable(Int64),              -- 1: a version negotiation
  quic_0rtt     Nullable(Int64),              -- 1: the client sent 0-RTT packets
  quic_spin     Nullable(Int64),              -- 1: a 1-RTT packet with the spin bit set
  quic_c_initial Nullable(Int64),             -- bytes of the client's first Initial datagram (padding included)
  quic_c_preval Nullable(Int64),              -- the client's bytes before its address was validated
  quic_s_preval Nullable(Int64),              -- the server's bytes before that (at most 3 x quic_c_preval)
  quic_amp_limited Nullable(Int64),           -- 1: the server's first flight stopped at the 3x limit, its next datagram after a pause
  quic_hs_rtts  Nullable(Int64),              -- round trips before the client's first 1-RTT packet
  source_file   Nullable(String),             -- the capture file the flow began in, as given to -r (NULL: live)
  row_version   UInt8 DEFAULT if(isNull(end_reason), 0, 1) -- 1: the flow's final row
) ENGINE = ReplacingMergeTree(row_version)
  PARTITION BY toDate(intDiv(ts_us, 1000000))
  ORDER BY (server_ip, server_port, ts_us, probe, run_id, flow_key);

--cluster CREATE TABLE IF NOT EXISTS {db}.runs AS {db}.runs_local
--cluster   ENGINE = Distributed({cluster}, {db}, runs_local, cityHash64(probe));
--cluster CREATE TABLE IF NOT EXISTS {db}.run_decode AS {db}.run_decode_local
--cluster   ENGINE = Distributed({cluster}, {db}, run_decode_local, cityHash64(probe));
--cluster CREATE TABLE IF NOT EXISTS {db}.flows AS {db}.flows_local
--cluster   ENGINE = Distributed({cluster}, {db}, flows_local, cityHash64(server_ip));

-- The views of schema/views.sql, the same names, columns and rows, in ClickHouse's SQL: FINAL
-- reads through the copies not merged yet; countIf for FILTER; LIMIT 1 BY for row_number() = 1.

CREATE VIEW IF NOT EXISTS {db}.probes AS
  SELECT probe, count() AS runs, sum(flows) AS flows, min(started_us) AS first_us,
         max(coalesce(finished_us, started_us)) AS last_us
    FROM {db}.runs FINAL GROUP BY probe;

CREATE VIEW IF NOT EXISTS {db}.rwnd_classes AS
  SELECT 'client' AS side, c_rwnd_class AS rwnd_class, count() AS flows
    FROM {db}.flows FINAL WHERE c_rwnd_class IS NOT NULL GROUP BY c_rwnd_class
  UNION ALL
  SELECT 'server' AS side, s_rwnd_class AS rwnd_class, count() AS flows
    FROM {db}.flows FINAL WHERE s_rwnd_class IS NOT NULL GROUP BY s_rwnd_class;

CREATE VIEW IF NOT EXISTS {db}.servers AS
  SELECT server_ip, server_port,
         count() AS flows, countIf(handshake = 'complete') AS complete,
         min(ts_us) AS first_us, max(ts_us) AS last_us,
         max(s_mss) AS mss, max(s_wscale) AS wscale, max(s_ittl) AS ittl,
         max(s_syn_win) AS syn_win, max(s_rwnd_class) AS rwnd_class, max(s_olayout) AS olayout,
         max(app_proto) AS app_proto, max(server_name) AS server_name
    FROM {db}.flows FINAL GROUP BY server_ip, server_port;

-- schema/views.sql's server_iw: one row per server address, port and transport, its verdict,
-- and the most common app and name among its flows (the first by name on a tie).
CREATE VIEW IF NOT EXISTS {db}.server_iw AS
  SELECT server_ip, server_port, flows, exact_flows,
         if(iw_min = iw_max AND NOT ifNull(lower_bound > iw_min, 0), iw_max, NULL) AS iw,
         iw_min, iw_max, lower_bound,
         if(iw_min = iw_max AND NOT ifNull(lower_bound > iw_min, 0), iw_std, NULL) AS iw_std,
         if(iw_min != iw_max OR lower_bound > iw_min, 1, 0) AS disagree,
         multiIf(exact_flows = 0, NULL, lower_bound > iw_min, 'contradiction',
                 iw_min != iw_max, 'split', 'exact') AS verdict,
         app_proto, server_name, transport
    FROM (
      SELECT transport, server_ip, server_port, flows, exact_flows, iw_min, iw_max,
             lower_bound, iw_std, app_proto
        FROM (
          SELECT coalesce(transport, 'tcp') AS transport, server_ip, server_port,
                 count() AS flows, countIf(s_iw_limit = 'cwnd') AS exact_flows,
                 if(exact_flows = 0, NULL, minIf(s_iw_segs, s_iw_limit = 'cwnd')) AS iw_min,
                 if(exact_flows = 0, NULL, maxIf(s_iw_segs, s_iw_limit = 'cwnd')) AS iw_max,
                 if(countIf(s_iw_segs IS NOT NULL AND s_iw_limit IN
                            ('app', 'rwnd', 'nagle', 'ambiguous', 'amplification')) = 0, NULL,
                    maxIf(s_iw_segs, s_iw_limit IN
                          ('app', 'rwnd', 'nagle', 'ambiguous', 'amplification'))) AS lower_bound,
                 if(countIf(s_iw_std IS NOT NULL AND s_iw_limit = 'cwnd') = 0, NULL,
                    maxIf(s_iw_std, s_iw_limit = 'cwnd')) AS iw_std
            FROM {db}.flows FINAL
           WHERE s_iw_limit IS NOT NULL AND s_iw_limit != 'none'
           GROUP BY transport, server_ip, server_port)
        ANY LEFT JOIN (
          SELECT coalesce(transport, 'tcp') AS transport, server_ip, server_port, app_proto
            FROM {db}.flows FINAL
           WHERE s_iw_limit IS NOT NULL AND s_iw_limit != 'none' AND app_proto IS NOT NULL
           GROUP BY transport, server_ip, server_port, app_proto
           ORDER BY count() DESC, app_proto
           LIMIT 1 BY transport, server_ip, server_port)
        USING (transport, server_ip, server_port))
    ANY LEFT JOIN (
      SELECT coalesce(transport, 'tcp') AS transport, server_ip, server_port, server_name
        FROM {db}.flows FINAL
       WHERE s_iw_limit IS NOT NULL AND s_iw_limit != 'none' AND server_name IS NOT NULL
       GROUP BY transport, server_ip, server_port, server_name
       ORDER BY count() DESC, server_name
       LIMIT 1 BY transport, server_ip, server_port)
    USING (transport, server_ip, server_port);

CREATE VIEW IF NOT EXISTS {db}.iw_classes AS
  SELECT s_iw_class AS iw_class, s_iw_limit AS iw_limit, s_iw_std AS iw_std, count() AS flows,
         coalesce(transport, 'tcp') AS transport
    FROM {db}.flows FINAL WHERE s_iw_class IS NOT NULL
    GROUP BY s_iw_class, s_iw_limit, s_iw_std, transport;

CREATE VIEW IF NOT EXISTS {db}.iw_by_app AS
  SELECT coalesce(app_proto, 'Unknown') AS app_proto, s_iw_class AS iw_class,
         s_iw_limit AS iw_limit, count() AS flows, uniqExact(server_ip) AS servers,
         coalesce(transport, 'tcp') AS transport
    FROM {db}.flows FINAL WHERE s_iw_class IS NOT NULL
    GROUP BY app_proto, iw_class, iw_limit, transport;

CREATE VIEW IF NOT EXISTS {db}.iw_by_name AS
  SELECT server_name, s_iw_class AS iw_class, s_iw_limit AS iw_limit, count() AS flows,
         max(app_proto) AS app_proto, coalesce(transport, 'tcp') AS transport
    FROM {db}.flows FINAL WHERE s_iw_class IS NOT NULL AND server_name IS NOT NULL
    GROUP BY server_name, iw_class, iw_limit, transport;

CREATE VIEW IF NOT EXISTS {db}.rwnd_by_app AS
  SELECT coalesce(app_proto, 'Unknown') AS app_proto, c_rwnd_class AS rwnd_class,
         count() AS flows
    FROM {db}.flows FINAL WHERE c_rwnd_class IS NOT NULL
    GROUP BY app_proto, rwnd_class;

-- The schema version, last: a probe that finds no row here (another is creating the schema)
-- creates it too, every statement IF NOT EXISTS, and adds its own row.
CREATE TABLE IF NOT EXISTS {db}.iwscope_schema (version UInt32) ENGINE = TinyLog;
INSERT INTO {db}.iwscope_schema VALUES (6);
