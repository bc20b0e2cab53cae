-- iwscope schema migrations, both dialects (schema/sqlite.sql, schema/postgresql.sql): the
-- statements that take a database of version N-1 to version N follow a line "-- version N".
-- iwscope applies them in one transaction when it opens an older file or database for writing,
-- with every view dropped before and made again from schema/views.sql after. Only SQL that
-- SQLite and PostgreSQL both run; new columns come last in a migrated table (rows name them).

-- version 3
-- The evidence beside each first-flight verdict (INFERENCE.md, docs/METHOD.md); the verdicts
-- nagle and ambiguous join the lower bounds (views).
ALTER TABLE flows ADD COLUMN c_iw_end TEXT;
ALTER TABLE flows ADD COLUMN s_iw_end TEXT;
ALTER TABLE flows ADD COLUMN c_iw_next TEXT;
ALTER TABLE flows ADD COLUMN s_iw_next TEXT;
ALTER TABLE flows ADD COLUMN c_iw_pause_us BIGINT;
ALTER TABLE flows ADD COLUMN s_iw_pause_us BIGINT;

-- version 4
-- What a capture lacks (docs/METHOD.md "What a capture lacks"): per flow, each side's bytes
-- acknowledged but never captured; per run, flows seen in one direction only, SYNs whose
-- options the snaplen cut, and the bytes acknowledged but never captured.
ALTER TABLE flows ADD COLUMN c_acked_unseen BIGINT;
ALTER TABLE flows ADD COLUMN s_acked_unseen BIGINT;
ALTER TABLE runs ADD COLUMN one_direction BIGINT;
ALTER TABLE runs ADD COLUMN syn_opts_cut BIGINT;
ALTER TABLE runs ADD COLUMN acked_unseen BIGINT;

-- version 5
-- QUIC connections are flows (docs/METHOD.md "QUIC"): the transport (older rows: tcp, since
-- the upgrade to 6) and what only QUIC has.
ALTER TABLE flows ADD COLUMN transport TEXT;
ALTER TABLE flows ADD COLUMN quic_version BIGINT;
ALTER TABLE flows ADD COLUMN alpn TEXT;
ALTER TABLE flows ADD COLUMN quic_retry BIGINT;
ALTER TABLE flows ADD COLUMN quic_vn BIGINT;
ALTER TABLE flows ADD COLUMN quic_0rtt BIGINT;
ALTER TABLE flows ADD COLUMN quic_spin BIGINT;
ALTER TABLE flows ADD COLUMN quic_c_initial BIGINT;
ALTER TABLE flows ADD COLUMN quic_c_preval BIGINT;
ALTER TABLE flows ADD COLUMN quic_s_preval BIGINT;
ALTER TABLE flows ADD COLUMN quic_amp_limited BIGINT;
ALTER TABLE flows ADD COLUMN quic_hs_rtts BIGINT;
-- The capture file each flow began in; the input files a run skipped and why; a digest of the
-- capture's first records (the same capture read again under another name, merged or piped).
ALTER TABLE flows ADD COLUMN source_file TEXT;
ALTER TABLE runs ADD COLUMN skipped TEXT;
ALTER TABLE runs ADD COLUMN digest TEXT;

-- version 6
-- Rows written before QUIC (version 4 and older, which version 5's upgrade left NULL) are TCP's;
-- the views split server first flights by transport (iw_classes, iw_by_app and iw_by_name gain
-- a column transport: TCP's segments and QUIC's datagrams never add up), made again as after
-- every upgrade. A read-only file reads the value in a column its read adds (schema.c).
UPDATE flows SET transport = 'tcp' WHERE transport IS NULL;
