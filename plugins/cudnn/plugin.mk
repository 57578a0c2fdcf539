# plugins/cudnn/plugin.mk - cuDNN's SDPA forward as the dkb backend plugin $(BUILD)/plugins/libdkb_cudnn.so
# (plugins/cudnn/README.md), included by the top Makefile. Built against the C++ headers of the PyPI wheel
# nvidia-cudnn-frontend (pinned below, fetched by tools/fetch-wheel.sh, never committed) and the cuDNN 9
# headers and libraries of the CUDA toolkit. `make plugins` builds the library and its CPU test
# $(BUILD)/plugins/cudnn_test, which `make cudnn-test` (one of PLUGIN_CHECKS) runs from the repository root.
#
# libcudnn is linked with the toolkit's folder as RUNPATH, the folder dkb itself uses for libcudart: a
# machine with cuDNN there loads that one; LD_LIBRARY_PATH comes first, so on the H200 (no cuDNN in the
# toolkit, 9.14 in /usr/lib) LD_LIBRARY_PATH=<torch venv>/nvidia/cudnn/lib loads the 9.19 this was built
# against. The loader map records which one loaded. Never -lcuda: -z defs fails the link if anything needs it.

CUDNN_FE_VERSION := 1.32.0
CUDNN_FE_SHA256  := 8b354a8e550c083eb247f1eb39a7d69a4a269075f5a01e4fcbd2531680b17239
# The wheel has platform tags (its Python half is compiled); the headers are the same in every build of it,
# and these options make every machine ask pip for the same file, the one the pin names:
# nvidia_cudnn_frontend-1.32.0-cp312-cp312-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl
CUDNN_FE_PIP := --only-binary=:all: --implementation cp --python-version 3.12 --abi cp312 \
                --platform manylinux_2_28_x86_64
CUDNN_FE_DIR := $(BUILD)/plugins/upstream/nvidia-cudnn-frontend-$(CUDNN_FE_VERSION)
CUDNN_FE_RECORD := $(CUDNN_FE_DIR)/nvidia_cudnn_frontend-$(CUDNN_FE_VERSION).dist-info/RECORD

CUDNN_INC ?= $(CUDA)/include
CUDNN_LIB ?= $(CUDA)/lib64
CUDNN_B   := $(BUILD)/plugins/cudnn
CUDNN_SO  := $(BUILD)/plugins/libdkb_cudnn.so
CUDNN_TEST := $(BUILD)/plugins/cudnn_test
CUDNN_OBJ := $(CUDNN_B)/plugin.o $(CUDNN_B)/sdpa.o

# -MD, not -MMD: the .d lists every header the compiler read, which gen_provenance checks against RECORD.
# The frontend comes in with -isystem: its warnings are not the adapter's.
CUDNN_CXXFLAGS := $(PLUGIN_FLAGS) -I. -isystem $(CUDNN_FE_DIR)/include -I$(CUDNN_INC) \
                  -Xcompiler -Wextra,-fvisibility=hidden,-fvisibility-inlines-hidden
# The version script exports the entry point alone: -fvisibility=hidden does not reach std:: templates.
CUDNN_LDFLAGS  := -L$(CUDNN_LIB) -lcudnn -Xlinker -rpath,$(CUDNN_LIB) -Xlinker -z,defs \
                  -Xlinker --version-script=plugins/cudnn/exports.map

PLUGINS += $(CUDNN_SO) $(CUDNN_TEST)
PLUGIN_CHECKS += cudnn-test
.PHONY: cudnn-test
cudnn-test: $(CUDNN_SO) $(CUDNN_TEST)
	$(CUDNN_TEST)

# fetch-wheel.sh does nothing when DEST/.pin already names this pin; touch keeps make from asking again.
$(CUDNN_FE_DIR)/.pin: plugins/cudnn/plugin.mk tools/fetch-wheel.sh
	@tools/fetch-wheel.sh nvidia-cudnn-frontend $(CUDNN_FE_VERSION) $(CUDNN_FE_SHA256) $(CUDNN_FE_DIR) $(CUDNN_FE_PIP)
	@touch $@

# Order-only on the wheel: a new pin unpacks new headers, and the .d files make their objects rebuild.
$(CUDNN_B)/%.o: plugins/cudnn/%.cpp | $(CUDNN_FE_DIR)/.pin
	@mkdir -p $(@D)
	$(NVCC) $(CUDNN_CXXFLAGS) -MD -MP -MF $(@:.o=.d) -c $< -o $@

# Both documents of the plugin, regenerated on every build (rewritten only when their text changes).
$(CUDNN_B)/provenance.c: $(CUDNN_OBJ) plugins/cudnn/chain.json FORCE
	@cat $(CUDNN_OBJ:.o=.d) > $(CUDNN_B)/all.d
	@/usr/bin/python3 tools/gen_provenance.py plugin --spec plugins/cudnn/chain.json --deps $(CUDNN_B)/all.d \
	  --compiler='$(NVCC)' --flags='$(CUDNN_CXXFLAGS) $(CUDNN_LDFLAGS)' --upstream-root $(CUDNN_FE_DIR) \
	  --record $(CUDNN_FE_RECORD) --package nvidia-cudnn-frontend --package-version $(CUDNN_FE_VERSION) \
	  --archive "$$(cat $(CUDNN_FE_DIR)/.archive)" --archive-sha256 $(CUDNN_FE_SHA256) --binary-dir $(CUDNN_LIB) \
	  --prefix dkb_cudnn --out $@
$(CUDNN_B)/provenance.o: $(CUDNN_B)/provenance.c
	$(CC) -std=c11 -O2 -fPIC -fvisibility=hidden -c $< -o $@

$(CUDNN_SO): $(CUDNN_OBJ) $(CUDNN_B)/provenance.o plugins/cudnn/exports.map
	$(NVCC) $(PLUGIN_FLAGS) -o $@ $(filter %.o,$^) $(CUDNN_LDFLAGS)

# The CPU test (cmocka): loads the library with dlopen, checks its table, admission, both documents, and
# with a GPU (test_gpu.c) one small call per K/V addressing mode against a float64 reference.
$(CUDNN_TEST): plugins/cudnn/test_cudnn.c plugins/cudnn/test_gpu.c plugins/cudnn/test_cudnn.h include/dkb/backend.h plugins/cudnn/plugin.mk
	@mkdir -p $(@D)
	$(CC) -std=c11 -O2 -g -Wall -Wextra -D_GNU_SOURCE -I. -Iinclude -I$(CUDA)/include \
	  -DCUDNN_TEST_SO='"$(CUDNN_SO)"' -DCUDNN_TEST_UPSTREAM='"$(CUDNN_FE_DIR)"' \
	  -DCUDNN_TEST_RECORD='"$(CUDNN_FE_RECORD)"' -DCUDNN_TEST_PIN='"$(CUDNN_FE_SHA256)"' \
	  -DCUDNN_TEST_FE_VERSION='"$(CUDNN_FE_VERSION)"' $(filter %.c,$^) -o $@ \
	  -lcmocka -Wl,-Bstatic -ljansson -Wl,-Bdynamic -lcrypto -L$(CUDA)/lib64 -Wl,-rpath,$(CUDA)/lib64 -lcudart -ldl -lm

-include $(CUDNN_OBJ:.o=.d)
