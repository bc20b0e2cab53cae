/* Tunables: every default can be overridden with -DNAME=value at build time. */
#ifndef IWSCOPE_CONFIG_H
#define IWSCOPE_CONFIG_H

#define IWSCOPE_VERSION "0.1.0"

/* Live capture */
#ifndef LIVE_SNAPLEN
#define LIVE_SNAPLEN 9216 /* live: every header and the first payload nDPI and names.c read
                           * (Zeek's default); -s overrides */
#endif

#ifndef LIVE_BUFFER_KIB
#define LIVE_BUFFER_KIB 131072 /* live: a 128 MiB kernel ring, a second of 1 Gbit/s (Zeek's
                                * AF_PACKET default); -B overrides */
#endif

#ifndef LIVE_BLOCK_MS
#define LIVE_BLOCK_MS 50 /* live: a ring block partly filled is handed over after this long */
#endif
#ifndef LIVE_RING_KIB
#define LIVE_RING_KIB 16384 /* live: each worker's own ring of frames copied out of the kernel's */
#endif
#ifndef LIVE_IFACES_MAX
#define LIVE_IFACES_MAX 8 /* live: interfaces captured as one (-i given several times) */
#endif
#ifndef LIVE_WORKERS_MAX
#define LIVE_WORKERS_MAX 16 /* live: analysis workers at most */
#endif
#ifndef CAPTURE_IDLE_MS
#define CAPTURE_IDLE_MS 500 /* a pipe on stdin silent this long: the sinks may commit */
#endif

#ifndef REPLAY_MAX_GAP_S
#define REPLAY_MAX_GAP_S 5 /* --replay: silences of capture time cut to this (--max-gap) */
#endif

/* Flow table */
#ifndef LIVE_FILTER_DEFAULT
#define LIVE_FILTER_DEFAULT "tcp or udp" /* live capture without an expression: TCP and QUIC */
#endif
/* The flow table's default cap (open flows at once; beyond it the stalest is evicted) follows
 * the memory available when the run starts (flow.c flow_default_cap): */
#ifndef FLOW_MEM_PERCENT
#define FLOW_MEM_PERCENT 50u /* this share of MemAvailable, at FLOW_MEM_EXTRA + a slot's bytes a
                              * flow, */
#endif
#ifndef FLOW_MEM_EXTRA
#define FLOW_MEM_EXTRA 64u /* a flow's state beside its slot: the DPI stage's (16 bytes), and
                            * room for the names and nDPI states of the flows still inspected */
#endif
#ifndef FLOW_CAP_MIN
#define FLOW_CAP_MIN 262144u /* but at least this many (the fixed default before issue 29) */
#endif
#define FLOW_CAP_MAX (1u << 28)
#ifndef FLOW_EVICTED_MAX
#define FLOW_EVICTED_MAX (1u << 22) /* evicted connections remembered at most (32 MiB) */
#endif
#ifndef FLOW_IDLE_US
#define FLOW_IDLE_US (300ull * 1000000ull) /* idle timeout, like tstat's 5 minutes */
#endif
#ifndef FLOW_CLOSED_US
#define FLOW_CLOSED_US (1000000ull) /* linger after FIN both ways or RST, for the last ACKs */
#endif
#ifndef FLOW_HALFOPEN_US
#define FLOW_HALFOPEN_US (30ull * 1000000ull) /* an unanswered SYN expires sooner */
#endif
#ifndef EXPIRE_INTERVAL_US
#define EXPIRE_INTERVAL_US (100000ull) /* expiry sweeps run at most this often (capture time):
                                         * often enough that a sweep is a handful of rows,
                                         * not a burst that stalls the writing thread */
#endif

/* A capture's clock stepping back (engine.c) */
#ifndef CLOCK_STEP_BACK_US
#define CLOCK_STEP_BACK_US (500ull) /* a frame stamped up to 500 us before its flow's latest
                                     * time takes that time: frames stamped on several CPUs or
                                     * queues, written in the order they were read. A larger
                                     * step back is taken as is: at 10 ms, one direction's
                                     * stamps 1-5 ms late zeroed handshake legs (21 false lower
                                     * bounds in the lab, 1 without the clamp) */
#endif

/* Copies of one packet (copies.h) */
#ifndef COPY_SLOTS_LOG2
#define COPY_SLOTS_LOG2 12 /* 4096 recent packets remembered (64 KiB an engine): a copy 1 ms
                            * late at 400 k packets/s is found (ndpi/fix2.pcap: all 887; 1024
                            * slots missed 24); at millions a second some such are missed */
#endif
#ifndef COPY_STRONG_US
#define COPY_STRONG_US (10000ull) /* a copy within 10 ms of the first, where the packet names
                                   * its transmission (a SYN, an IPv4 ID from a side whose IDs
                                   * change, a QUIC datagram's own bytes) */
#endif
#ifndef COPY_WEAK_US
#define COPY_WEAK_US (1000ull) /* within 1 ms where it does not (IPv6, ID 0, a kept ID, a cut
                                * QUIC datagram): a retransmission of the same bytes,
                                * timestamps and all, comes a round trip later at the soonest */
#endif

/* First-flight inference (docs/METHOD.md) */
#ifndef FLIGHT_TOL_DIV
#define FLIGHT_TOL_DIV 10 /* timing rule tolerance = handshake RTT / 10 */
#endif
#ifndef FLIGHT_CWND_RTTS_X10
#define FLIGHT_CWND_RTTS_X10 15 /* next data within 1.5 RTT of the flight's end => cwnd */
#endif
#ifndef FLIGHT_PAUSE_RTT_DIV
#define FLIGHT_PAUSE_RTT_DIV 2 /* rule 3: a pause is at least handshake RTT / 2 ... */
#endif
#ifndef FLIGHT_PAUSE_SPACING
#define FLIGHT_PAUSE_SPACING 3 /* ... and at least 3 x the flight's largest silence so far */
#endif
#ifndef FLIGHT_GAP_FIRST_DIV
#define FLIGHT_GAP_FIRST_DIV 4 /* timing only: a flight's first silence of RTT / 4 or more
                                 * (no spacing to compare with yet) marks a possible end */
#endif
#ifndef FLIGHT_TIMER_MIN_US
#define FLIGHT_TIMER_MIN_US 10000u /* a timer send comes no sooner (Linux's TLP floor) */
#endif
#ifndef FLIGHT_TIMING_MIN_RTT_US
#define FLIGHT_TIMING_MIN_RTT_US 1000 /* below this handshake RTT the sending host's own
                                        * scheduling (TSO, softirq batches, qdisc) moves its
                                        * packets by a round trip: timing locates no end */
#endif
#ifndef SMSS_GUESS_MIN
#define SMSS_GUESS_MIN 524 /* where R's MSS is unknown, the smallest packet size taken for the
                            * flight's segment size below half of S's MSS: RFC 1122's default
                            * MSS (536) less a timestamp option; smaller equal packets are an
                            * application's writes, not segments */
#endif
#ifndef FLIGHT_ECHO_MIN_TICKS
#define FLIGHT_ECHO_MIN_TICKS 3 /* one direction: the receiver's echoed clock must advance this
                                  * much from the request to the ACK that released more, which
                                  * a clock ticking slower than the round trip cannot do */
#endif
#ifndef FLIGHT_PACED_MIN_TICKS
#define FLIGHT_PACED_MIN_TICKS 3 /* a flight spread over this many ticks of S's clock was paced
                                   * (a burst sent at once spans at most one) */
#endif
#ifndef FLIGHT_NEAR_S_DIV
#define FLIGHT_NEAR_S_DIV 8 /* the vantage point is next to S when S's leg of the handshake is
                              * at most the round trip / 8: no hold on the way to it */
#endif
#ifndef FLIGHT_EXACT_MAX_BYTES
#define FLIGHT_EXACT_MAX_BYTES (1u << 20) /* a flight larger is never cwnd: no stack's receiver
                                           * opens a window that wide before its first ACK by
                                           * default (64 KB to 256 KB), and the largest IWs measured are
                                           * ~100 segments: megabytes before any ACK are a
                                           * crafted capture's */
#endif
#ifndef QUIC_GSO_SEG_MAX
#define QUIC_GSO_SEG_MAX 1472u /* a UDP payload over this (an Ethernet path's largest) may be a
                                 * GSO super-datagram: split where the connection's next packet
                                 * begins, at QUIC_GSO_SEG_MIN to this */
#endif
#ifndef QUIC_GSO_SEG_MIN
#define QUIC_GSO_SEG_MIN 1200u /* RFC 9000 14: no QUIC path carries smaller datagrams */
#endif
#ifndef DEFAULT_MSS
#define DEFAULT_MSS 536 /* RFC 9293 3.7.1: MSS when the option is absent */
#endif

/* Capture files */
#ifndef CAPTURE_READ_BUF
#define CAPTURE_READ_BUF (1u << 20) /* stdio buffer for a pipe or stdin: bytes per read(2) */
#endif
#ifndef FILEREAD_WINDOW
#define FILEREAD_WINDOW (1u << 20) /* bytes of a capture file read at once: 256 KiB to 1 MiB
                                    * measured alike, 4 MiB (beyond the L2 cache) slower */
#endif
#ifndef FILEREAD_FIRST_WINDOW
#define FILEREAD_FIRST_WINDOW (64u << 10) /* the first window of a capture file; each next one
                                           * doubles up to FILEREAD_WINDOW */
#endif
#ifndef FILEREAD_STDIO_BUF
#define FILEREAD_STDIO_BUF 512 /* stdio buffer of a file read so: larger reads bypass it */
#endif

/* The DPI-and-sinks stage (a second thread for capture files) */
#ifndef STAGE_BATCH_BYTES
#define STAGE_BATCH_BYTES (256u << 10) /* messages handed over at once */
#endif
#ifndef STAGE_BATCHES
#define STAGE_BATCHES 16 /* batches in flight at most: the queue's memory bound (4 MiB) */
#endif
#define STAGE_MAX_IP 65535u /* bytes of a packet passed on for nDPI */

/* Storage */
#ifndef STORE_BATCH_ROWS
#define STORE_BATCH_ROWS 4096 /* rows per transaction */
#endif
#ifndef LIBPQ_SONAME
#define LIBPQ_SONAME "libpq.so.5" /* loaded for postgresql:// targets only (pg.c) */
#endif

#ifndef STORE_BUSY_MS
#define STORE_BUSY_MS 5000 /* wait this long for another writer */
#endif
#define PROBE_MAX 64 /* bytes of a probe name, with its NUL */

/* PostgreSQL sink: the spool drains in batches; reconnects back off up to PG_BACKOFF_MAX_S */
#ifndef PG_BATCH_ROWS
#define PG_BATCH_ROWS 5000 /* flows per COPY transaction */
#endif
#ifndef PG_DRAIN_PER_TICK
#define PG_DRAIN_PER_TICK 50000 /* flows sent per tick at most, so the capture keeps up */
#endif
#ifndef PG_BACKOFF_MAX_S
#define PG_BACKOFF_MAX_S 30
#endif
#ifndef PG_CONNECT_TIMEOUT_S
#define PG_CONNECT_TIMEOUT_S "5" /* libpq connect_timeout unless PGCONNECT_TIMEOUT is set */
#endif

/* ClickHouse sink: the same spool, batches and backoff as PostgreSQL's (PG_* above), over HTTP */
#ifndef LIBCURL_SONAME
#define LIBCURL_SONAME "libcurl.so.4" /* loaded for clickhouse:// targets only (ch.c) */
#endif
#ifndef CH_DEFAULT_PORT
#define CH_DEFAULT_PORT 8123 /* ClickHouse's HTTP interface */
#endif
#ifndef CH_CONNECT_TIMEOUT_S
#define CH_CONNECT_TIMEOUT_S 5L
#endif
#ifndef CH_STALL_S
#define CH_STALL_S 60L /* a request that moves no byte for this long has failed */
#endif
#ifndef CH_MUTATION_WAIT_S
#define CH_MUTATION_WAIT_S 60 /* --replace waits this long at most for its deletes to be applied */
#endif
#ifndef CH_READ_BUFFER
/* max_read_buffer_size of a query: ClickHouse 18.16 reads FINAL through every part at once,
 * each column of each part with a buffer this size (default 1 MiB, whatever the file's size):
 * 311 parts over 225 days read 8 columns in 2.5 GB, past the server's memory limit; in 160 MB
 * with 64 KiB */
#define CH_READ_BUFFER "65536"
#endif

/* nDPI */
#ifndef DPI_MAX_PKTS
#define DPI_MAX_PKTS 6 /* payload packets nDPI sees per flow before it guesses: over every test and
                         * shared capture, 6 decides exactly what 8 does (README, Memory) */
#endif

#endif
