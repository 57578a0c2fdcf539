/* decode_dump.c - the decode dump of one call (see decode_dump.h and harness/dump.h). */
#include "harness/decode_dump.h"
#include "harness/dump.h"
#include "oracles/dtype.h"
#include "oracles/kv_address.h"
#include "oracles/mask.h"

#include <string.h>

/* Shape and layout text of a K or V cache tensor of head width d. */
static int cache_shape(const struct decode_call *c, const struct decode_inputs *in, int64_t d, int64_t shape[4],
                       const char **layout) {
  const struct kv_layout *L = &in->L;
  switch (c->layout) {
  case KV_CONTIG_NHD: shape[0] = L->cache_rows; shape[1] = L->T_cap; shape[2] = L->H_kv; shape[3] = d;
    *layout = "contiguous_nhd [cache_rows][T_cap][H_kv][d]"; return 4;
  case KV_CONTIG_HND: shape[0] = L->cache_rows; shape[1] = L->H_kv; shape[2] = L->T_cap; shape[3] = d;
    *layout = "contiguous_hnd [cache_rows][H_kv][T_cap][d]"; return 4;
  case KV_RAGGED_NHD: shape[0] = in->indptr[c->B]; shape[1] = L->H_kv; shape[2] = d;
    *layout = "ragged_nhd [sum kv_len][H_kv][d]"; return 3;
  case KV_PAGED_NHD: shape[0] = L->num_pages; shape[1] = L->page_size; shape[2] = L->H_kv; shape[3] = d;
    *layout = "paged_nhd [num_pages][P][H_kv][d]"; return 4;
  default: shape[0] = L->num_pages; shape[1] = L->H_kv; shape[2] = L->page_size; shape[3] = d;
    *layout = "paged_hnd [num_pages][H_kv][P][d]"; return 4;
  }
}

int decode_dump_write(const char *dir, const struct decode_call *c, const struct decode_inputs *in,
                      const struct decode_outputs *out, json_t **index, struct dkb_err *err) {
  struct dump *d = NULL;
  if (dump_open(dir, &d, err)) return -1;
  const char *dt = dkb_dtype_name((enum dkb_dtype)c->dtype), *lay;
  const int64_t B = c->B, C = c->C, Hq = c->H_q, Hkv = c->H_kv, dk = c->dk, dv = c->dv;
  int64_t sh[4];
  int n;
#define ADD(name, dtype, layout, data, bytes, ...)                                                   \
  do {                                                                                               \
    const int64_t shp_[] = {__VA_ARGS__};                                                            \
    if (dump_add(d, name, name, dtype, layout, shp_, (int)(sizeof shp_ / sizeof shp_[0]), data, bytes, err)) goto fail; \
  } while (0)
  ADD("q", dt, "[B][C][H_q][d_qk]", in->q, in->q_bytes, B, C, Hq, dk);
  n = cache_shape(c, in, dk, sh, &lay);
  if (dump_add(d, "k_cache", "k_cache", dt, lay, sh, n, in->k, in->k_bytes, err)) goto fail;
  n = cache_shape(c, in, dv, sh, &lay);
  if (dump_add(d, "v_cache", "v_cache", dt, lay, sh, n, in->v, in->v_bytes, err)) goto fail;
  ADD("kv_len", "int64", "[B]", c->kv_len, (size_t)B * 8, B);
  ADD("cache_batch_idx", "int32", "[B]", in->cache_batch_idx, (size_t)B * 4, B);
  if (in->indptr) ADD("indptr", "int64", "[B+1]", in->indptr, (size_t)(B + 1) * 8, B + 1);
  if (in->block_table)
    ADD("block_table", "int32", "[cache_rows][width]", in->block_table,
        (size_t)(in->L.cache_rows * in->L.table_width) * 4, in->L.cache_rows, in->L.table_width);
  if (in->page_indptr) {
    ADD("page_indptr", "int32", "[B+1]", in->page_indptr, (size_t)(B + 1) * 4, B + 1);
    ADD("page_indices", "int32", "[page_indptr[B]]", in->page_indices, (size_t)in->n_page_indices * 4, in->n_page_indices);
    ADD("last_page_len", "int32", "[B]", in->last_page_len, (size_t)B * 4, B);
  }
  if (in->col_indptr) {
    int64_t nc = in->col_indptr[B];
    ADD("col_indptr", "int64", "[B+1]", in->col_indptr, (size_t)(B + 1) * 8, B + 1);
    ADD("uts", "int32", "[sum kv_len]", in->uts, (size_t)nc * 4, nc);
    ADD("ute", "int32", "[sum kv_len]", in->ute, (size_t)nc * 4, nc);
    ADD("lts", "int32", "[sum kv_len]", in->lts, (size_t)nc * 4, nc);
    ADD("lte", "int32", "[sum kv_len]", in->lte, (size_t)nc * 4, nc);
  }
  if (in->k_new) {
    ADD("k_new", dt, "[B][C][H_kv][d_qk]", in->k_new, in->new_k_bytes, B, C, Hkv, dk);
    ADD("v_new", dt, "[B][C][H_kv][d_v]", in->v_new, in->new_v_bytes, B, C, Hkv, dv);
  }
  ADD("o_ref", "fp64", "[B][C][H_q][d_v]", out->o_ref, (size_t)(B * C * Hq * dv) * 8, B, C, Hq, dv);
  ADD("lse_ref", "fp64", "[B][C][H_q]", out->lse_ref, (size_t)(B * C * Hq) * 8, B, C, Hq);
  if (out->o_gpu) ADD("o_gpu", dt, "[B][C][H_q][d_v]", out->o_gpu, (size_t)(B * C * Hq * dv) * (size_t)in->esize, B, C, Hq, dv);
  if (out->lse_gpu) ADD("lse_gpu", "fp32", "[B][C][H_q]", out->lse_gpu, (size_t)(B * C * Hq) * 4, B, C, Hq);
  if (out->k_after) {
    n = cache_shape(c, in, dk, sh, &lay);
    if (dump_add(d, "k_cache_after", "k_cache_after", dt, lay, sh, n, out->k_after, in->k_bytes, err)) goto fail;
    n = cache_shape(c, in, dv, sh, &lay);
    if (dump_add(d, "v_cache_after", "v_cache_after", dt, lay, sh, n, out->v_after, in->v_bytes, err)) goto fail;
  }
#undef ADD
  {
    int paged = kv_layout_paged(c->layout);
    int contig = kv_layout_contiguous(c->layout);
    int win = c->mask_kind == MASK_SLIDING_WINDOW;
    json_t *call = json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:s,s:f,s:s,s:s,s:o,s:o,s:o,s:{s:s,s:o,s:o}}", "B", (json_int_t)B,
                             "C", (json_int_t)C, "H_q", (json_int_t)Hq, "H_kv", (json_int_t)Hkv, "d_qk", (json_int_t)dk,
                             "d_v", (json_int_t)dv, "dtype", dt, "scale", c->scale, "phase",
                             c->phase == PHASE_APPEND ? "append" : "decode", "layout",
                             kv_layout_name((enum kv_layout_kind)c->layout), "table",
                             paged ? json_string(c->table == KV_TABLE_DENSE ? "dense" : "csr") : json_null(),
                             "page_size", paged ? json_integer(c->page_size) : json_null(), "T_cap",
                             contig ? json_integer(c->T_cap) : json_null(), "mask", "kind",
                             mask_kind_name((enum mask_kind)c->mask_kind), "window",
                             win ? json_integer(c->window) : json_null(), "sink", win ? json_integer(c->sink) : json_null());
    dump_set(d, "call", call);
    dump_set(d, "call_key", decode_call_key(c));
  }
  return dump_close(d, NULL, index, err);
fail:
  dump_abandon(d);
  return -1;
}
