# dkb - build, test and run. `make` builds build/dkb; `make test` and `make run` are the README's
# two commands and install missing Debian packages first (tools/deps.sh).

# `make` builds build/dkb, whatever rules the included plugin fragments bring before `all`.
.DEFAULT_GOAL := all

CUDA    ?= /usr/local/cuda
CC      ?= gcc
NVCC    ?= $(CUDA)/bin/nvcc
BUILD   ?= build

CFLAGS  ?= -O2 -g
CFLAGS  += -std=c11 -Wall -Wextra -D_GNU_SOURCE -I. -I$(BUILD)/gen -I$(CUDA)/include -MMD -MP
# sm_90 SASS for the H200 plus compute_90 PTX so newer GPUs can JIT it.
GENCODE := -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90
NVFLAGS ?= -O3 -lineinfo
NVFLAGS += -std=c++17 $(GENCODE) -I. -Xcompiler -Wall,-Wextra -MMD -MP
# jansson is linked statically (the GPU machine has no jansson headers); libcudart and libcupti are
# found through the rpath. Never -lcuda: dkb must start on a machine without a driver.
LDLIBS  := -L$(CUDA)/lib64 -Wl,-rpath,$(CUDA)/lib64 -Wl,-Bstatic -ljansson -Wl,-Bdynamic \
           -lcupti -lcudart -lcrypto -lstdc++ -ldl -lpthread -lm

LIB_C   := $(wildcard lib/*.c oracles/*.c dispatch/*.c contracts/*.c evidence/*.c harness/*.c)
CMD_C   := $(wildcard cmd/*.c)
CU      := $(wildcard kernels/*.cu)
TEST_C  := $(wildcard tests/*.c)

# The CUDA objects first: nvcc over decode.cu is the build's long pole, so a parallel build starts it
# before the C files, which then compile beside it.
LIB_O   := $(CU:%.cu=$(BUILD)/%.cu.o) $(LIB_C:%.c=$(BUILD)/%.o)
CMD_O   := $(CMD_C:%.c=$(BUILD)/%.o)
TEST_O  := $(TEST_C:%.c=$(BUILD)/%.o)

# --- build-time evidence (levels 1-3): build report and source manifest, generated as C sources by
# tools/gen_provenance.py on every build and rewritten only when their text changes. CHAIN_SPEC lists
# the call chain's files and symbols; a missing file or symbol fails the build.
CHAIN_SPEC ?= tools/chain.json
GEN_C   := $(BUILD)/gen/build_report.c $(BUILD)/gen/source_manifest.c
LIB_O   += $(GEN_C:.c=.o)
# counters.c includes cupti_profiler_host.h, which includes C++'s <string>: tools/cupti_c_shim has an
# empty file of that name so the header compiles as C.
$(BUILD)/harness/counters.o: CFLAGS += -Itools/cupti_c_shim

# Progress: one short line per step ("CC lib/buf.c"); `make V=1` prints every command in full.
ifeq ($(V),1)
  Q   :=
  SAY := @:
else
  Q   := @
  SAY := @printf '  %-5s %s\n'
endif
# The sub-makes of test, run, sanitize and fuzz build with one job per CPU, unless make was given its
# own -j (MAKEFLAGS holds it at recipe time; the sub-make then shares the caller's jobserver).
NPROC   := $(shell nproc 2>/dev/null || echo 1)
JOBS     = $(if $(filter -j%,$(MAKEFLAGS)),,-j$(NPROC))
SUBMAKE  = $(MAKE) --no-print-directory $(JOBS)

# --- backend plugins (include/dkb/backend.h): each plugins/*/plugin.mk appends the libraries it
# builds to PLUGINS; `make plugins` builds them into $(BUILD)/plugins/, each against its upstream package
# fetched by tools/fetch-wheel.sh (version and archive SHA-256 pinned in its plugin.mk). Neither `make`
# nor `make run` needs them; `make test` runs their CPU tests when they are built, and says so when not.
PLUGINS :=
PLUGIN_CHECKS :=
PLUGIN_FLAGS := -O3 -std=c++17 -Xcompiler -fPIC,-Wall -shared -cudart shared $(GENCODE) -Iinclude
-include $(wildcard plugins/*/plugin.mk)
.PHONY: plugins plugin-tests
plugins: deps
	@$(if $(PLUGINS),$(SUBMAKE) $(PLUGINS),echo "no plugins under plugins/")
# Each plugin's CPU tests (PLUGIN_CHECKS: its library through dlopen, its admission, its documents);
# tests/test_plugins.c runs this from `make test` once `make plugins` has built them.
plugin-tests: $(PLUGIN_CHECKS)

.PHONY: all deps test run clean
all: $(BUILD)/dkb

deps:
	@tools/deps.sh

$(BUILD)/gen/version.h: FORCE
	@mkdir -p $(@D)
	@tools/gen-version.sh > $@.tmp && (cmp -s $@.tmp $@ || mv $@.tmp $@); rm -f $@.tmp
FORCE:

$(BUILD)/gen/build_report.c: FORCE
	@mkdir -p $(@D)
	@/usr/bin/python3 tools/gen_provenance.py build-report --out $@ --cc='$(CC)' --nvcc='$(NVCC)' \
	  --cflags='$(CFLAGS)' --nvflags='$(NVFLAGS)' --gencode='$(GENCODE)' --ldlibs='$(LDLIBS)'
# After the kernels compile: every header decode.cu includes is hashed with the chain's files.
$(BUILD)/gen/source_manifest.c: $(BUILD)/kernels/decode.cu.o FORCE
	@mkdir -p $(@D)
	@/usr/bin/python3 tools/gen_provenance.py source-manifest --spec $(CHAIN_SPEC) --deps $(BUILD)/kernels/decode.cu.d --out $@
$(BUILD)/gen/%.o: $(BUILD)/gen/%.c
	$(SAY) CC $<
	$(Q)$(CC) $(CFLAGS) -c $< -o $@
# A fake libnvidia-ml.so.1 so tests can drive harness/nvml.c on machines without a driver.
$(BUILD)/tests/fake-nvml/libnvidia-ml.so.1: tests/data/fake_nvml.c
	@mkdir -p $(@D)
	$(SAY) CC $@
	$(Q)$(CC) -std=c11 -Wall -Wextra -O2 -shared -fPIC -o $@ $<
$(BUILD)/dkb_tests: $(BUILD)/tests/fake-nvml/libnvidia-ml.so.1
# dkb's test plugin (tests/plugin/test_plugin.c), once per variant, each breaking one rule of the ABI.
TEST_PLUGIN_VARIANTS := ok abi2 noentry dupname admitfail planfail badws badlse badjson badkernel merge unreported
TEST_PLUGINS := $(TEST_PLUGIN_VARIANTS:%=$(BUILD)/tests/plugins/libtest_%.so)
TEST_PLUGIN_FLAGS := -std=c11 -Wall -Wextra -O2 -shared -fPIC -fvisibility=hidden -I.
$(BUILD)/tests/plugins/provenance.c: tests/plugin/test_plugin.c tests/plugin/chain.json tools/gen_provenance.py FORCE
	@mkdir -p $(@D)
	@$(CC) $(TEST_PLUGIN_FLAGS) -MM -MT $@ tests/plugin/test_plugin.c > $(@D)/test_plugin.d
	@/usr/bin/python3 tools/gen_provenance.py plugin --spec tests/plugin/chain.json --deps $(@D)/test_plugin.d \
	  --compiler='$(CC)' --flags='$(TEST_PLUGIN_FLAGS)' --prefix test_plugin --out $@
$(BUILD)/tests/plugins/libtest_%.so: tests/plugin/test_plugin.c $(BUILD)/tests/plugins/provenance.c include/dkb/backend.h
	$(CC) $(TEST_PLUGIN_FLAGS) -DTEST_PLUGIN_VARIANT=V_$(shell echo $* | tr a-z A-Z) -o $@ $< $(BUILD)/tests/plugins/provenance.c
$(BUILD)/dkb_tests: $(TEST_PLUGINS)
# --- end of build-time evidence

# --- dkb trace: the injection library (inject/) runs inside the traced program, so it is built apart
# from libdkb.a, with the plain compiler even under `make sanitize` (an ASan library cannot load into a
# program that is not), and links only libcupti, libc, libdl and libpthread. The example programs are
# what tests/test_trace.c and tools/trace-examples.sh run under `dkb trace`.
INJECT_CC    ?= gcc
INJECT_FLAGS := -std=c11 -Wall -Wextra -O2 -g -D_GNU_SOURCE -fPIC -fvisibility=hidden -I. -I$(CUDA)/include -MMD -MP
INJECT_O     := $(patsubst %.c,$(BUILD)/%.o,$(wildcard inject/*.c))
$(BUILD)/inject/%.o: inject/%.c
	@mkdir -p $(@D)
	$(INJECT_CC) $(INJECT_FLAGS) -c $< -o $@
$(BUILD)/libdkb_inject.so: $(INJECT_O)
	$(INJECT_CC) -shared -o $@ $^ -L$(CUDA)/lib64 -Wl,-rpath,$(CUDA)/lib64 -lcupti -ldl -lpthread -Wl,--no-undefined
$(BUILD)/examples/nvtx_ranges: examples/c/nvtx_ranges.c
	@mkdir -p $(@D)
	$(INJECT_CC) -std=c11 -Wall -Wextra -O2 -D_GNU_SOURCE -I$(CUDA)/include -o $@ $< -ldl -lpthread
# The GPU test program of the injection library: threads, streams, a range left open, exit() in a range.
$(BUILD)/examples/inject_test: examples/cuda/inject_test.cu
	@mkdir -p $(@D)
	$(NVCC) -O2 -std=c++17 $(GENCODE) -Xcompiler -Wall,-Wextra -o $@ $< -Xlinker -rpath,$(CUDA)/lib64 -lpthread
# The library's own pieces the test binary checks directly (SHA-256 against libcrypto), and its module
# and loader-map records from a driver linked with its objects, over a cubin nvcc builds.
TEST_O += $(BUILD)/inject/inject_sha256.o
$(BUILD)/tests/inject_selftest: tests/data/trace/inject_selftest.c $(INJECT_O)
	@mkdir -p $(@D)
	$(INJECT_CC) -std=c11 -Wall -Wextra -O2 -D_GNU_SOURCE -I. -o $@ $< $(INJECT_O) -L$(CUDA)/lib64 -Wl,-rpath,$(CUDA)/lib64 -lcupti -ldl -lpthread
$(BUILD)/tests/tiny.cubin: tests/data/trace/tiny.cu
	@mkdir -p $(@D)
	$(NVCC) -cubin -arch=sm_90 -o $@ $<
TRACE_TARGETS := $(BUILD)/libdkb_inject.so $(BUILD)/examples/nvtx_ranges $(BUILD)/examples/inject_test \
                 $(BUILD)/tests/inject_selftest $(BUILD)/tests/tiny.cubin
$(BUILD)/dkb: $(BUILD)/libdkb_inject.so
$(BUILD)/dkb_tests: $(TRACE_TARGETS)
.PHONY: examples
examples: $(TRACE_TARGETS)

$(BUILD)/%.o: %.c | $(BUILD)/gen/version.h
	@mkdir -p $(@D)
	$(SAY) CC $<
	$(Q)$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/cmd/main.o: $(BUILD)/gen/version.h

# nvcc is silent while it works, and over decode.cu (its many kernel instantiations) that is minutes:
# say so before it starts and how long it took.
NVCC_NOTE_kernels/decode.cu := (a minute or two; the C files compile beside it)
$(BUILD)/%.cu.o: %.cu
	@mkdir -p $(@D)
	$(SAY) NVCC "$<$(if $(NVCC_NOTE_$<), $(NVCC_NOTE_$<))"
	$(Q)t0=$$(date +%s); $(NVCC) $(NVFLAGS) -c $< -o $@ $(if $(NVCC_NOTE_$<),&& printf '  %-5s %s\n' NVCC "$< done in $$(($$(date +%s) - t0)) s")

$(BUILD)/libdkb.a: $(LIB_O)
	@rm -f $@
	$(SAY) AR $@
	$(Q)ar rcs $@ $^

# libdkb.a first among the prerequisites, so a parallel build reaches nvcc first (see LIB_O).
$(BUILD)/dkb: $(BUILD)/libdkb.a $(CMD_O)
	$(SAY) LINK $@
	$(Q)$(CC) -o $@ $(CMD_O) $(BUILD)/libdkb.a $(LDLIBS)

$(BUILD)/dkb_tests: $(BUILD)/libdkb.a $(TEST_O)
	$(SAY) LINK $@
	$(Q)$(CC) -o $@ $(TEST_O) $(BUILD)/libdkb.a $(LDLIBS) -lcmocka

# dkb whose Nth heap allocation fails (libfiu), for tests/failalloc.py: cmd/main.c again, its main renamed
# for the driver's.
$(BUILD)/failalloc/main.o: cmd/main.c | $(BUILD)/gen/version.h
	@mkdir -p $(@D)
	$(SAY) CC "$< (main renamed dkb_main)"
	$(Q)$(CC) $(CFLAGS) -Dmain=dkb_main -c $< -o $@
$(BUILD)/dkb_failalloc: $(BUILD)/tests/failalloc/driver.o $(BUILD)/failalloc/main.o $(filter-out $(BUILD)/cmd/main.o,$(CMD_O)) $(BUILD)/libdkb.a
	$(SAY) LINK $@
	$(Q)$(CC) -o $@ $^ $(LDLIBS) -lfiu

# AddressSanitizer + UndefinedBehaviorSanitizer: everything built again in build-asan, then the whole
# suite, every dkb it starts included (tools/sanitize.sh). Not part of `make test`: it doubles the build.
SAN_CC := $(CC) -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
SAN_BUILD = @$(SUBMAKE) BUILD=build-asan CC="$(SAN_CC)" build-asan/dkb build-asan/dkb_tests
.PHONY: sanitize
sanitize: deps
	$(SAN_BUILD)
	@tools/sanitize.sh build-asan

# libFuzzer under ASan + UBSan over dkb's readers of untrusted JSON (tests/fuzz: decode fixture, bundle,
# contract fixture, bench result, bench matrix), FUZZ_SECONDS each, or FUZZ_RUNS inputs from a fixed seed
# (CI), seeded from fixtures/ (tools/fuzz.sh). Not part of `make test`.
FUZZ_SECONDS ?= 60
FUZZ_RUNS ?=
FUZZ_CC := clang -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined
FUZZ_T  := fixture bundle contract benchrun matrix
.PHONY: fuzz
fuzz:
	@tools/deps.sh fuzz
	@$(SUBMAKE) BUILD=build-fuzz CC="$(FUZZ_CC)" build-fuzz/libdkb.a
	@for t in $(FUZZ_T); do clang -std=c11 -D_GNU_SOURCE -O1 -g -fsanitize=fuzzer,address,undefined \
	  -fno-sanitize-recover=undefined -I. -Ibuild-fuzz/gen -I$(CUDA)/include tests/fuzz/$$t.c build-fuzz/libdkb.a \
	  $(LDLIBS) -o build-fuzz/fuzz-$$t || exit 1; done
	@FUZZ_RUNS=$(FUZZ_RUNS) tools/fuzz.sh $(FUZZ_SECONDS) $(FUZZ_T)

# What tools/gpu-smoke.sh --asan needs on a GPU machine: the ASan build and the two sanitizer runtimes.
.PHONY: build-asan/carry
build-asan/carry:
	$(SAN_BUILD)
	@mkdir -p $@
	cp build-asan/dkb build-asan/dkb_tests $$($(CC) -print-file-name=libasan.so.8) $$($(CC) -print-file-name=libubsan.so.1) $@/

# deps first (a prerequisite, so even `make -j test` installs before it compiles), then one parallel
# sub-make; the test runner comes last, so the output ends with cmocka's summary line.
test: deps
	@$(SUBMAKE) $(BUILD)/dkb $(BUILD)/dkb_tests $(BUILD)/dkb_failalloc $(BUILD)/read-patterns $(BUILD)/read-shapes
	@$(BUILD)/dkb_tests

run: deps
	@$(SUBMAKE) $(BUILD)/dkb
	$(BUILD)/dkb run fixtures/decode/default.json -o out

# Standalone probes of the GPU's read rate under dkb's access patterns and CTA shapes (docs/kernels.md,
# "Read patterns", "Read shapes"): not part of dkb; `make test` compiles them so they keep building.
$(BUILD)/read-patterns: tools/read-patterns.cu
	@mkdir -p $(@D)
	$(SAY) NVCC $<
	$(Q)$(NVCC) -O3 -std=c++17 $(GENCODE) -o $@ $<
# read-shapes times the roofline's own read beside its shapes
$(BUILD)/read-shapes: tools/read-shapes.cu $(BUILD)/kernels/roofline.cu.o
	@mkdir -p $(@D)
	$(SAY) NVCC $<
	$(Q)$(NVCC) -O3 -std=c++17 $(GENCODE) -I. -o $@ $< $(BUILD)/kernels/roofline.cu.o

clean:
	rm -rf $(BUILD)

-include $(LIB_O:.o=.d) $(CMD_O:.o=.d) $(TEST_O:.o=.d) $(INJECT_O:.o=.d) $(BUILD)/failalloc/main.d $(BUILD)/tests/failalloc/driver.d
