# dkb - build, test and run. `make` builds build/dkb; `make test` and `make run` are the README's
# two commands and install missing Debian packages first (tools/deps.sh).

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

LIB_C   := $(wildcard harness/*.c oracles/*.c evidence/*.c)
CMD_C   := $(wildcard cmd/*.c)
CU      := $(wildcard kernels/*.cu)
TEST_C  := $(wildcard tests/*.c)

LIB_O   := $(LIB_C:%.c=$(BUILD)/%.o) $(CU:%.cu=$(BUILD)/%.cu.o)
CMD_O   := $(CMD_C:%.c=$(BUILD)/%.o)
TEST_O  := $(TEST_C:%.c=$(BUILD)/%.o)

.PHONY: all deps test run clean
all: $(BUILD)/dkb

deps:
	@tools/deps.sh

$(BUILD)/gen/version.h: FORCE
	@mkdir -p $(@D)
	@tools/gen-version.sh > $@.tmp && (cmp -s $@.tmp $@ || mv $@.tmp $@); rm -f $@.tmp
FORCE:

$(BUILD)/%.o: %.c | $(BUILD)/gen/version.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/cmd/main.o: $(BUILD)/gen/version.h

$(BUILD)/%.cu.o: %.cu
	@mkdir -p $(@D)
	$(NVCC) $(NVFLAGS) -c $< -o $@

$(BUILD)/libdkb.a: $(LIB_O)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/dkb: $(CMD_O) $(BUILD)/libdkb.a
	$(CC) -o $@ $(CMD_O) $(BUILD)/libdkb.a $(LDLIBS)

$(BUILD)/dkb_tests: $(TEST_O) $(BUILD)/libdkb.a
	$(CC) -o $@ $(TEST_O) $(BUILD)/libdkb.a $(LDLIBS) -lcmocka

# The test runner ends with cmocka's summary line.
test: deps
	@$(MAKE) --no-print-directory $(BUILD)/dkb $(BUILD)/dkb_tests
	@$(BUILD)/dkb_tests

run: deps
	@$(MAKE) --no-print-directory $(BUILD)/dkb
	$(BUILD)/dkb run fixtures/decode/default.json -o out/

clean:
	rm -rf $(BUILD)

-include $(LIB_O:.o=.d) $(CMD_O:.o=.d) $(TEST_O:.o=.d)
