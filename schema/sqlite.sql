-- iwscope database schema, SQLite dialect (schema/postgresql.sql is the same tables for
-- PostgreSQL; schema/views.sql the views both share). PRAGMA user_version is the schema
-- version; iwscope refuses a file with another version, and any file whose application_id is
-- not iwscope's ('IWSC').
-- Identity: a probe (capture point, --probe) names its runs by their start time in
-- microseconds, made unique per probe; a flow is (probe, run_id, flow_key). So the files of
-- many probes merge, and a batch sent twice replaces itself instead of adding rows.
-- Times are integer microseconds since the epoch. Unknown is NULL, never 0.
-- c_ = the client (sent the SYN), s_ = the server, as in tstat. The first-flight columns
-- (*_iw_*, *_smss, *_ff_*) describe that side as a sender.

PRAGMA application_id = 1230459715; -- 0x49575343, 'IWSC'
PRAGMA user_version = 5;

CREATE TABLE runs (
  probe           TEXT NOT NULL,     -- capture point (--probe, default the host name)
  id              INTEGER NOT NULL,  -- start time in us, unique per probe
  started_us      INTEGER NOT NULL,
  finished_us     INTEGER,
  source          TEXT NOT NULL,     -- files (space separated) or interface
  filter          TEXT,              -- BPF expression
  options         TEXT,              -- options that change results, e.g. 'timing'
  iwscope_version TEXT NOT NULL,
  libpcap_version TEXT,
  ndpi_version    TEXT,
  status          TEXT NOT NULL,     -- running | complete | partial | interrupted | failed
  packets         INTEGER,           -- frames read
  bytes           INTEGER,           -- their wire length
  tcp_packets     INTEGER,           -- decoded TCP segments
  decode_errors   INTEGER,           -- frames that could not be decoded (see run_decode)
  flows           INTEGER,
  evicted         INTEGER,           -- flows written early because the table was full
  skipped_files   INTEGER,
  pcap_received   INTEGER,           -- live capture: libpcap's counts
  pcap_dropped    INTEGER,
  dpi_peak_states INTEGER,           -- most flows nDPI was inspecting at once (state freed once decided);
                                     -- with --threads 2, the sum of two nDPI contexts' peaks
  -- what the capture lacks (docs/METHOD.md "What a capture lacks"): verdicts there are lower bounds or none
  one_direction   INTEGER,           -- flows whose rows show packets of one side only
  syn_opts_cut    INTEGER,           -- SYN and SYN-ACK frames whose options the snaplen cut
  acked_unseen    INTEGER,           -- bytes acknowledged but never captured (sum of flows' c_ and s_acked_unseen)
  skipped         TEXT,              -- the input files skipped, a line each: "FILE: why" (NULL: none)
  digest          TEXT,              -- a digest of the capture's first records (the same capture read again)
  PRIMARY KEY (probe, id)
);

-- Frames not analysed, by reason: not_ip, not_tcp, ip_fragment, truncated_*, bad_*, ...
CREATE TABLE run_decode (
  probe   TEXT NOT NULL,
  run_id  INTEGER NOT NULL,
  reason  TEXT NOT NULL,
  packets INTEGER NOT NULL,
  PRIMARY KEY (probe, run_id, reason),
  FOREIGN KEY (probe, run_id) REFERENCES runs (probe, id)
);

CREATE TABLE flows (
  probe         TEXT NOT NULL,
  run_id        INTEGER NOT NULL,
  ts_us         INTEGER NOT NULL,    -- first packet
  ip_ver        INTEGER NOT NULL,
  client_ip     TEXT NOT NULL,
  client_port   INTEGER NOT NULL,
  server_ip     TEXT NOT NULL,
  server_port   INTEGER NOT NULL,
  handshake     TEXT NOT NULL,       -- complete | no_ack | syn_only | no_synack | refused | no_syn | simultaneous | none
  syn_us        INTEGER,
  synack_us     INTEGER,
  ack_us        INTEGER,
  rtt_us        INTEGER,             -- SYN -> ACK at the vantage point
  rtt_c_us      INTEGER,             -- vantage <-> client: SYN-ACK -> ACK
  rtt_s_us      INTEGER,             -- vantage <-> server: SYN -> SYN-ACK
  -- what each side advertised in its SYN / SYN-ACK
  c_syn_win     INTEGER,  s_syn_win     INTEGER,  -- unscaled
  c_mss         INTEGER,  s_mss         INTEGER,
  c_wscale      INTEGER,  s_wscale      INTEGER,
  c_sack        INTEGER,  s_sack        INTEGER,  -- SACK-permitted 0/1
  c_ts          INTEGER,  s_ts          INTEGER,  -- TSval, NULL without timestamps
  c_tfo         INTEGER,  s_tfo         INTEGER,  -- TFO option 0/1 (RFC 7413)
  c_ttl         INTEGER,  s_ttl         INTEGER,  -- TTL / hop limit as captured
  c_ittl        INTEGER,  s_ittl        INTEGER,  -- initial TTL it implies: 32/64/128/255
  c_olayout     TEXT,     s_olayout     TEXT,     -- p0f notation; NULL if cut by the snaplen
  c_quirks      INTEGER,  s_quirks      INTEGER,  -- bits: 1 bad option, 2 options cut, 4 data after EOL, 8 IP options, 16 payload cut
  c_syn_bytes   INTEGER,  s_syn_bytes   INTEGER,  -- payload on the SYN
  c_syn_retx    INTEGER,  s_syn_retx    INTEGER,  -- retransmitted SYNs / SYN-ACKs
  c_rwnd_class  TEXT,     s_rwnd_class  TEXT,     -- 6KB | 10MSS | 20MSS | 64KB | 8192 | 16384 | small | other
  -- what each side sent
  c_pkts        INTEGER,  s_pkts        INTEGER,
  c_bytes       INTEGER,  s_bytes       INTEGER,  -- payload bytes
  -- each side's first flight (INFERENCE.md)
  c_iw_bytes    INTEGER,  s_iw_bytes    INTEGER,
  c_iw_segs     INTEGER,  s_iw_segs     INTEGER,
  c_smss        INTEGER,  s_smss        INTEGER,
  c_iw_limit    TEXT,     s_iw_limit    TEXT,     -- cwnd | rwnd | nagle | app | ambiguous | loss | none
  c_iw_class    TEXT,     s_iw_class    TEXT,     -- IWn (cwnd) | >=IWn (rwnd, nagle, app, ambiguous)
  c_iw_rule     TEXT,     s_iw_rule     TEXT,     -- tsecr | timing
  c_iw_std      TEXT,     s_iw_std      TEXT,     -- rfc6928 | rfc3390 | rfc2581 | custom (cwnd only)
  c_ff_start_us INTEGER,  s_ff_start_us INTEGER,
  c_ff_end_us   INTEGER,  s_ff_end_us   INTEGER,
  c_iw_end      TEXT,     s_iw_end      TEXT,     -- what located the end: tsecr | timing | pause | none
  c_iw_next     TEXT,     s_iw_next     TEXT,     -- the next new data came after: ack | timer | request | late | burst | paced
  c_iw_pause_us INTEGER,  s_iw_pause_us INTEGER,  -- silence before that next new data
  duration_us   INTEGER,
  end_reason    TEXT,                -- fin | rst | idle | evicted | reuse | capture_end
  app_proto     TEXT,                -- nDPI master.app, e.g. TLS.YouTube; Unknown if undetected
  app_category  TEXT,
  server_name   TEXT,                -- the host the client asked for (TLS SNI, HTTP Host without
                                    -- its :port, an IPv6 literal in brackets), else nDPI's (SSH banner, ...)
  dpi_method    TEXT,                -- payload | offport | guess | none
  flow_key      INTEGER NOT NULL,    -- the flow's number within its run
  c_acked_unseen INTEGER, s_acked_unseen INTEGER, -- that side's bytes the other acknowledged but
                                    -- the capture never showed (0: none; NULL: version < 4)
  -- version 5: the transport, and what only QUIC has (NULL for TCP; docs/METHOD.md "QUIC")
  transport     TEXT,                -- tcp | quic (rows older than version 5: tcp)
  quic_version  INTEGER,             -- as on the wire: 1, 1798521807 (v2), 4278190109 (draft-29), Q050 ...
  alpn          TEXT,                -- the first ALPN protocol the client offered (QUIC)
  quic_retry    INTEGER,             -- 1: the server sent a Retry
  quic_vn       INTEGER,             -- 1: a version negotiation
  quic_0rtt     INTEGER,             -- 1: the client sent 0-RTT packets
  quic_spin     INTEGER,             -- 1: a 1-RTT packet with the spin bit set
  quic_c_initial INTEGER,            -- bytes of the client's first Initial datagram (padding included)
  quic_c_preval INTEGER,             -- the client's bytes before its address was validated
  quic_s_preval INTEGER,             -- the server's bytes before that (at most 3 x quic_c_preval)
  quic_amp_limited INTEGER,          -- 1: the server's first flight stopped at the 3x limit, its next datagram after a pause
  quic_hs_rtts  INTEGER,             -- round trips before the client's first 1-RTT packet
  source_file   TEXT,                -- the capture file the flow began in, as given to -r (NULL: live)
  FOREIGN KEY (probe, run_id) REFERENCES runs (probe, id)
);

-- A flow is written as soon as its verdicts are final and updated in place when it ends.
-- The key holds server_ip so that it is valid on a table distributed by it (Citus); led by
-- (probe, run_id) it also serves a run's flows.
CREATE UNIQUE INDEX flows_key ON flows(probe, run_id, flow_key, server_ip);

CREATE INDEX flows_server ON flows(server_ip, server_port);
