/* test_cudnn.h - what the cuDNN plugin's test program shares between its files: test_cudnn.c (the library
 * through dlopen, its table, admission and documents) and test_gpu.c (one call per K/V addressing mode on
 * a GPU). */
#ifndef DKB_PLUGIN_CUDNN_TEST_H
#define DKB_PLUGIN_CUDNN_TEST_H

#include "dkb/backend.h"

/* The kernel family plan declares (plugin.h) and the binary chain node names. */
#define KERNEL_PREFIX "cudnn_generated_fort_native_sdpa_sm"
#define COMBINE_PREFIX "_ZN5cudnn6fusion21lean_reduction_kernel"

extern const struct dkb_backend *be;  /* the library's one backend, loaded before the tests */
/* An eligible call: the README's B=4 GQA 32/8 bf16 decode on a contiguous NHD cache, H200. */
struct dkb_call base_call(void);
/* be's admission of c: the number of reasons written to r (at most cap). */
int admit(const struct dkb_call *c, struct dkb_reason *r, int cap);

/* test_gpu.c, each skipped with the reason where no CUDA device is */
void gpu_contiguous_nhd_strided(void **s);
void gpu_contiguous_hnd_remapped_rows(void **s);
void gpu_ragged_nhd(void **s);
void gpu_paged_nhd_csr(void **s);
void gpu_paged_nhd_window(void **s);
void gpu_paged_hnd_dense(void **s);

#endif
