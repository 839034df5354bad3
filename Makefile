# bagstore - schemaless store on sharded MariaDB, and its console.
#
#   make            build/libbagstore.a and build/bagstore
#   make check      every test, against throwaway MariaDB shards
#   make asan       the same tests under AddressSanitizer + UBSan
#   make valgrind   the engine's unit tests under valgrind (leaks are errors)
#   make bench      the benchmarks under tests/bench (prints figures)
#   make demo       local shards, sample entities, then the console
#   make install    PREFIX=/usr/local DESTDIR=
#
# V=1 shows full command lines. Missing Debian packages are installed first
# (scripts/deps.sh); set BAGSTORE_NO_DEPS=1 to skip that step.

PREFIX  ?= /usr/local
DESTDIR ?=
CC      ?= cc
CFLAGS  ?= -O2 -g
BUILD   ?= build

PKGS := mysqlclient ncursesw zlib yaml-0.1 uuid msgpack jansson

ifeq ($(V),1)
Q :=
else
Q := @
endif

# pkg-config is asked only when building, so that `make deps` can run first.
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   = $(shell pkg-config --libs $(PKGS) 2>/dev/null)

REQ_CFLAGS := -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wshadow -Wno-unused-parameter \
              -Iengine -Itui -Iviews -pthread -MMD -MP
ALL_CFLAGS = $(REQ_CFLAGS) $(PKG_CFLAGS) $(CFLAGS)
ALL_LIBS   = $(PKG_LIBS) -pthread -lm $(LDLIBS)

ENGINE_SRC := $(wildcard engine/*.c)
APP_SRC    := $(wildcard tui/*.c views/*.c)
UNIT_SRC   := $(wildcard tests/unit/test_*.c)
BENCH_SRC  := $(wildcard tests/bench/bench_*.c)

ENGINE_OBJ := $(ENGINE_SRC:%.c=$(BUILD)/%.o)
APP_OBJ    := $(APP_SRC:%.c=$(BUILD)/%.o)
UNIT_BIN   := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
BENCH_BIN  := $(BENCH_SRC:tests/bench/%.c=$(BUILD)/bench/%)

LIB := $(BUILD)/libbagstore.a
BIN := $(BUILD)/bagstore

.SECONDARY:

.PHONY: all deps check asan valgrind bench demo install uninstall clean shards-stop fuzz

all: deps-ok $(LIB) $(BIN) $(UNIT_BIN) $(BENCH_BIN)

# The deps step: installs what is missing, once per build folder (every
# time under BAGSTORE_NO_DEPS, which checks nothing), before any compiling,
# even under -j; then says which pkg-config module is still missing, rather
# than letting the compiler fail for want of a header.
deps-ok: $(BUILD)/.deps-ok
$(BUILD)/.deps-ok: scripts/deps.sh
	$(Q)mkdir -p $(BUILD)
	$(Q)sh scripts/deps.sh
	$(Q)pkg-config --exists $(PKGS) || { pkg-config --print-errors --exists $(PKGS); exit 1; }
	$(Q)[ -n "$$BAGSTORE_NO_DEPS" ] || touch $@
deps:
	$(Q)sh scripts/deps.sh

$(BUILD)/%.o: %.c | $(BUILD)/.deps-ok
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

check: all
	$(Q)BUILD=$(BUILD) sh tests/run.sh

# Sanitizers: a build folder of their own, the same test run.
asan:
	$(Q)$(MAKE) --no-print-directory BUILD=build-asan \
	  CFLAGS="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" \
	  LDFLAGS="-fsanitize=address,undefined" check

valgrind: all
	$(Q)BUILD=$(BUILD) BAGSTORE_VALGRIND=1 sh tests/run.sh unit

bench: all
	$(Q)BUILD=$(BUILD) sh tests/bench/run.sh

demo: all
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

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/bagstore $(DESTDIR)$(PREFIX)/lib/libbagstore.a \
	  $(DESTDIR)$(PREFIX)/include/bagstore.h $(DESTDIR)$(PREFIX)/share/man/man1/bagstore.1

clean:
	rm -rf build build-asan $(BUILD)

-include $(ENGINE_OBJ:.o=.d) $(APP_OBJ:.o=.d) $(UNIT_SRC:%.c=$(BUILD)/%.d) $(BENCH_SRC:%.c=$(BUILD)/%.d)
