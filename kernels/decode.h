/* decode.h - the plain C face of dkb's split-KV decode kernels (kernels/decode.cu, kernels/decode/).
 * The host fills one struct dkb_decode_params with device pointers and a plan (work items), then
 * calls dkb_decode_launch. Everything a kernel reads is described here with its shape; the address
 * formulas are those of oracles/kv_address.h and the mask semantics those of oracles/mask.h, which
 * is how the float64 reference and the GPU are held to one contract. */
#ifndef DKB_DECODE_H
#define DKB_DECODE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Storage dtypes (values of enum dkb_dtype in oracles/dtype.h). */
#define DKB_KDT_F16 0
#define DKB_KDT_BF16 1
#define DKB_KDT_F32 2

/* Workspace ABIs of article 0x03D. */
#define DKB_ABI_MLU 0    /* u [slot][H_q][C][d_v] fp32, m and l [slot][H_q][C] fp32, valid uint8 */
#define DKB_ABI_LSE_O 1  /* O [slot][H_q][C][d_v] in ws_o_dtype, LSE fp32, valid uint8 */

struct dkb_decode_params {
  /* shape */
  int B;          /* active requests */
  int C;          /* query rows per request (S_q, 1..4); query i sits at key position N_b - C + i */
  int H_q, H_kv;  /* H_q % H_kv == 0; g = H_q / H_kv query heads share one K/V head */
  int dk, dv;     /* head widths of Q/K and of V/O, multiples of 8 (of 4 for fp32), <= 256 */
  int dtype;      /* DKB_KDT_*: Q, K, V and O share it */
  float scale;    /* softmax scale applied to q.k (usually 1/sqrt(dk)) */
  /* tensors (device) */
  const void *q;  /* [B][C][H_q][dk] */
  void *o;        /* [B][C][H_q][dv] */
  float *lse;     /* [B][C][H_q] natural-log LSE, or NULL; all-masked rows get -inf */
  const void *k, *v; /* caches in the layout below */
  /* K/V layout (oracles/kv_address.h) */
  int layout;                     /* enum kv_layout_kind */
  int table;                      /* enum kv_table_kind for paged layouts */
  const int64_t *kv_len;          /* [B] N_b: keys visible to the call (after any append) */
  const int32_t *cache_batch_idx; /* [B] contiguous layouts: cache row of each request */
  int64_t T_cap;                  /* contiguous: token capacity per cache row */
  const int64_t *indptr;          /* ragged: [B+1] */
  int page_size;                  /* paged: P */
  int64_t max_item_pages;         /* paged: the most page ids one item spans (the producer's list in shared memory) */
  const int32_t *block_table;     /* paged dense: [cache_rows][table_width], row = cache_batch_idx[b] */
  int table_width;
  const int32_t *page_indptr;     /* paged CSR: [B+1] */
  const int32_t *page_indices;
  /* mask (oracles/mask.h) */
  int mask_kind;                  /* enum mask_kind */
  int64_t window, sink;           /* sliding window */
  const int64_t *col_indptr;      /* flashmask: [B+1] key columns of each request */
  const int32_t *uts, *ute, *lts, *lte;
  const int32_t *fm_summary;      /* flashmask: 8 int32 per column block of fm_block keys */
  const int64_t *fm_sum_indptr;   /* [B+1] summary rows of each request */
  int fm_block;                   /* must equal dkb_decode_tile_tokens() of the selected kernel */
  /* plan: one work item = keys [lo, hi) of request b for every K/V head, written to state slot */
  int n_items;
  const int32_t *item_b;          /* [n_items] */
  const int64_t *item_lo, *item_hi;
  const int32_t *item_slot;       /* global slot; request b owns slots [slot_indptr[b], slot_indptr[b+1]) */
  const int64_t *item_n;          /* [n_items] kv_len[item_b] */
  const int64_t *item_base;       /* [n_items] the request's layout base (harness/plan.h): contiguous NHD
                                   * cache_row * T_cap, HND cache_row, ragged indptr[b], paged dense
                                   * cache_row * table_width, paged CSR page_indptr[b] */
  const int32_t *slot_indptr;     /* [B+1] */
  int total_slots;
  int direct;                     /* 1: every request has exactly one item: O is written without a workspace */
  int abi;                        /* DKB_ABI_* */
  int ws_o_dtype;                 /* LSE_O: DKB_KDT_BF16 or DKB_KDT_F32 */
  void *ws_u;                     /* MLU: u fp32; LSE_O: partial O */
  float *ws_m, *ws_l;             /* MLU: m (natural log units) and l; LSE_O: ws_m holds LSE */
  uint8_t *ws_valid;              /* [slot][H_q][C] */
  int fused;                      /* 1: the producer's last CTA per (request, K/V head) merges the slots: no combine launch */
  int *combine_count;             /* fused: [B][H_kv] arrival counters, zero before the call; the last CTA resets its own */
  int cluster;                    /* fused, > 1: the S = cluster items of each request are consecutive (grid y, slot
                                   * order) and run as one thread-block cluster per (request, K/V head) that merges
                                   * its states in distributed shared memory: no global workspace, no counters */
  int hp;                         /* K/V heads a producer CTA takes: 0 or 1, or 2 or 4 in a direct plan that is not
                                   * fused, up to dkb_decode_hp_max (heads h .. h + hp - 1 for grid x = h / hp) */
  int three;                      /* 1: a direct plan of one head a CTA, not fused, on the producer built for three
                                   * CTAs an SM (dkb_decode_three_room) */
  int eight;                      /* 1: a plan of one head a CTA, not fused, no FlashMask, on the producer of eight
                                   * warps, one CTA an SM (dkb_decode_eight_room) */
  /* append: rows [N_b - C, N_b) are new; written into the cache by dkb_append_launch */
  const void *k_new, *v_new;      /* [B][C][H_kv][dk] and [B][C][H_kv][dv] */
};

/* Which kernel family a launch uses. */
#define DKB_FAMILY_SPLIT_KV 0
#define DKB_FAMILY_NAIVE 1

/* 1 when the split-KV family has an instance for these parameters (dtype, head widths, rows g*C). */
int dkb_split_kv_supported(int dtype, int dk, int dv, int rows, char *why, size_t whyn);
/* Keys per tile of the split-KV instance these parameters select (flashmask block size, planner). */
int dkb_decode_tile_tokens(int dtype, int dk, int dv, int rows);
/* CTAs per SM that instance is built for (its __launch_bounds__), or fewer where its shared memory lets
 * fewer share an H100/H200 SM (d = 256: 1); no device asked, 0 when there is none: the auto split's wave
 * counts at most these (harness/plan.c), so a plan made without a device is the device's. */
int dkb_decode_wave_ctas(int dtype, int dk, int dv, int rows);
/* Resident producer CTAs per SM of that instance on the current device (0 when it cannot be asked). */
int dkb_decode_occupancy(int dtype, int dk, int dv, int rows);
/* 1 when the producer instance these parameters select merges the slots itself (fused combine) for a
 * plan of at most max_slots slots per request: tensor-core instances, while one CTA's merge of rows *
 * max_slots slot rows stays short and max_slots <= 16 (one L2 round trip of slots; more slots, up to a
 * long request split hundreds of ways, take the combine kernel). */
int dkb_decode_fused_ok(int dtype, int dk, int dv, int rows, int max_slots);
/* 1 when such a fused plan with exactly `slots` slots in every request can merge them in a thread-block
 * cluster instead (struct dkb_decode_params cluster): 2 slots (larger clusters measured slower on the H200,
 * kernels/decode/merge.cuh kClusterMax) and a workspace ABI whose fields are fp32 (MLU, or LSE_O with fp32 O), so
 * the states the cluster merges are the ABI's. */
int dkb_decode_cluster_ok(int dtype, int dk, int dv, int rows, int slots, int abi, int ws_o_dtype);
/* The most K/V heads a producer CTA of a direct plan may take (struct dkb_decode_params hp), 1, 2 or 4: a
 * tensor-core instance (fp16/bf16; 2 at any head dim, 4 at d <= 128 and above 64), H_kv a multiple of them, no
 * FlashMask (its summaries are of whole 64-key tiles), and an NHD cache whose pages, if any, are a power of
 * two (whole tiles of every head on TMA or the cp.async fast path). 2 is admitted wherever 4 is. */
int dkb_decode_hp_max(int dtype, int dk, int dv, int rows, int H_kv, int mask_kind, int layout, int page_size);
/* The page ids an item's list may hold in the shared memory of the one-head producer built for three CTAs an SM
 * (struct dkb_decode_params three; d = 128, fp16/bf16, up to 16 rows: 74 KiB a CTA, 168 registers), or 0 where
 * there is none. Past them its tiles look their page ids up in global memory, which is correct but slower. */
int dkb_decode_three_room(int dtype, int dk, int dv, int rows);
/* Resident CTAs per SM of that producer on the current device (0 when there is none or it cannot be asked). */
int dkb_decode_three_occupancy(int dtype, int dk, int dv, int rows);
/* The page ids an item's list may hold in the shared memory of the one-head producer of eight warps on 128-key
 * tiles, one CTA an SM (struct dkb_decode_params eight; d = 128, fp16/bf16, up to 16 rows: 144 KiB a CTA), or 0
 * where there is none. */
int dkb_decode_eight_room(int dtype, int dk, int dv, int rows);
/* Launches the producer (and the combine kernel unless direct or fused). 0 or a cudaError_t value. */
int dkb_decode_launch(const struct dkb_decode_params *p, void *stream);
/* The naive reference family: one CTA per (request, query row, query head), no split, any rows.
 * scratch must hold B * C * H_q * max(N_b) floats. */
int dkb_naive_launch(const struct dkb_decode_params *p, float *scratch, void *stream);
/* Writes the C new K/V rows of every request into the cache (append calls). */
int dkb_append_launch(const struct dkb_decode_params *p, void *stream);

/* Symbols and attributes of the kernels a launch with these parameters runs, in launch order.
 * names[i] is the mangled symbol (cudaFuncGetName); binary/ptx versions from cudaFuncGetAttributes.
 * Returns the count (<= cap) or a negative cudaError_t value. */
struct dkb_kernel_info {
  const char *symbol;
  int binary_version, ptx_version, num_regs;
  size_t static_smem, dynamic_smem;
  int role;  /* 0 producer, 1 combine, 2 naive, 3 append, 4 producer with fused combine */
};
int dkb_decode_kernels(const struct dkb_decode_params *p, int family, struct dkb_kernel_info *out, int cap);

#ifdef __cplusplus
}
#endif

#endif
