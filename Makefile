# bagstore - schemaless store on sharded MariaDB, and its console.
#
#   make            build/libbagstore.a and build/bagstore (installs nothing)
#   make deps       install missing Debian packages (scripts/deps.sh)
#   make quick      the tests that need no server (QUICK_TESTS below and a
#                   replay of every fuzz corpus): seconds, no MariaDB
#   make check      deps, then make quick, then every test against throwaway
#                   MariaDB shards
#   make asan       the same tests under AddressSanitizer + UBSan
#   make tsan       the threaded tests (TSAN_TESTS below: the engine's unit tests,
#                   the console's, the cleaner service's, the throttle's, the
#                   reshard's...) under ThreadSanitizer; a report is a failure
#   make valgrind   the engine's unit tests under valgrind (leaks are errors)
#   make layers     the layering check alone (make check runs it too): an engine
#                   file calling a higher layer, the engine calling the program,
#                   the command line and the console calling each other, an
#                   unprefixed library symbol, '%s' spliced into SQL
#   make bench      the benchmarks under tests/bench (prints figures)
#   make demo       deps, local shards, sample entities, then the console
#   make fuzz       every fuzz target (tests/fuzz/) under clang's libFuzzer,
#                   FUZZ_SECONDS (60) each; installs clang first
#   make shards-stop  stop the demo's shards
#   make compile_commands.json  the compilation database for clangd and other
#                   tools (through bear, a full build in $(BUILD)/cc)
#   make install    PREFIX=/usr/local DESTDIR= (the program, library, header, man
#                   page, lib/pkgconfig/bagstore.pc for programs linking
#                   libbagstore.a, doc/operations.md under share/doc/bagstore and
#                   conf/bagstore-cleaner.service under lib/systemd/system, its
#                   ExecStart pointed at PREFIX/bin/bagstore); installs no package
#   make uninstall  remove them again
#   make clean      remove build/, build-asan/ and build-tsan/
#
# V=1 shows full command lines. `make deps`, `check`, `demo`, `asan`, `tsan`,
# `valgrind` and `bench` install missing packages first (the list is in
# scripts/deps.sh; through apt-get, as root or with sudo); set
# BAGSTORE_NO_DEPS=1 to skip that step. A plain `make` only says which package
# is missing. CC and CFLAGS may be overridden; the flags bagstore needs are
# appended, then EXTRA_CFLAGS; WERROR=1 makes every warning an error (CI
# sets it).

PREFIX  ?= /usr/local
DESTDIR ?=
CC      ?= cc
CFLAGS  ?= -O2 -g
BUILD   ?= build

# The library's pkg-config modules (bagstore.pc's Requires.private), then the
# program's own.
ENGINE_PKGS := mysqlclient zlib yaml-0.1 uuid msgpack jansson
PKGS := $(ENGINE_PKGS) ncursesw libmicrohttpd gnutls libcrypt
VERSION = $(shell sed -n 's/^\#define BS_VERSION "\(.*\)"/\1/p' engine/bagstore.h)

ifeq ($(V),1)
Q :=
else
Q := @
endif

# pkg-config is asked only when building, so that `make deps` can run first.
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   = $(shell pkg-config --libs $(PKGS) 2>/dev/null)

REQ_CFLAGS := -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wshadow -Wno-unused-parameter \
              -Iengine -Itui/common -Itui/cli -Itui/console -Iviews -pthread -MMD -MP
ifeq ($(WERROR),1)
REQ_CFLAGS += -Werror
endif
ALL_CFLAGS = $(REQ_CFLAGS) $(PKG_CFLAGS) $(CFLAGS) $(EXTRA_CFLAGS)
ALL_LIBS   = $(PKG_LIBS) -pthread -lm $(LDLIBS)

ENGINE_SRC := $(wildcard engine/*.c)
APP_SRC    := $(wildcard tui/*.c tui/*/*.c views/*.c)
UNIT_SRC   := $(wildcard tests/unit/test_*.c)
BENCH_SRC  := $(wildcard tests/bench/bench_*.c)
FUZZ_SRC   := $(wildcard tests/fuzz/fuzz_*.c)

ENGINE_OBJ := $(ENGINE_SRC:%.c=$(BUILD)/%.o)
APP_OBJ    := $(APP_SRC:%.c=$(BUILD)/%.o)
UNIT_BIN   := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
BENCH_BIN  := $(BENCH_SRC:tests/bench/%.c=$(BUILD)/bench/%)
FUZZ_BIN   := $(FUZZ_SRC:tests/fuzz/%.c=$(BUILD)/fuzz-replay/%)

# The unit tests that need no server: make quick runs them (tests/run.sh,
# with shards, runs every unit test).
QUICK_TESTS := test_codec test_config test_route_text test_program

LIB := $(BUILD)/libbagstore.a
BIN := $(BUILD)/bagstore

.SECONDARY:

.PHONY: all deps pkgs-ok quick quick-build check asan tsan valgrind layers bench demo install uninstall clean shards-stop fuzz \
	compile_commands.json

all: $(LIB) $(BIN) $(UNIT_BIN) $(BENCH_BIN) $(FUZZ_BIN)

# Before any compiling (even under -j): say which pkg-config module is
# missing and how to get it, rather than let the compiler fail for want of a
# header. Installing is `make deps`'s job, never a plain `make`'s.
pkgs-ok: $(BUILD)/.pkgs-ok
$(BUILD)/.pkgs-ok:
	$(Q)mkdir -p $(BUILD)
	$(Q)pkg-config --exists $(PKGS) 2>/dev/null || { \
	  echo "bagstore: missing build packages: run \`make deps\` (or scripts/deps.sh)" >&2; \
	  pkg-config --print-errors --exists $(PKGS); exit 1; }
	$(Q)touch $@
deps:
	$(Q)sh scripts/deps.sh

$(BUILD)/%.o: %.c | $(BUILD)/.pkgs-ok
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(LIB): $(ENGINE_OBJ)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && ar rcs $@ $^

$(BIN): $(APP_OBJ) $(LIB)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $(APP_OBJ) $(LIB) $(ALL_LIBS) $(LDFLAGS)

$(BUILD)/tests/%: $(BUILD)/tests/unit/%.o $(LIB)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $< $(LIB) $(ALL_LIBS) $(LDFLAGS)

# A fuzz target with replay.c's main(): make quick replays its corpus.
$(BUILD)/fuzz-replay/%: $(BUILD)/tests/fuzz/%.o $(BUILD)/tests/fuzz/replay.o $(LIB)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $^ $(ALL_LIBS) $(LDFLAGS)

# test_program tests the program's own pieces: it links its objects but main.o.
PROGRAM_OBJ := $(filter-out $(BUILD)/tui/main.o,$(APP_OBJ))
$(BUILD)/tests/test_program: $(BUILD)/tests/unit/test_program.o $(PROGRAM_OBJ) $(LIB)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $< $(PROGRAM_OBJ) $(LIB) $(ALL_LIBS) $(LDFLAGS)

$(BUILD)/bench/%: $(BUILD)/tests/bench/%.o $(LIB)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $< $(LIB) $(ALL_LIBS) $(LDFLAGS)

# The targets that run things install what is missing first, then build
# (a sub-make, so that nothing compiles before the packages are there).
quick:
	$(Q)$(MAKE) --no-print-directory quick-build
	$(Q)BUILD=$(BUILD) sh tests/quick.sh $(QUICK_TESTS)
quick-build: $(QUICK_TESTS:%=$(BUILD)/tests/%) $(FUZZ_BIN)
	@:

check: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)BUILD=$(BUILD) sh tests/quick.sh $(QUICK_TESTS)
	$(Q)sh tests/layers.sh $(BUILD)
	$(Q)BUILD=$(BUILD) sh tests/run.sh

layers: all
	$(Q)sh tests/layers.sh $(BUILD)

# Sanitizers: a build folder of their own, the same test run.
asan:
	$(Q)$(MAKE) --no-print-directory BUILD=build-asan \
	  CFLAGS="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" \
	  LDFLAGS="-fsanitize=address,undefined" check

# ThreadSanitizer: the engine's unit tests (the cleaner's threads, the
# fan-out), the console's tests (its lanes and backfill threads), the
# throttle's (its samplers, lanes and the backfill's writers) and the
# reshard's (a runner thread per source shard, writers racing the moves);
# the statement log's (lane threads and their fan-out threads into its ring).
TSAN_TESTS = unit test_console_screens test_console_indexes test_console_entities \
	test_console_backfills test_console_hung test_console_readonly \
	test_tls test_grants \
	test_console_navigation test_console_honest test_console_narrow test_audit test_properties \
	test_lag_history \
	test_console_workers test_service test_metrics_auth test_console_topology test_console_config \
	test_throttle test_reshard test_reshard_settle test_collect test_console_log test_many_rows
tsan: deps
	$(Q)$(MAKE) --no-print-directory BUILD=build-tsan \
	  CFLAGS="-O1 -g -fsanitize=thread -fno-omit-frame-pointer" LDFLAGS="-fsanitize=thread" all
	$(Q)BUILD=build-tsan BAGSTORE_TSAN=1 BAGSTORE_TEST_TIMEOUT=$${BAGSTORE_TEST_TIMEOUT:-900} sh tests/run.sh all $(TSAN_TESTS)

valgrind: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)BUILD=$(BUILD) BAGSTORE_VALGRIND=1 sh tests/run.sh unit

bench: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)BUILD=$(BUILD) sh tests/bench/run.sh

demo: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)BUILD=$(BUILD) sh conf/demo.sh

# The compilation database: every compile of a full build, as bear saw it
# (a build folder of its own, so that the usual one is not rebuilt).
compile_commands.json: | $(BUILD)/.pkgs-ok
	$(Q)command -v bear >/dev/null || { echo "bagstore: $@ needs bear (apt-get install bear)" >&2; exit 1; }
	$(Q)rm -rf $(BUILD)/cc
	$(Q)bear --output $@ -- $(MAKE) --no-print-directory BUILD=$(BUILD)/cc all
	@echo "  GEN     $@ ($$(grep -c '"file"' $@) files)"

shards-stop:
	$(Q)sh conf/shards.sh stop

fuzz:
	$(Q)sh scripts/deps.sh clang libclang-rt-dev
	$(Q)sh tests/fuzz/run.sh

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include \
	  $(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/lib/pkgconfig
	install -m 755 $(BIN) $(DESTDIR)$(PREFIX)/bin/bagstore
	install -m 644 $(LIB) $(DESTDIR)$(PREFIX)/lib/libbagstore.a
	install -m 644 engine/bagstore.h $(DESTDIR)$(PREFIX)/include/bagstore.h
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' -e 's|@PKGS@|$(ENGINE_PKGS)|' \
	  engine/bagstore.pc.in >$(DESTDIR)$(PREFIX)/lib/pkgconfig/bagstore.pc
	chmod 644 $(DESTDIR)$(PREFIX)/lib/pkgconfig/bagstore.pc
	install -m 644 doc/bagstore.1 $(DESTDIR)$(PREFIX)/share/man/man1/bagstore.1
	install -d $(DESTDIR)$(PREFIX)/share/doc/bagstore
	install -m 644 doc/operations.md $(DESTDIR)$(PREFIX)/share/doc/bagstore/operations.md
	install -d $(DESTDIR)$(PREFIX)/lib/systemd/system
	sed 's|/usr/local/bin/bagstore|$(PREFIX)/bin/bagstore|' conf/bagstore-cleaner.service \
	  >$(DESTDIR)$(PREFIX)/lib/systemd/system/bagstore-cleaner.service
	chmod 644 $(DESTDIR)$(PREFIX)/lib/systemd/system/bagstore-cleaner.service

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/bagstore $(DESTDIR)$(PREFIX)/lib/libbagstore.a \
	  $(DESTDIR)$(PREFIX)/include/bagstore.h $(DESTDIR)$(PREFIX)/share/man/man1/bagstore.1 \
	  $(DESTDIR)$(PREFIX)/share/doc/bagstore/operations.md $(DESTDIR)$(PREFIX)/lib/pkgconfig/bagstore.pc \
	  $(DESTDIR)$(PREFIX)/lib/systemd/system/bagstore-cleaner.service

clean:
	rm -rf build build-asan build-tsan $(BUILD)

-include $(ENGINE_OBJ:.o=.d) $(APP_OBJ:.o=.d) $(UNIT_SRC:%.c=$(BUILD)/%.d) $(BENCH_SRC:%.c=$(BUILD)/%.d) \
	$(FUZZ_SRC:%.c=$(BUILD)/%.d)
