# plugins/example/plugin.mk - the example backend plugin (plugins/example/example.cu): one kernel of dkb's
# own, no upstream package, built as a plugin a kernel engineer can copy. `make plugins` builds
# $(BUILD)/plugins/libdkb_example.so; its CPU checks are tests/test_plugins.c's.
EX_OUT := $(BUILD)/plugins/example
EX_LIB := $(BUILD)/plugins/libdkb_example.so
EX_NVFLAGS := -std=c++17 -O3 $(GENCODE) -Xcompiler -fPIC,-fvisibility=hidden,-Wall,-Wextra -I.

PLUGINS += $(EX_LIB)

$(EX_OUT)/example.o: plugins/example/example.cu include/dkb/backend.h
	@mkdir -p $(@D)
	$(NVCC) $(EX_NVFLAGS) -MD -MP -MF $(@:.o=.d) -c $< -o $@
$(EX_OUT)/provenance.c: $(EX_OUT)/example.o plugins/example/chain.json FORCE
	@/usr/bin/python3 tools/gen_provenance.py plugin --spec plugins/example/chain.json --deps $(EX_OUT)/example.d \
	  --compiler='$(NVCC)' --flags='$(EX_NVFLAGS)' --prefix dkb_example --out $@
$(EX_OUT)/provenance.o: $(EX_OUT)/provenance.c
	$(CC) -std=c11 -O2 -fPIC -fvisibility=hidden -c $< -o $@
$(EX_LIB): $(EX_OUT)/example.o $(EX_OUT)/provenance.o
	$(NVCC) $(GENCODE) -shared -cudart shared -Xlinker -rpath,$(CUDA)/lib64 -o $@ $^

-include $(EX_OUT)/example.d
