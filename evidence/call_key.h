/* call_key.h - the readable call key of one decode call (schema dkb.call-key/v1, article 0x07A, 0x0BE):
 * every field in one table, CALL_KEY_FIELDS. harness/decode_call.c writes the key by running one writer
 * per row (decode_call_key), level 4 of the ladder requires and type-checks the rows that say so, and
 * tests/test_call_key.c changes each field of a fixture in turn and requires the digest to follow. A
 * field that is not in the table is not in the key, so two calls differing in it would share a digest.
 *
 * The table sits here, in evidence/, because the ladder reads it and the ladder cannot include harness/;
 * the writers that turn a struct decode_call into each field are harness/decode_call.c's. */
#ifndef DKB_CALL_KEY_H
#define DKB_CALL_KEY_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

enum call_key_type {
  CK_STR, CK_INT, CK_NUM, CK_BOOL, CK_ARR, CK_OBJ,
  CK_INT_OR_NULL,  /* page_size: null when the cache is not paged */
  CK_STR_OR_OBJ,   /* mask: a mask kind, or a mask program object */
};

/* What the ladder does with a field of a bundle's call key (level 4). */
enum call_key_need {
  CK_WRITTEN,      /* dkb writes it; not checked */
  CK_TYPED,        /* its type is checked when present */
  CK_REQUIRED,     /* required (0x0BE: call_key_field_missing) and type-checked */
};

/* X(id, pointer, type, need): id names the writer ck_<id> in harness/decode_call.c; pointer is the
 * member's JSON Pointer, an object before its members. A writer returns NULL for a field that does not
 * apply to the call (page_table of a contiguous cache, mask/sink without a sliding window, ...), or, for
 * where the pool's pages lie (page_order, shuffle_group, pool_extra_pages), where the fixture keeps dkb's
 * default pool: absent there means pages shuffled through the whole pool with its default unused pages. */
#define CALL_KEY_FIELDS(X)                                                  \
  X(schema, "/schema", CK_STR, CK_WRITTEN)                                  \
  X(phase, "/phase", CK_STR, CK_REQUIRED)                                   \
  X(B, "/B", CK_INT, CK_REQUIRED)                                           \
  X(S_q, "/S_q", CK_INT, CK_REQUIRED)                                       \
  X(S_k_per_request, "/S_k_per_request", CK_ARR, CK_REQUIRED)               \
  X(H_q, "/H_q", CK_INT, CK_REQUIRED)                                       \
  X(H_kv, "/H_kv", CK_INT, CK_REQUIRED)                                     \
  X(d_qk, "/d_qk", CK_INT, CK_REQUIRED)                                     \
  X(d_v, "/d_v", CK_INT, CK_REQUIRED)                                       \
  X(q_dtype, "/q_dtype", CK_STR, CK_REQUIRED)                               \
  X(kv_dtype, "/kv_dtype", CK_STR, CK_REQUIRED)                             \
  X(o_dtype, "/o_dtype", CK_STR, CK_WRITTEN)                                \
  X(cache_layout, "/cache_layout", CK_STR, CK_REQUIRED)                     \
  X(page_size, "/page_size", CK_INT_OR_NULL, CK_REQUIRED)                   \
  X(page_table, "/page_table", CK_STR, CK_WRITTEN)                          \
  X(page_order, "/page_order", CK_STR, CK_TYPED)                            \
  X(shuffle_group, "/shuffle_group", CK_INT, CK_TYPED)                      \
  X(pool_extra_pages, "/pool_extra_pages", CK_INT, CK_TYPED)                \
  X(cache_capacity, "/cache_capacity", CK_INT, CK_WRITTEN)                  \
  X(cache_batch_idx, "/cache_batch_idx", CK_ARR, CK_WRITTEN)                \
  X(mask, "/mask", CK_STR_OR_OBJ, CK_REQUIRED)                              \
  X(mask_kind, "/mask/kind", CK_STR, CK_WRITTEN)                            \
  X(mask_window, "/mask/window", CK_INT, CK_WRITTEN)                        \
  X(mask_sink, "/mask/sink", CK_INT, CK_WRITTEN)                            \
  X(mask_program, "/mask/program", CK_STR, CK_WRITTEN)                      \
  X(mask_documents, "/mask/documents", CK_INT, CK_WRITTEN)                  \
  X(mask_columns, "/mask/columns", CK_ARR, CK_WRITTEN)                      \
  X(split, "/split", CK_OBJ, CK_WRITTEN)                                    \
  X(split_policy, "/split/policy", CK_STR, CK_WRITTEN)                      \
  X(split_splits, "/split/splits", CK_INT, CK_WRITTEN)                      \
  X(split_capacity, "/split/capacity", CK_INT, CK_WRITTEN)                  \
  X(split_chunk, "/split/chunk", CK_INT, CK_WRITTEN)                        \
  X(split_max_splits, "/split/max_splits", CK_INT, CK_WRITTEN)              \
  X(workspace, "/workspace", CK_OBJ, CK_WRITTEN)                            \
  X(workspace_abi, "/workspace/abi", CK_STR, CK_WRITTEN)                    \
  X(workspace_o_dtype, "/workspace/o_dtype", CK_STR, CK_WRITTEN)            \
  X(return_lse, "/return_lse", CK_BOOL, CK_WRITTEN)                         \
  X(graph_mode, "/graph_mode", CK_BOOL, CK_REQUIRED)                        \
  X(backend_request, "/backend_request", CK_STR, CK_WRITTEN)                \
  X(scale, "/scale", CK_NUM, CK_WRITTEN)                                    \
  X(seed, "/seed", CK_INT, CK_WRITTEN)                                      \
  X(tolerances, "/tolerances", CK_OBJ, CK_TYPED)                            \
  X(tolerances_atol, "/tolerances/atol", CK_NUM, CK_WRITTEN)                \
  X(tolerances_rtol, "/tolerances/rtol", CK_NUM, CK_WRITTEN)                \
  X(tolerances_lse_atol, "/tolerances/lse_atol", CK_NUM, CK_WRITTEN)        \
  X(tolerances_lse_rtol, "/tolerances/lse_rtol", CK_NUM, CK_WRITTEN)

struct call_key_field {
  const char *id;            /* the writer's name: ck_<id> */
  const char *pointer;       /* "/mask/sink" */
  enum call_key_type type;
  enum call_key_need need;
};
/* CALL_KEY_FIELDS as data, in its order. */
extern const struct call_key_field call_key_fields[];
extern const size_t call_key_nfields;

/* ---- the logical ledgers a call key determines (article 0x03F) --------------------------------------
 * One formula each, for the bundle writer (harness/decode_call.c) and for dkb validate, which recomputes
 * a bundle's /ledgers from its /dispatch/call_key alone. Byte sizes are the stored dtypes'. */

/* K and V payload of `keys` keys, each read once per K/V head: keys * H_kv * (d_qk + d_v) * e_kv. */
int64_t call_key_kv_bytes(int64_t keys, int64_t h_kv, int64_t d_qk, int64_t d_v, int64_t e_kv);
/* Q read and O written: B * S_q * H_q * (d_qk * e_q + d_v * e_o). */
int64_t call_key_qo_bytes(int64_t b, int64_t s_q, int64_t h_q, int64_t d_qk, int64_t d_v, int64_t e_q, int64_t e_o);

/* What the ledgers need from a readable call key. */
struct call_key_sizes {
  int64_t keys;            /* sum of S_k_per_request */
  int64_t b, s_q, h_q, h_kv, d_qk, d_v;
  int64_t e_q, e_kv, e_o;  /* bytes per element of q_dtype, kv_dtype and o_dtype (q_dtype when absent) */
};
/* Reads them from a call key; -1 with why (the member that is missing, of another type or an unknown
 * dtype) when the key does not determine them. */
int call_key_sizes_read(const json_t *ck, struct call_key_sizes *out, char why[128]);

#endif
