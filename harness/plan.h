/* plan.h - the immutable launch plan of one decode call (article 0x03, 0x05C, 0x09).
 * For each request the planner classifies the kernel's key tiles (SKIP / FULL / PARTIAL, 0x05C) and
 * plans only over the visible tiles: SKIP tiles load neither K/V nor page-table entries, and a split
 * never owns only skipped tiles. Visible keys are then cut by the split policy into work items; each
 * item owns one state slot. Fixed S cuts at key granularity with the balanced quotient/remainder
 * bounds of 0x03B (a capacity envelope S_capacity > S adds identity-writing items); chunk and auto
 * cut at tile granularity, auto taking S from a schedule model of the producer (plan_auto_splits) with
 * the device's SM count times the kernel's CTAs per SM (no item holds more than ceil(max_tiles / S)
 * tiles). Items are ordered longest first: the producer launches them in that order. A plan whose requests all have exactly one
 * slot writes O directly and launches no combine kernel; a plan with few slots per request has them
 * merged by the producer's last CTA (fused), or, with 2 slots in every request, by the request's
 * CTAs as one thread-block cluster (their items kept together); otherwise the combine kernel merges them. */
#ifndef DKB_PLAN_H
#define DKB_PLAN_H

#include <stdint.h>

#include <jansson.h>

#include "harness/decode_call.h"
#include "lib/err.h"
#include "harness/inputs.h"

struct plan_opts {
  int tile_tokens;    /* keys per kernel tile (dkb_decode_tile_tokens); also the SKIP granularity */
  int sm_count;       /* device SMs (auto policy); 0 when no device: auto then plans for 132 */
  int ctas_per_sm;    /* resident producer CTAs per SM (auto policy), 0 when no device was asked: then wave_ctas */
  int wave_ctas;      /* CTAs per SM the producer is built for and fit (dkb_decode_wave_ctas): the wave counts at most
                       * these (plan.c); 0: 2 */
  int hp_max;         /* the most K/V heads a producer CTA of a direct plan can take, 1, 2 or 4 (dkb_decode_hp_max);
                       * 0: 1 */
  int three_room;     /* the page ids of an item the one-head producer built for three CTAs an SM holds
                       * (dkb_decode_three_room); 0: there is none, or the device asked holds fewer than three */
  int eight_room;     /* the page ids of an item the one-head producer of eight warps holds (dkb_decode_eight_room);
                       * 0: there is none */
  double dram_bytes_per_s; /* the device's peak DRAM rate (dkb_device_dram_bytes_per_s); 0 when no device was
                            * asked: plan.c then plans for an H100's 3.35 TB/s */
};

struct decode_plan {
  int n_items;
  int32_t *item_b;         /* [n_items] request of each item */
  int64_t *item_lo, *item_hi; /* [n_items] keys [lo, hi) of the item (lo == hi: identity item) */
  int32_t *item_slot;      /* [n_items] */
  /* Per item, so a producer CTA's first copy waits on one load of its item, not on a chain through
   * the request's length and cache row (H200: the chain was 1.1 us of prologue, 2.5 us paged). */
  int64_t *item_n;         /* [n_items] kv_len of the item's request */
  int64_t *item_base;      /* [n_items] kv_request_base of the request (oracles/kv_address.h): where the
                            * kernel addresses its keys from */
  int32_t *slot_indptr;    /* [B+1] */
  int total_slots;
  int direct;              /* one slot per request: no workspace, no combine */
  int fused;               /* the producer's last CTA per (request, K/V head) merges the slots (dkb_decode_fused_ok) */
  int cluster;             /* fused with S = cluster slots in every request: each (request, K/V head) group runs as
                            * one thread-block cluster merging in distributed shared memory (dkb_decode_cluster_ok);
                            * its items are consecutive, in slot order; 0 otherwise */
  int splits;              /* the policy's split count S (auto: the heuristic's answer) */
  int capacity;            /* S_capacity (fixed policy), else = splits */
  int max_slots;           /* largest slot count of one request */
  int64_t workspace_bytes; /* workspace of the selected ABI (0 when direct) */
  int64_t tiles[3];        /* tile classes over all requests: [SKIP, FULL, PARTIAL] */
  int64_t visible_keys;    /* keys in non-SKIP tiles, summed over requests (each read once per K/V head) */
  int heuristic_sms;       /* auto: the effective SM count given to the heuristic */
  int fill_slots;          /* auto: the slots an unsplit plan fills to take split 1 (plan_fill_slots) */
  int64_t chunk_tiles;     /* auto: most tiles one item holds */
  int kv_heads_per_cta;    /* K/V heads each producer CTA takes: 2 or 4 in a direct plan where that still fills
                            * the device (plan_heads), else 1 */
  int64_t max_item_pages;  /* paged: the most pages one item's keys span (the producer's page list), else 0 */
  int three;               /* 1: a direct plan of so many one-head CTAs a slot that they run on the producer built
                            * for three CTAs an SM (plan_three); kv_heads_per_cta is then 1 */
  int eight;               /* 1: a one-head plan whose schedule its longest CTA sets, on the producer of eight warps,
                            * one CTA an SM (plan_eight); not fused, not three, kv_heads_per_cta 1 */
};

/* The auto policy's split count for requests of tiles[0..n) visible tiles per K/V head: the s in
 * [1, min(max_splits, max tiles)] whose plan (pieces of at most ceil(max tiles / s) tiles, heads CTAs
 * each) has the shortest makespan under greedy longest-first list scheduling on `slots` workers, a CTA
 * costing its tiles plus a fixed cost (prologue, merge, slot merge: 9 tile times, fitted on the H200).
 * The kernel launches items longest first, so the model is the schedule the GPU runs. For a uniform
 * batch this is the wave model waves(s) * (ceil(tiles / s) + 9); for a ragged batch it also prices the
 * long pieces' tail. Ties go to the smaller s (fewer partial states), and a batch whose blocks in units
 * of its longest request fill >= 0.8 of `fill` slots (at most `slots`: fewer where one CTA an SM streams
 * the SM's share of the DRAM, plan.c plan_fill_slots) takes 1 (FlashAttention-2's early exit). -1 on a
 * bad argument. FlashAttention-2's own rule (the smallest s within 85 % of the best wave efficiency,
 * oracles/schedule.h) chose one split fewer than the fastest on the H200 at B4 T4096 (+6.3 %). */
int plan_auto_splits(const int64_t *tiles, int n, int heads, int slots, int fill, int max_splits);
int plan_build(const struct decode_call *c, const struct decode_inputs *in, const struct plan_opts *o,
               struct decode_plan *p, struct dkb_err *err);
void plan_release(struct decode_plan *p);
/* The plan as recorded in a bundle: policy, S, capacity, per-request slot counts, items (bounded),
 * workspace bytes, tile-class counts. */
json_t *plan_json(const struct decode_call *c, const struct decode_plan *p);
/* How the plan merges slots: "none (direct)", "cluster (...)", "fused (last producer CTA)" or "kernel". */
const char *plan_combine_name(const struct decode_plan *p);
/* Bytes of K/V in the visible tiles (what a kernel that skips SKIP tiles must read). */
int64_t plan_visible_kv_bytes(const struct decode_call *c, const struct decode_plan *p);

#endif
