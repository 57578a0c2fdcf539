/* page_table.cu - the page table FlashInfer is given (adapter.h, csr_build): every dkb layout as
 * FlashInfer's paged_kv_t sees it, a CSR over pages (contiguous and ragged caches as pages of one token,
 * or one page a cache row), each request given exactly the pages its keys need. Host code only. */
#include "plugins/flashinfer/adapter.h"

#include <cinttypes>
#include <string>

namespace dkbfi {

int csr_build(const struct dkb_call *c, Problem &p, Csr &t, std::string &err) {
  const int B = c->B;
  if (!c->kv_len) return fail(err, "plan: kv_len is NULL");
  p.indptr.assign(1, 0);
  p.indices.clear();
  p.last_page_len.clear();
  auto push = [&](int64_t P, int64_t kv, auto page_of) {
    const int64_t n = (kv + P - 1) / P;
    for (int64_t j = 0; j < n; j++) p.indices.push_back((int32_t)page_of(j));
    p.indptr.push_back((int32_t)p.indices.size());
    p.last_page_len.push_back((int32_t)(kv - (n - 1) * P));
  };
  for (int b = 0; b < B; b++)
    if (c->kv_len[b] < 1) return fail(err, "plan: kv_len[%d]=%" PRId64 " (at least 1 expected)", b, c->kv_len[b]);
  p.kv_layout = (c->layout == DKB_ABI_PAGED_HND || c->layout == DKB_ABI_CONTIGUOUS_HND) ? kHND : kNHD;
  t.direct = false;
  switch (c->layout) {
  case DKB_ABI_PAGED_NHD:
  case DKB_ABI_PAGED_HND: {
    const int64_t P = c->page_size;
    p.page_size = (uint32_t)P;
    if (c->table == DKB_ABI_TABLE_CSR) {
      if (!c->page_indptr || !c->page_indices) return fail(err, "plan: page_indptr or page_indices is NULL");
      bool same = c->page_indptr[0] == 0 && c->last_page_len; /* without last_page_len: rebuilt */
      for (int b = 0; b < B; b++) {
        const int64_t kv = c->kv_len[b], n = (kv + P - 1) / P;
        const int64_t lo = c->page_indptr[b], have = (int64_t)c->page_indptr[b + 1] - lo;
        if (have < n)
          return fail(err, "plan: request %d has %" PRId64 " pages, kv_len=%" PRId64 " needs %" PRId64, b, have, kv, n);
        for (int64_t j = 0; j < n; j++) {
          const int64_t id = c->page_indices[lo + j];
          if (id < 0 || id >= c->num_pages)
            return fail(err, "plan: request %d page %" PRId64 " is %" PRId64 " (pool of %" PRId64 ")", b, j, id,
                        c->num_pages);
        }
        push(P, kv, [&](int64_t j) { return c->page_indices[lo + j]; });
        same = same && have == n && c->last_page_len[b] == p.last_page_len[b];
      }
      t.table = same ? kCsrDirect : kCsrRebuilt;
      t.direct = same;
    } else {
      if (!c->block_table || !c->cache_batch_idx) return fail(err, "plan: block_table or cache_batch_idx is NULL");
      for (int b = 0; b < B; b++) {
        const int64_t kv = c->kv_len[b], n = (kv + P - 1) / P, row = c->cache_batch_idx[b];
        if (row < 0 || row >= c->cache_rows)
          return fail(err, "plan: cache_batch_idx[%d]=%" PRId64 " (%" PRId64 " rows)", b, row, c->cache_rows);
        if (n > c->table_width)
          return fail(err, "plan: request %d needs %" PRId64 " pages, the table has %" PRId64, b, n, c->table_width);
        const int32_t *ids = c->block_table + row * c->table_width;
        for (int64_t j = 0; j < n; j++)
          if (ids[j] < 0 || ids[j] >= c->num_pages)
            return fail(err, "plan: request %d page %" PRId64 " is %d (pool of %" PRId64 ")", b, j, ids[j],
                        c->num_pages);
        push(P, kv, [&](int64_t j) { return ids[j]; });
      }
      t.table = kDenseToCsr;
    }
    break;
  }
  case DKB_ABI_CONTIGUOUS_NHD:
  case DKB_ABI_CONTIGUOUS_HND: {
    if (!c->cache_batch_idx) return fail(err, "plan: cache_batch_idx is NULL");
    const bool tokens = c->layout == DKB_ABI_CONTIGUOUS_NHD;
    p.page_size = tokens ? 1u : (uint32_t)c->T_cap;
    for (int b = 0; b < B; b++) {
      const int64_t kv = c->kv_len[b], row = c->cache_batch_idx[b];
      if (row < 0 || row >= c->cache_rows)
        return fail(err, "plan: cache_batch_idx[%d]=%" PRId64 " (%" PRId64 " rows)", b, row, c->cache_rows);
      if (kv > c->T_cap) return fail(err, "plan: kv_len[%d]=%" PRId64 " exceeds T_cap=%" PRId64, b, kv, c->T_cap);
      if (tokens) push(1, kv, [&](int64_t j) { return row * c->T_cap + j; });
      else push(c->T_cap, kv, [&](int64_t) { return row; });
    }
    t.table = tokens ? kContiguousTokens : kContiguousRows;
    break;
  }
  case DKB_ABI_RAGGED_NHD:
    if (!c->indptr) return fail(err, "plan: indptr is NULL");
    p.page_size = 1;
    for (int b = 0; b < B; b++) {
      const int64_t kv = c->kv_len[b], lo = c->indptr[b];
      if (kv > c->indptr[b + 1] - lo) return fail(err, "plan: kv_len[%d]=%" PRId64 " exceeds its range", b, kv);
      push(1, kv, [&](int64_t j) { return lo + j; });
    }
    t.table = kRaggedTokens;
    break;
  default: return fail(err, "plan: layout=%d unsupported", (int)c->layout);
  }
  return 0;
}

}  // namespace dkbfi
