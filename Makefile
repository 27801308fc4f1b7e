# symd — one Makefile. `make`, `make test`, `make run`, `make fuzz`, `make bench`,
# `make SANITIZE=address,undefined test`.

CC       ?= cc
SANITIZE ?=
# O= puts every build product under another folder (parallel work trees of one
# checkout); the release binary is then $(O)/rel/symd instead of ./symd.
O        ?= build
BUILD    := $(O)/$(if $(SANITIZE),san,rel)
CFLAGS   ?= -O2 -g
CFLAGS   += -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -pthread \
            -fno-strict-aliasing
# libzip (Debian libzip-dev) reads uploaded .zip archives.
ZIP_CFLAGS := $(shell pkg-config --cflags libzip 2>/dev/null)
ZIP_LIBS   := $(shell pkg-config --libs libzip 2>/dev/null || echo -lzip)
# libpq (Debian libpq-dev) reaches a PostgreSQL store (--db postgresql://...).
PQ_CFLAGS  := -I$(shell pg_config --includedir 2>/dev/null || echo /usr/include/postgresql)
CFLAGS   += $(ZIP_CFLAGS) $(PQ_CFLAGS)
# libcrypto (Debian libssl-dev): SHA-256 of chunked uploads (util/sha256.c).
CRYPTO_LIBS := $(shell pkg-config --libs libcrypto 2>/dev/null || echo -lcrypto)
LDLIBS   := -lmicrohttpd -lsqlite3 -lpq -ljansson $(ZIP_LIBS) -lz -liberty -lzstd $(CRYPTO_LIBS) -pthread
ifneq ($(SANITIZE),)
CFLAGS   += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
LDFLAGS  += -fsanitize=$(SANITIZE)
endif

# Everything but main.c goes into a library the tests and fuzzers link too.
LIB_SRC := util/err.c util/sha256.c util/membudget.c util/dynbuf.c util/hex.c util/jsonw.c util/util.c \
           demangle/demangle.c macho/macho.c dsym/dwarf.c dsym/dwarf_read.c dsym/dwarf_line.c dsym/dwarf_die.c dsym/dwarf_inline.c dsym/lineindex.c dsym/linewrite.c macho/symindex.c macho/dyld_cache.c store/store.c store/hooks.c store/sqlite.c store/chunk_spool.c store/sqlite_schema.c store/postgres.c store/postgres_schema.c store/migrate.c store/appversion.c ingest/ingest.c ingest/unzip.c import/peek.c import/devsupport.c import/import.c \
           parser/backtrace.c parser/crash.c parser/crash_text.c parser/crash_ips.c parser/crash_sample.c parser/crash_panic.c parser/crash_kscrash.c parser/crash_plcrash.c parser/crash_metrickit.c parser/crash_minidump.c minidump/minidump.c minidump/walk.c util/multipart.c util/gzip.c util/protowire.c util/jsonbig.c server/symbolicate.c server/crashsym.c \
           server/crashtext.c server/metrics.c server/http.c server/http_framing.c server/acceptor.c server/http_images.c server/http_symbolicate.c server/http_crashes.c server/http_groups.c server/http_ops.c server/http_system.c server/http_webhooks.c server/retention.c server/http_chunks.c server/webhook.c server/regroup.c server/signature.c server/grouping.c server/grouping_file.c server/mdwalk.c \
           client/walk.c client/http1.c client/chunkhash.c client/upload.c \
           unwind/unwind.c unwind/compact.c unwind/ehframe.c unwind/build.c unwind/walk.c \
           breakpad/sym.c breakpad/cfi.c breakpad/image.c breakpad/dumpsyms.c breakpad/unwrows.c \
           swift/node.c swift/punycode.c swift/parse.c swift/parse_old.c swift/print.c swift/demangle.c
# The dashboard (web/, its script modules in web/js/) and docs/openapi.yaml are
# compiled into the binary.
ASSET_FILES := $(sort $(wildcard web/*.html web/*.js web/*.css web/*.svg web/*.png web/*.ico web/js/*.js)) \
               $(wildcard docs/openapi.yaml)
GEN_ASSETS  := $(O)/gen/assets.c
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/%.o) $(BUILD)/gen/assets.o
TEST_SRC := $(wildcard tests/*.c)
TEST_OBJ := $(TEST_SRC:%.c=$(BUILD)/%.o)
SYMD     := $(if $(SANITIZE)$(filter-out build,$(O)),$(BUILD)/symd,symd)

FUZZ_SECONDS ?= 60
FUZZ_CC      ?= clang-14
FUZZ_TARGETS := fuzz_macho fuzz_dwarf fuzz_symbolicate fuzz_unzip fuzz_demangle fuzz_crash_text fuzz_crash_ips fuzz_crash_sample fuzz_crash_kscrash fuzz_crash_plcrash fuzz_protowire fuzz_jsonbig fuzz_swift_demangle fuzz_dyld_cache fuzz_crash_metrickit fuzz_devsupport fuzz_minidump fuzz_compact_unwind fuzz_cfa_program fuzz_breakpad_sym fuzz_grouping_rules fuzz_appversion fuzz_upload_recognise

.PHONY: all deps test check run fuzz fuzz-build bench clean
all: $(SYMD)

deps: build/.deps-ok
build/.deps-ok: scripts/deps.sh
	@bash scripts/deps.sh
	@mkdir -p build && touch $@

$(BUILD)/%.o: %.c build/.deps-ok
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

$(GEN_ASSETS): scripts/embed.py $(ASSET_FILES) build/.deps-ok
	@mkdir -p $(dir $@)
	python3 scripts/embed.py $@ $(ASSET_FILES)

$(BUILD)/gen/assets.o: $(GEN_ASSETS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -I. -c $< -o $@

$(BUILD)/libsymd.a: $(LIB_OBJ)
	ar rcs $@ $^

$(SYMD): $(BUILD)/server/main.o $(BUILD)/libsymd.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/symd-tests: $(TEST_OBJ) $(BUILD)/libsymd.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# The suite runs the unit tests in-process and the end-to-end tests against
# the symd binary of the same build.
test: $(SYMD) $(BUILD)/symd-tests
	SYMD_BIN=$(abspath $(SYMD)) $(BUILD)/symd-tests

# Everything CI runs: release tests, sanitizer tests, fuzz smoke.
check:
	bash tests/run-all.sh

run: $(SYMD)
	./$(SYMD) serve --listen 127.0.0.1:8080 --db ./symd.db

# libFuzzer targets, always clang with address+undefined. The library is
# compiled once (instrumented for coverage, not linked to the fuzzer driver)
# and every target links it.
FUZZ_SAN   := -fsanitize=address,undefined -fno-sanitize-recover=all
FUZZ_FLAGS := -g -O1 -std=c11 -D_GNU_SOURCE -pthread $(ZIP_CFLAGS) $(PQ_CFLAGS) -I.
FUZZ_OBJ   := $(LIB_SRC:%.c=$(O)/fuzz/obj/%.o) $(O)/fuzz/obj/gen/assets.o
fuzz-build: $(FUZZ_TARGETS:%=$(O)/fuzz/%)
$(O)/fuzz/obj/%.o: %.c build/.deps-ok
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link $(FUZZ_SAN) -MMD -MP -c $< -o $@
$(O)/fuzz/obj/gen/assets.o: $(GEN_ASSETS)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link $(FUZZ_SAN) -c $< -o $@
$(O)/fuzz/libsymd-fuzz.a: $(FUZZ_OBJ)
	ar rcs $@ $^
$(O)/fuzz/%: fuzz/%.c $(O)/fuzz/libsymd-fuzz.a
	$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer $(FUZZ_SAN) -MMD -MP -o $@ $< \
	    $(O)/fuzz/libsymd-fuzz.a $(LDLIBS)

fuzz: fuzz-build
	bash fuzz/run.sh $(FUZZ_SECONDS) $(FUZZ_TARGETS)

# bench/crash_costs.c: a report's cost step by step, in-process (bench/run.sh).
$(BUILD)/crash-costs: $(BUILD)/bench/crash_costs.o $(BUILD)/libsymd.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

bench: $(SYMD) $(BUILD)/crash-costs
	bash bench/run.sh

clean:
	rm -rf build symd

-include $(LIB_OBJ:.o=.d) $(TEST_OBJ:.o=.d) $(BUILD)/server/main.d $(FUZZ_OBJ:.o=.d) \
         $(FUZZ_TARGETS:%=$(O)/fuzz/%.d)
