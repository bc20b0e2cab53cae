# iwscope — see README.md. `make` builds build/iwscope; `make test` installs what is missing,
# builds and runs every test; `make demo` analyses a bundled capture and prints the report.
# `make bench` compares iwscope with tcpdump, tcptrace and ndpiReader on capture files;
# `make bench-live` (root) replays a capture over a veth pair into iwscope and tcpdump at
# fixed rates (LIVE_ARGS="--runs 3 --append-results" writes its section of bench/RESULTS.md).

PREFIX  ?= /usr/local
CC      ?= cc
PKGS    := libpcap libndpi sqlite3 ncursesw libpq libcurl
SRCS    := $(wildcard src/*.c src/*/*.c)  # src/<role>/<module>.c: README's map
HDRS    := $(wildcard include/*.h)

# Debian packages the build and the tests need (installed by `make deps` when missing).
DEB_BUILD := gcc make pkg-config libpcap-dev libndpi-dev libsqlite3-dev libncurses-dev libpq-dev \
             libcurl4-openssl-dev
DEB_TEST  := sqlite3 tshark tcpdump tcptrace libndpi-bin iproute2 ethtool clang time \
             libclang-rt-14-dev valgrind tmux python3 chromium postgresql jq \
             clickhouse-server clickhouse-client ngtcp2-server ngtcp2-client openssl
# ... and what the benchmarks need beyond those (`make bench`, `make bench-live`)
DEB_BENCH := tcpreplay

PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
# libpq and libcurl are compiled against but not linked: src/db/pg.c loads libpq when a
# postgresql:// target is used, src/db/ch.c libcurl for clickhouse://
PKG_LIBS   = $(shell pkg-config --libs $(filter-out libpq libcurl,$(PKGS)) 2>/dev/null) -lm

WARN     := -std=c11 -Wall -Wextra -Werror -Wshadow -Wformat=2 -Wformat-security
HARDEN   := -D_FORTIFY_SOURCE=2 -fstack-protector-strong -fPIE
CFLAGS   ?= -O2 -g
# the release build is optimised across files at link time: the per-packet path runs through
# decode, the flow table, the handshake and flight trackers, each in its own file
LTO      ?= -flto=auto
ALL_CFLAGS = $(WARN) -D_DEFAULT_SOURCE -Iinclude $(PKG_CFLAGS) $(CFLAGS)
LDHARDEN := -pie -Wl,-z,relro,-z,now

BUILD    := build
DEBUG    := build-debug
SAN      := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all

.PHONY: all debug tsan deps deps-build deps-bench demo test install clean truth quictruth fuzz fuzzers bench bench-live tools soak
all: $(BUILD)/iwscope

$(BUILD)/schema_sql.c: schema/sqlite.sql schema/postgresql.sql schema/clickhouse.sql schema/views.sql schema/migrate.sql tools/embed.sh Makefile
	@mkdir -p $(@D)
	{ sh tools/embed.sh sqldb_schema_sql schema/sqlite.sql schema/views.sql && \
	  sh tools/embed.sh pg_schema_sql schema/postgresql.sql schema/views.sql && \
	  sh tools/embed.sh ch_schema_sql schema/clickhouse.sql && \
	  sh tools/embed.sh schema_views_sql schema/views.sql && \
	  sh tools/embed.sh schema_migrate_sql schema/migrate.sql; } > $@

$(BUILD)/%.o: src/%.c $(HDRS) | $(BUILD)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(HARDEN) $(LTO) -c $< -o $@

$(BUILD)/schema_sql.o: $(BUILD)/schema_sql.c
	$(CC) $(ALL_CFLAGS) $(HARDEN) $(LTO) -c $< -o $@

$(BUILD):
	mkdir -p $@

OBJS := $(patsubst src/%.c,$(BUILD)/%.o,$(SRCS)) $(BUILD)/schema_sql.o
$(BUILD)/iwscope: $(OBJS)
	$(CC) $(CFLAGS) $(HARDEN) $(LTO) $(LDHARDEN) -o $@ $^ $(PKG_LIBS)

# ASan + UBSan build; the tests run it too.
DOBJS := $(patsubst src/%.c,$(DEBUG)/%.o,$(SRCS)) $(DEBUG)/schema_sql.o
debug: $(DEBUG)/iwscope
$(DEBUG)/%.o: src/%.c $(HDRS)
	@mkdir -p $(@D)
	$(CC) $(WARN) -D_DEFAULT_SOURCE -Iinclude $(PKG_CFLAGS) -O1 -g $(SAN) -c $< -o $@
$(DEBUG)/schema_sql.o: $(BUILD)/schema_sql.c
	@mkdir -p $(@D)
	$(CC) $(WARN) -Iinclude -O1 -g $(SAN) -c $< -o $@
$(DEBUG)/iwscope: $(DOBJS)
	$(CC) $(SAN) -o $@ $^ $(PKG_LIBS)

# ThreadSanitizer build: the tests run the threaded file path through it.
TSAN := build-tsan
TOBJS := $(patsubst src/%.c,$(TSAN)/%.o,$(SRCS)) $(TSAN)/schema_sql.o
tsan: $(TSAN)/iwscope
$(TSAN)/%.o: src/%.c $(HDRS)
	@mkdir -p $(@D)
	$(CC) $(WARN) -D_DEFAULT_SOURCE -Iinclude $(PKG_CFLAGS) -O1 -g -fsanitize=thread -c $< -o $@
$(TSAN)/schema_sql.o: $(BUILD)/schema_sql.c
	@mkdir -p $(@D)
	$(CC) $(WARN) -Iinclude -O1 -g -fsanitize=thread -c $< -o $@
$(TSAN)/iwscope: $(TOBJS)
	$(CC) -fsanitize=thread -o $@ $^ $(PKG_LIBS)

# Installs missing Debian packages (as root; apt-get update first). No-op when all present.
# deps-build: what building and the demo need; deps: that and the test toolchain.
deps-build:
	@$(MAKE) -s deps PKGS_WANTED="$(DEB_BUILD)"

PKGS_WANTED ?= $(DEB_BUILD) $(DEB_TEST)
deps:
	@missing=""; for p in $(PKGS_WANTED); do \
	  dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  if [ "$$(id -u)" != 0 ]; then echo "make deps: run as root to install:$$missing" >&2; exit 1; fi; \
	  echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi

demo: deps-build
	$(MAKE) all
	rm -f demo.db demo.db-wal demo.db-shm
	$(BUILD)/iwscope -r tests/pcaps/demo.pcap -o demo.db
	$(BUILD)/iwscope report demo.db

# the builds side by side on every usable CPU (each tree's rules are independent)
test: deps
	$(MAKE) -j$$(nproc) all debug tsan tools $(BUILD)/benchgen $(DEBUG)/unit fuzzers
	python3 tests/run.py

TOOLS := $(BUILD)/pcapgen $(BUILD)/delayline
tools: $(TOOLS)
$(BUILD)/pcapgen: tools/pcapgen.c | $(BUILD)
	$(CC) $(WARN) -D_DEFAULT_SOURCE -O2 -o $@ $<
$(BUILD)/delayline: tools/delayline.c | $(BUILD)
	$(CC) $(WARN) -D_DEFAULT_SOURCE -O2 -o $@ $< -lpthread

# Regenerates the ground-truth captures in tests/pcaps/truth, the link-type variants made from
# them, and the application captures in tests/pcaps/dpi (root: network namespaces).
DEB_TRUTH := nginx openssh-server openssl curl
truth: deps
	@missing=""; for p in $(DEB_TRUTH); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; fi
	$(MAKE) all tools
	python3 tools/truth.py
	sh tools/mklink.sh
	python3 tools/dpicap.py
	python3 tools/mkdemo.py

# Regenerates the QUIC ground truth in tests/pcaps/quictruth: ngtcp2's example server and client
# in the lab's namespaces, the server's qlog as the truth (root; tools/quictruth.py).
DEB_QTRUTH := ngtcp2-server ngtcp2-client openssl tcpdump iproute2 ethtool
quictruth: deps-build
	@$(MAKE) -s deps PKGS_WANTED="$(DEB_QTRUTH)"
	$(MAKE) all tools
	python3 tools/quictruth.py --jobs 4

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/iwscope $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 755 $(BUILD)/iwscope $(DESTDIR)$(PREFIX)/bin/iwscope
	install -m 644 schema/sqlite.sql schema/postgresql.sql schema/clickhouse.sql schema/views.sql schema/migrate.sql \
	  $(DESTDIR)$(PREFIX)/share/iwscope/
	install -m 644 man/iwscope.1 $(DESTDIR)$(PREFIX)/share/man/man1/iwscope.1
	install -d $(DESTDIR)$(PREFIX)/share/doc/iwscope
	install -m 644 docs/METHOD.md $(DESTDIR)$(PREFIX)/share/doc/iwscope/METHOD.md

clean:
	rm -rf $(BUILD) $(DEBUG) $(TSAN) $(FUZZ) demo.db demo.db-wal demo.db-shm

# Unit tests: every module but main, with the sanitizers.
UNIT_OBJS := $(filter-out $(DEBUG)/main.o,$(DOBJS))
$(DEBUG)/unit: tests/unit.c tests/unit_flight.c tests/unit_handshake.c tests/unit_names.c tests/unit_quic.c tests/unit.h $(UNIT_OBJS)
	$(CC) $(WARN) -D_DEFAULT_SOURCE -Iinclude $(PKG_CFLAGS) -O1 -g $(SAN) -o $@ $(filter %.c %.o,$^) $(PKG_LIBS)

# Benchmark against tcpdump, tcptrace and ndpiReader (not part of make test).
$(BUILD)/benchgen: tools/benchgen.c | $(BUILD)
	$(CC) $(WARN) -D_DEFAULT_SOURCE -O2 -o $@ $<
deps-bench:
	@$(MAKE) -s deps PKGS_WANTED="$(DEB_BUILD) $(DEB_TEST) $(DEB_BENCH)"
bench: deps-bench
	$(MAKE) all $(BUILD)/benchgen
	python3 bench/run.py

# Live benchmark (root: network namespaces): tcpreplay at 50k-400k packets/s and top speed
# into tcpdump and iwscope; bench/live.py --help for its options, passed in LIVE_ARGS.
# Not root: the script says it is skipped (before anything is installed or built).
LIVE_ARGS ?=
bench-live:
	@if [ "$$(id -u)" != 0 ]; then python3 bench/live.py $(LIVE_ARGS); else \
	  $(MAKE) -s deps-bench && $(MAKE) all $(BUILD)/benchgen && python3 bench/live.py $(LIVE_ARGS); fi

# Live soak (root): 10 minutes of traffic in network namespaces, RSS sampled in bench/soak.log.
soak: deps
	$(MAKE) all tools
	python3 tools/soak.py 600

# libFuzzer targets (clang): one per parser entry point. `make fuzz` runs each for
# FUZZ_SECONDS (default 600); `make test` runs a short smoke of each.
FUZZ_SECONDS ?= 600
FUZZ := build-fuzz
FUZZ_CFLAGS := -std=c11 -D_DEFAULT_SOURCE -Iinclude $(PKG_CFLAGS) -g -O1 \
               -fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_SRCS := $(filter-out src/main.c,$(SRCS))
# the sources are compiled once, instrumented for libFuzzer, and every target links them
FZOBJS := $(patsubst src/%.c,$(FUZZ)/%.o,$(FUZZ_SRCS)) $(FUZZ)/schema_sql.o
FUZZ_TARGETS := $(BUILD)/fuzz_decode $(BUILD)/fuzz_options $(BUILD)/fuzz_capture $(BUILD)/fuzz_pcapfile \
                $(BUILD)/fuzz_pcapng $(BUILD)/fuzz_flight $(BUILD)/fuzz_names $(BUILD)/fuzz_quic
fuzzers: $(FUZZ_TARGETS)
.SECONDARY: $(FZOBJS) $(FUZZ)/fileread_window4k.o
$(FUZZ)/%.o: src/%.c $(HDRS)
	@mkdir -p $(@D)
	clang $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@
$(FUZZ)/schema_sql.o: $(BUILD)/schema_sql.c
	@mkdir -p $(@D)
	clang $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@
# the in-place pcap reader and the pcapng reader against libpcap, with one-page windows so
# records and blocks straddle them: their own copy of fileread.c
$(FUZZ)/fileread_window4k.o: src/input/fileread.c $(HDRS)
	@mkdir -p $(@D)
	clang $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -DFILEREAD_WINDOW=4096 -c $< -o $@
FZOBJS_4K := $(filter-out $(FUZZ)/input/fileread.o,$(FZOBJS)) $(FUZZ)/fileread_window4k.o
$(BUILD)/fuzz_pcapfile $(BUILD)/fuzz_pcapng: FZLINK = $(FZOBJS_4K)
FZLINK = $(FZOBJS)
$(BUILD)/fuzz_%: tests/fuzz/fuzz_%.c $(FZOBJS) $(FUZZ)/fileread_window4k.o
	clang $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< $(FZLINK) $(PKG_LIBS)

fuzz: deps
	$(MAKE) fuzzers
	python3 tests/fuzz/run.py $(FUZZ_SECONDS)
