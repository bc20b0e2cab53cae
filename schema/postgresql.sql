-- iwscope database schema, PostgreSQL dialect: the tables of schema/sqlite.sql, column for
-- column (a test compares them), with schema/views.sql after them. iwscope creates it on first
-- use; the comment on runs carries the schema version and iwscope refuses another.
-- Built for Citus: flows may be distributed by server_ip (its unique key holds server_ip) and
-- runs / run_decode made reference tables; there are no foreign keys (the probe keeps the
-- runs -> flows order itself), so nothing here needs to change on a distributed cluster.
-- Integers are bigint throughout (SQLite's INTEGER is 64-bit).

CREATE TABLE runs (
  probe           text NOT NULL,     -- capture point (--probe, default the host name)
  id              bigint NOT NULL,  -- start time in us, unique per probe
  started_us      bigint NOT NULL,
  finished_us     bigint,
  source          text NOT NULL,     -- files (space separated) or interface
  filter          text,              -- BPF expression
  options         text,              -- options that change results, e.g. 'timing'
  iwscope_version text NOT NULL,
  libpcap_version text,
  ndpi_version    text,
  status          text NOT NULL,     -- running | complete | partial | interrupted | failed
  packets         bigint,           -- frames read
  bytes           bigint,           -- their wire length
  tcp_packets     bigint,           -- decoded TCP segments
  decode_errors   bigint,           -- frames that could not be decoded (see run_decode)
  flows           bigint,
  evicted         bigint,           -- flows written early because the table was full
  skipped_files   bigint,
  pcap_received   bigint,           -- live capture: libpcap's counts
  pcap_dropped    bigint,
  dpi_peak_states bigint,           -- most flows nDPI was inspecting at once (state freed once decided);
                                     -- with --threads 2, the sum of two nDPI contexts' peaks
  -- what the capture lacks (docs/METHOD.md "What a capture lacks"): verdicts there are lower bounds or none
  one_direction   bigint,           -- flows whose rows show packets of one side only
  syn_opts_cut    bigint,           -- SYN and SYN-ACK frames whose options the snaplen cut
  acked_unseen    bigint,           -- bytes acknowledged but never captured (sum of flows' c_ and s_acked_unseen)
  skipped         text,             -- the input files skipped, a line each: "FILE: why" (NULL: none)
  digest          text,             -- a digest of the capture's first records (the same capture read again)
  PRIMARY KEY (probe, id)
);

-- Frames not analysed, by reason: not_ip, not_tcp, ip_fragment, truncated_*, bad_*, ...
CREATE TABLE run_decode (
  probe   text NOT NULL,
  run_id  bigint NOT NULL,
  reason  text NOT NULL,
  packets bigint NOT NULL,
  PRIMARY KEY (probe, run_id, reason)
);

CREATE TABLE flows (
  probe         text NOT NULL,
  run_id        bigint NOT NULL,
  ts_us         bigint NOT NULL,    -- first packet
  ip_ver        bigint NOT NULL,
  client_ip     text NOT NULL,
  client_port   bigint NOT NULL,
  server_ip     text NOT NULL,
  server_port   bigint NOT NULL,
  handshake     text NOT NULL,       -- complete | no_ack | syn_only | no_synack | refused | no_syn | simultaneous | none
  syn_us        bigint,
  synack_us     bigint,
  ack_us        bigint,
  rtt_us        bigint,             -- SYN -> ACK at the vantage point
  rtt_c_us      bigint,             -- vantage <-> client: SYN-ACK -> ACK
  rtt_s_us      bigint,             -- vantage <-> server: SYN -> SYN-ACK
  -- what each side advertised in its SYN / SYN-ACK
  c_syn_win     bigint,  s_syn_win     bigint,  -- unscaled
  c_mss         bigint,  s_mss         bigint,
  c_wscale      bigint,  s_wscale      bigint,
  c_sack        bigint,  s_sack        bigint,  -- SACK-permitted 0/1
  c_ts          bigint,  s_ts          bigint,  -- TSval, NULL without timestamps
  c_tfo         bigint,  s_tfo         bigint,  -- TFO option 0/1 (RFC 7413)
  c_ttl         bigint,  s_ttl         bigint,  -- TTL / hop limit as captured
  c_ittl        bigint,  s_ittl        bigint,  -- initial TTL it implies: 32/64/128/255
  c_olayout     text,     s_olayout     text,     -- p0f notation; NULL if cut by the snaplen
  c_quirks      bigint,  s_quirks      bigint,  -- bits: 1 bad option, 2 options cut, 4 data after EOL, 8 IP options, 16 payload cut
  c_syn_bytes   bigint,  s_syn_bytes   bigint,  -- payload on the SYN
  c_syn_retx    bigint,  s_syn_retx    bigint,  -- retransmitted SYNs / SYN-ACKs
  c_rwnd_class  text,     s_rwnd_class  text,     -- 6KB | 10MSS | 20MSS | 64KB | 8192 | 16384 | small | other
  -- what each side sent
  c_pkts        bigint,  s_pkts        bigint,
  c_bytes       bigint,  s_bytes       bigint,  -- payload bytes
  -- each side's first flight (INFERENCE.md)
  c_iw_bytes    bigint,  s_iw_bytes    bigint,
  c_iw_segs     bigint,  s_iw_segs     bigint,
  c_smss        bigint,  s_smss        bigint,
  c_iw_limit    text,     s_iw_limit    text,     -- cwnd | rwnd | nagle | app | ambiguous | loss | none
  c_iw_class    text,     s_iw_class    text,     -- IWn (cwnd) | >=IWn (rwnd, nagle, app, ambiguous)
  c_iw_rule     text,     s_iw_rule     text,     -- tsecr | timing
  c_iw_std      text,     s_iw_std      text,     -- rfc6928 | rfc3390 | rfc2581 | custom (cwnd only)
  c_ff_start_us bigint,  s_ff_start_us bigint,
  c_ff_end_us   bigint,  s_ff_end_us   bigint,
  c_iw_end      text,     s_iw_end      text,     -- what located the end: tsecr | timing | pause | none
  c_iw_next     text,     s_iw_next     text,     -- the next new data came after: ack | timer | request | late | burst | paced
  c_iw_pause_us bigint,  s_iw_pause_us bigint,  -- silence before that next new data
  duration_us   bigint,
  end_reason    text,                -- fin | rst | idle | evicted | reuse | capture_end
  app_proto     text,                -- nDPI master.app, e.g. TLS.YouTube; Unknown if undetected
  app_category  text,
  server_name   text,                -- the host the client asked for (TLS SNI, HTTP Host without
                                    -- its :port, an IPv6 literal in brackets), else nDPI's (SSH banner, ...)
  dpi_method    text,                -- payload | offport | guess | none
  flow_key      bigint NOT NULL,    -- the flow's number within its run
  c_acked_unseen bigint, s_acked_unseen bigint, -- that side's bytes the other acknowledged but
                                    -- the capture never showed (0: none; NULL: version < 4)
  -- version 5: the transport, and what only QUIC has (NULL for TCP; docs/METHOD.md "QUIC")
  transport     text,                -- tcp | quic (rows older than version 5: tcp)
  quic_version  bigint,              -- as on the wire: 1, 1798521807 (v2), 4278190109 (draft-29), Q050 ...
  alpn          text,                -- the first ALPN protocol the client offered (QUIC)
  quic_retry    bigint,              -- 1: the server sent a Retry
  quic_vn       bigint,              -- 1: a version negotiation
  quic_0rtt     bigint,              -- 1: the client sent 0-RTT packets
  quic_spin     bigint,              -- 1: a 1-RTT packet with the spin bit set
  quic_c_initial bigint,             -- bytes of the client's first Initial datagram (padding included)
  quic_c_preval bigint,              -- the client's bytes before its address was validated
  quic_s_preval bigint,              -- the server's bytes before that (at most 3 x quic_c_preval)
  quic_amp_limited bigint,           -- 1: the server's first flight stopped at the 3x limit, its next datagram after a pause
  quic_hs_rtts  bigint,              -- round trips before the client's first 1-RTT packet
  source_file   text                 -- the capture file the flow began in, as given to -r (NULL: live)
);

-- A flow is written as soon as its verdicts are final and updated in place when it ends.
-- The key holds server_ip so that it is valid on a table distributed by it (Citus); led by
-- (probe, run_id) it also serves a run's flows.
CREATE UNIQUE INDEX flows_key ON flows(probe, run_id, flow_key, server_ip);

CREATE INDEX flows_server ON flows(server_ip, server_port);

COMMENT ON TABLE runs IS 'iwscope schema 6';
