/* adapter.h - what the FlashInfer adapter's files share: adapter.cu (the C ABI of include/dkb/backend.h,
 * the per-call state and the plan record), admit.cu (the admission rule both backends apply) and
 * page_table.cu (the page table FlashInfer is given for each dkb layout). No FlashInfer header: its
 * templates live in inst/ behind fi.h. */
#ifndef DKB_PLUGIN_FLASHINFER_ADAPTER_H
#define DKB_PLUGIN_FLASHINFER_ADAPTER_H

#include "dkb/backend.h"
#include "plugins/flashinfer/fi.h"

#include <cstdio>
#include <string>

namespace dkbfi {

/* Sets where to the formatted message; returns DKB_BACKEND_ERROR (adapter.cu). */
int fail(std::string &where, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "fp16", "bf16", "fp32" or "unknown": an ABI dtype as reasons and the plan record name it. */
const char *dtype_name(int t);

/* ---- admission (admit.cu) ---- */

/* The compiled instance of a path, dtype, head dim and sliding window, or NULL. */
const Instance *find_instance(int path, int dtype, int head_dim, bool swa);
/* Every check in the factor order of backend.h; every reason is true of the instances compiled. */
void admit_call(int path, const struct dkb_call *c, dkb_reasons &r);

/* ---- the page table FlashInfer is given (page_table.cu) ---- */

/* The page-table view each dkb layout gets (csr_build): what FlashInfer's paged_kv_t is told. */
enum Table {
  kCsrDirect,          /* dkb's CSR arrays, used as they are */
  kCsrRebuilt,         /* dkb's CSR, rebuilt with exactly the pages kv_len needs */
  kDenseToCsr,         /* a dense block table, converted */
  kContiguousTokens,   /* contiguous NHD: pages of one token, page id = row * T_cap + key */
  kContiguousRows,     /* contiguous HND: one page of T_cap tokens per request, page id = row */
  kRaggedTokens        /* ragged NHD: pages of one token, page id = indptr[b] + key */
};
inline constexpr const char *kTableNames[] = {"csr_direct", "csr_rebuilt", "dense_to_csr", "contiguous_nhd_as_pages_of_1",
                                   "contiguous_hnd_as_one_page_per_row", "ragged_nhd_as_pages_of_1"};


struct Csr {
  int table;       /* enum Table */
  bool direct;     /* the call's own device arrays serve (kCsrDirect) */
};

/* Fills p's page size, layout and CSR (host) from dkb's call; request b gets exactly the pages its
 * kv_len[b] keys need, the last one holding kv_len[b] - (pages - 1) * page_size of them. */
int csr_build(const struct dkb_call *c, Problem &p, Csr &t, std::string &err);

}  // namespace dkbfi

#endif
