/* dump_cases.h - the decode and append calls tests/test_dump.c writes as dumps through harness/dump.h:
 * each laid out in its layout, its o_ref / lse_ref computed in float64 with dump.h's offset formulas
 * written out once more, independent of oracles/kv_address.h and the decode reference (dump_cases.c). */
#ifndef DKB_TEST_DUMP_CASES_H
#define DKB_TEST_DUMP_CASES_H

#include <stdint.h>

#include <jansson.h>

#define MAXB 4

struct tcase {
  const char *name;        /* dump folder under the test temp dir */
  const char *layout;      /* contiguous_nhd ... paged_hnd */
  const char *table;       /* paged: "dense" or "csr"; NULL otherwise */
  const char *phase;       /* "decode" or "append" */
  const char *dtype;       /* fp16, bf16, fp32 */
  const char *mask;        /* none, causal, sliding_window, flashmask */
  int window, sink;        /* sliding_window */
  int B, C, H_q, H_kv, dk, dv;
  int64_t kv_len[MAXB];
  int32_t row[MAXB];       /* cache_batch_idx (contiguous, dense table) */
  int64_t T_cap, rows;     /* contiguous capacity and storage rows; dense table rows */
  int64_t P, pages;        /* paged: page size and pool pages (one at least unused) */
  int gpu;                 /* also write o_gpu, lse_gpu (and *_after for append) */
  int bad_o;               /* o_ref[0] += 0.5 */
  int misplace;            /* append: request 0's new K rows land one key later in k_cache_after */
  int stale_page;          /* csr: the dump's page_indices send request 0's block 0 to unused page 0 */
};

extern const struct tcase CONTIG_NHD, PAGED_CSR, PAGED_DENSE_APPEND, RAGGED, CONTIG_HND_APPEND;

/* A value in [-1, 1) that differs by tensor, request, key, head and lane: every input element's. */
double case_value(int tensor, int b, int64_t t, int h, int x);
/* Writes the case's dump into tmp_dir()/c->name; returns the folder (static per call slot) and, in
 * *index, its index.json as read back. */
const char *write_case(const struct tcase *c, json_t **index);

#endif
