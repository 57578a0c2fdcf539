# plugins/flashinfer/plugin.mk - FlashInfer's batch decode as a dkb backend plugin (plugins/flashinfer/README.md):
# $(BUILD)/plugins/libdkb_flashinfer.so, built against the flashinfer-python wheel that tools/fetch-wheel.sh
# downloads (version and archive SHA-256 pinned here), with the flags FlashInfer's JIT uses for these modules.
# Included by the top Makefile; `make plugins` builds it, `make flashinfer-test` runs its CPU tests.

FI_PACKAGE := flashinfer-python
FI_VERSION := 0.7.2.post1
FI_SHA256  := bfdc18b9e1e4d8d0730fe4343dc0e284cd0c160086de80f99888bc4867922d49
FI_ROOT    := $(BUILD)/plugins/upstream/flashinfer-python
FI_DATA    := $(FI_ROOT)/flashinfer/data
FI_RECORD  := $(FI_ROOT)/flashinfer_python-$(FI_VERSION).dist-info/RECORD
FI_OUT     := $(BUILD)/plugins/flashinfer
FI_LIB     := $(BUILD)/plugins/libdkb_flashinfer.so
FI_TEST    := $(FI_OUT)/test_plugin

# The adapter (its ABI, admission and page table: host code) and one translation unit per (path, dtype,
# head dim), so `make -j` compiles them side by side.
FI_SRC     := plugins/flashinfer/adapter.cu plugins/flashinfer/admit.cu plugins/flashinfer/page_table.cu $(sort $(wildcard plugins/flashinfer/inst/*.cu))
FI_O       := $(FI_SRC:plugins/flashinfer/%.cu=$(FI_OUT)/%.o)

# jit/core.py gen_jit_spec and jit/cpp_ext.py build_cuda_cflags; SM 9.x gets sm_90a
# (compilation_context.py); the wheel's CCCL (3.6.0: fastdiv.cuh needs cuda::fast_mod_div) with -I,
# ahead of the toolkit's. Hidden visibility: the library exports dkb_plugin_entry_v1 only.
FI_ARCH    := -gencode=arch=compute_90a,code=sm_90a
FI_NVFLAGS := -std=c++17 -O3 -use_fast_math -DNDEBUG -DFLASHINFER_ENABLE_F16 -DFLASHINFER_ENABLE_BF16 \
              -DFLASHINFER_ENABLE_FP8_E4M3 -DFLASHINFER_ENABLE_FP8_E5M2 -DFLASHINFER_ENABLE_FP8_E8M0 \
              -DFLASHINFER_ENABLE_FP4_E2M1 --expt-relaxed-constexpr -static-global-template-stub=false \
              -Xfatbin=-compress-all --compress-mode=size $(FI_ARCH) -Xcompiler -fPIC,-fvisibility=hidden,-Wall \
              -I$(FI_DATA)/cccl/cub -I$(FI_DATA)/cccl/libcudacxx/include -I$(FI_DATA)/cccl/thrust \
              -isystem $(FI_DATA)/include -I. -Iinclude
FI_LDFLAGS := -shared -cudart shared -Xlinker -rpath,$(CUDA)/lib64 \
              -Xlinker --version-script=plugins/flashinfer/exports.map

PLUGINS += $(FI_LIB)
PLUGIN_CHECKS += flashinfer-test

# The wheel, fetched and checked on every build (a no-op once its .pin matches).
.PHONY: flashinfer-upstream
flashinfer-upstream:
	@tools/fetch-wheel.sh $(FI_PACKAGE) $(FI_VERSION) $(FI_SHA256) $(FI_ROOT)

$(FI_OUT)/%.o: plugins/flashinfer/%.cu | flashinfer-upstream
	@mkdir -p $(@D)
	$(NVCC) $(FI_NVFLAGS) -MD -MP -MF $(@:.o=.d) -c $< -o $@

# Both documents (source manifest: every repository and wheel file the compiler read, each wheel file
# checked against RECORD; build report), rewritten only when their text changes.
$(FI_OUT)/provenance.c: $(FI_O) plugins/flashinfer/chain.json FORCE
	@/usr/bin/python3 tools/gen_provenance.py plugin --spec plugins/flashinfer/chain.json --deps $(FI_O:.o=.d) \
	  --compiler='$(NVCC)' --flags='$(FI_NVFLAGS) $(FI_LDFLAGS)' --upstream-root $(FI_ROOT) --record $(FI_RECORD) \
	  --package $(FI_PACKAGE) --package-version $(FI_VERSION) --archive "$$(cat $(FI_ROOT)/.archive)" \
	  --archive-sha256 $(FI_SHA256) --out $@
$(FI_OUT)/provenance.o: $(FI_OUT)/provenance.c
	$(CC) -std=c11 -O2 -fPIC -fvisibility=hidden -c $< -o $@

$(FI_LIB): $(FI_O) $(FI_OUT)/provenance.o plugins/flashinfer/exports.map
	$(NVCC) $(FI_ARCH) $(FI_LDFLAGS) -o $@ $(filter %.o,$^)

# Tests: the library through dlopen (test_plugin.c; its GPU cases, test_gpu.c, skip without an sm_90
# device), then its documents (check_manifest.py). No GPU is needed.
$(FI_TEST): plugins/flashinfer/test_plugin.c plugins/flashinfer/test_gpu.c include/dkb/backend.h
	@mkdir -p $(@D)
	$(CC) -std=c11 -Wall -Wextra -O2 -Iinclude -I$(CUDA)/include -o $@ $(filter %.c,$^) \
	  -L$(CUDA)/lib64 -Wl,-rpath,$(CUDA)/lib64 -lcudart -lcmocka -ldl -lm
.PHONY: flashinfer-test
flashinfer-test: $(FI_LIB) $(FI_TEST)
	$(FI_TEST) $(FI_LIB) $(FI_OUT)/test
	/usr/bin/python3 plugins/flashinfer/check_manifest.py --dir $(FI_OUT)/test --upstream-root $(FI_ROOT) \
	  --archive "$$(cat $(FI_ROOT)/.archive)"

-include $(FI_O:.o=.d)
