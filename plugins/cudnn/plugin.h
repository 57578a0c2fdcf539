/* plugin.h - what the two halves of the cuDNN plugin share: plugin.cpp holds the table, the entry
 * point, admission and the error slots; sdpa.cpp builds and runs the cuDNN frontend graph. Nothing
 * here is exported: the library's only visible symbol is DKB_PLUGIN_ENTRY_NAME. */
#ifndef DKB_CUDNN_PLUGIN_H
#define DKB_CUDNN_PLUGIN_H

#include "dkb/backend.h"

#include <string>

namespace cudnn_plugin {

/* The kernel family of cuDNN's runtime-compiled SDPA forward (the "fort native SDPA" engine): its
 * kernels are generated at plan time and named cudnn_generated_fort_native_sdpa_sm<ISA>_flash_fprop_...
 * where ISA is the instruction set the engine generated for (sm80 for one-token decode and paged
 * caches even on Hopper, the engine library says; sm90 or sm100 otherwise). chain.json's binary
 * producer node carries the same string as its symbol. */
constexpr const char *KERNEL_PREFIX = "cudnn_generated_fort_native_sdpa_sm";
/* The merge kernel of the engine's lean-attention split: when the engine splits K/V it runs after the
 * SDPA kernel and reduces the partial rows (seen on the H200 for every contiguous and paged decode
 * fixture, not for ragged ones). The engine decides at plan build, and the frontend does not say which,
 * so the plan declares it optional. Its symbol is C++-mangled: cudnn::fusion::lean_reduction_kernel<...>. */
constexpr const char *COMBINE_PREFIX = "_ZN5cudnn6fusion21lean_reduction_kernel";

/* The error slot for state NULL (admit, plan before a state exists), one per thread. */
void set_thread_error(const std::string &msg);
const char *thread_last_error();

/* Every failing entry point returns through here: msg goes to slot (or the thread's slot when slot is
 * NULL) and the return value is DKB_BACKEND_ERROR. */
int fail(std::string *slot, const std::string &msg);

/* The cuDNN version as "9.19.0" from cudnnGetVersion()'s 91900 (major*10000 + minor*100 + patch). */
std::string version_text(size_t v);

/* sdpa.cpp: the call's plan, setup, launch and release (include/dkb/backend.h). */
int sdpa_plan(const struct dkb_backend *self, const struct dkb_call *c, struct dkb_plan *plan, void **state);
int sdpa_setup(void *state, const struct dkb_call *c, void *const *ws, void *stream);
int sdpa_launch(void *state, const struct dkb_call *c, void *const *ws, void *stream);
void sdpa_release(void *state);
const char *sdpa_last_error(void *state);

}  // namespace cudnn_plugin

#endif
