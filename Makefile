# bagstore - schemaless store on sharded MariaDB, and its console.
#
#   make            build/libbagstore.a and build/bagstore (installs nothing)
#   make deps       install missing Debian packages (scripts/deps.sh)
#   make check      deps, then every test, against throwaway MariaDB shards
#   make asan       the same tests under AddressSanitizer + UBSan
#   make tsan       engine unit tests and console tests under ThreadSanitizer
#   make valgrind   the engine's unit tests under valgrind (leaks are errors)
#   make layers     the layering check alone (make check runs it too)
#   make bench      the benchmarks under tests/bench (prints figures)
#   make demo       deps, local shards, sample entities, then the console
#   make install    PREFIX=/usr/local DESTDIR= (the program, library, header, man
#                   page and conf/bagstore-cleaner.service under lib/systemd/system)
#
# V=1 shows full command lines. `make deps`, `check`, `demo`, `asan`, `tsan`,
# `valgrind` and `bench` install missing packages first (through apt-get, as
# root or with sudo); set BAGSTORE_NO_DEPS=1 to skip that step. A plain `make`
# only says which package is missing.

PREFIX  ?= /usr/local
DESTDIR ?=
CC      ?= cc
CFLAGS  ?= -O2 -g
BUILD   ?= build

PKGS := mysqlclient ncursesw zlib yaml-0.1 uuid msgpack jansson libmicrohttpd

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
ALL_CFLAGS = $(REQ_CFLAGS) $(PKG_CFLAGS) $(CFLAGS)
ALL_LIBS   = $(PKG_LIBS) -pthread -lm $(LDLIBS)

ENGINE_SRC := $(wildcard engine/*.c)
APP_SRC    := $(wildcard tui/*.c tui/*/*.c views/*.c)
UNIT_SRC   := $(wildcard tests/unit/test_*.c)
BENCH_SRC  := $(wildcard tests/bench/bench_*.c)

ENGINE_OBJ := $(ENGINE_SRC:%.c=$(BUILD)/%.o)
APP_OBJ    := $(APP_SRC:%.c=$(BUILD)/%.o)
UNIT_BIN   := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
BENCH_BIN  := $(BENCH_SRC:tests/bench/%.c=$(BUILD)/bench/%)

LIB := $(BUILD)/libbagstore.a
BIN := $(BUILD)/bagstore

.SECONDARY:

.PHONY: all deps pkgs-ok check asan tsan valgrind layers bench demo install uninstall clean shards-stop fuzz

all: $(LIB) $(BIN) $(UNIT_BIN) $(BENCH_BIN)

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

$(BUILD)/bench/%: $(BUILD)/tests/bench/%.o $(LIB)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $< $(LIB) $(ALL_LIBS) $(LDFLAGS)

# The targets that run things install what is missing first, then build
# (a sub-make, so that nothing compiles before the packages are there).
check: deps
	$(Q)$(MAKE) --no-print-directory all
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
# reshard's (a runner thread per source shard, writers racing the moves).
TSAN_TESTS = unit test_console_screens test_console_indexes test_console_entities \
	test_console_backfills test_console_hung test_console_readonly \
	test_tls test_grants \
	test_console_navigation test_console_honest test_console_narrow test_audit test_properties \
	test_lag_history \
	test_console_workers test_service test_console_topology test_console_config \
	test_throttle test_reshard test_reshard_settle test_collect
tsan: deps
	$(Q)$(MAKE) --no-print-directory BUILD=build-tsan \
	  CFLAGS="-O1 -g -fsanitize=thread -fno-omit-frame-pointer" LDFLAGS="-fsanitize=thread" all
	$(Q)BUILD=build-tsan BAGSTORE_TSAN=1 sh tests/run.sh all $(TSAN_TESTS)

valgrind: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)BUILD=$(BUILD) BAGSTORE_VALGRIND=1 sh tests/run.sh unit

bench: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)BUILD=$(BUILD) sh tests/bench/run.sh

demo: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)BUILD=$(BUILD) sh conf/demo.sh

shards-stop:
	$(Q)sh conf/shards.sh stop

fuzz:
	$(Q)sh tests/fuzz/run.sh

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include \
	  $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 755 $(BIN) $(DESTDIR)$(PREFIX)/bin/bagstore
	install -m 644 $(LIB) $(DESTDIR)$(PREFIX)/lib/libbagstore.a
	install -m 644 engine/bagstore.h $(DESTDIR)$(PREFIX)/include/bagstore.h
	install -m 644 doc/bagstore.1 $(DESTDIR)$(PREFIX)/share/man/man1/bagstore.1
	install -d $(DESTDIR)$(PREFIX)/lib/systemd/system
	sed 's|/usr/local/bin/bagstore|$(PREFIX)/bin/bagstore|' conf/bagstore-cleaner.service \
	  >$(DESTDIR)$(PREFIX)/lib/systemd/system/bagstore-cleaner.service
	chmod 644 $(DESTDIR)$(PREFIX)/lib/systemd/system/bagstore-cleaner.service

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/bagstore $(DESTDIR)$(PREFIX)/lib/libbagstore.a \
	  $(DESTDIR)$(PREFIX)/include/bagstore.h $(DESTDIR)$(PREFIX)/share/man/man1/bagstore.1 \
	  $(DESTDIR)$(PREFIX)/lib/systemd/system/bagstore-cleaner.service

clean:
	rm -rf build build-asan build-tsan $(BUILD)

-include $(ENGINE_OBJ:.o=.d) $(APP_OBJ:.o=.d) $(UNIT_SRC:%.c=$(BUILD)/%.d) $(BENCH_SRC:%.c=$(BUILD)/%.d)
