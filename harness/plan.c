/* plan.c - split planning over visible tiles (see plan.h). */
#include "harness/plan.h"
#include "lib/err.h"
#include "kernels/decode.h"
#include "oracles/dtype.h"
#include "oracles/split_state.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct range { int64_t a, e; };

struct builder {
  struct decode_plan *p;
  const struct kv_layout *L;
  int cap;
};

static void push_item(struct builder *bl, int b, int64_t lo, int64_t hi) {
  struct decode_plan *p = bl->p;
  if (p->n_items == bl->cap) {
    bl->cap = bl->cap ? 2 * bl->cap : 256;
    p->item_b = DKB_REALLOC(p->item_b, (size_t)bl->cap * sizeof *p->item_b);
    p->item_lo = DKB_REALLOC(p->item_lo, (size_t)bl->cap * sizeof *p->item_lo);
    p->item_hi = DKB_REALLOC(p->item_hi, (size_t)bl->cap * sizeof *p->item_hi);
    p->item_slot = DKB_REALLOC(p->item_slot, (size_t)bl->cap * sizeof *p->item_slot);
    p->item_n = DKB_REALLOC(p->item_n, (size_t)bl->cap * sizeof *p->item_n);
    p->item_base = DKB_REALLOC(p->item_base, (size_t)bl->cap * sizeof *p->item_base);
  }
  p->item_n[p->n_items] = bl->L->len[b];
  p->item_base[p->n_items] = kv_request_base(bl->L, b);
  p->item_b[p->n_items] = b;
  p->item_lo[p->n_items] = lo;
  p->item_hi[p->n_items] = hi;
  p->item_slot[p->n_items] = p->total_slots++;
  p->n_items++;
}

/* Visible ranges of request b: maximal runs of non-SKIP tiles, clamped to its keys. Counts classes. */
static int visible_ranges(const struct decode_call *c, const struct decode_inputs *in, int b, int64_t T,
                          struct range **out, int64_t tiles[3]) {
  const int64_t N = c->kv_len[b], q0 = N - c->C, q1 = N;
  int n = 0, cap = 0;
  struct range *r = NULL;
  for (int64_t k0 = 0; k0 < N; k0 += T) {
    int64_t k1 = k0 + T < N ? k0 + T : N;
    enum tile_class cl = mask_tile_class(&in->mask, b, q0, q1, k0, k1);
    tiles[cl]++;
    if (cl == TILE_SKIP) continue;
    if (n && r[n - 1].e == k0) { r[n - 1].e = k1; continue; }
    if (n == cap) r = DKB_REALLOC(r, (size_t)(cap = cap ? 2 * cap : 4) * sizeof *r);
    r[n].a = k0;
    r[n].e = k1;
    n++;
  }
  *out = r;
  return n;
}

/* Cuts the concatenated visible keys of one request into `pieces` parts, either balanced at key
 * granularity (0x03B) or in whole tiles, and emits one item per (part, range) intersection. A part with
 * no key still emits one identity item, so every slot the combine reads is written. */
static void cut(struct builder *bl, int b, const struct range *r, int nr, int64_t pieces, int64_t tile, int by_tile) {
  int64_t total = 0;
  for (int i = 0; i < nr; i++) total += r[i].e - r[i].a;
  int64_t units = by_tile ? (total + tile - 1) / tile : total;
  for (int64_t s = 0; s < pieces; s++) {
    long long us, ue;
    ss_balanced_bounds(units, pieces, s, &us, &ue);
    int64_t ks = by_tile ? us * tile : us, ke = by_tile ? ue * tile : ue;
    if (ke > total) ke = total;
    if (ks > total) ks = total;
    int emitted = 0;
    int64_t base = 0;
    for (int i = 0; i < nr; i++) {
      int64_t len = r[i].e - r[i].a, lo = ks > base ? ks : base, hi = ke < base + len ? ke : base + len;
      if (lo < hi) { push_item(bl, b, r[i].a + (lo - base), r[i].a + (hi - base)); emitted = 1; }
      base += len;
    }
    if (!emitted) push_item(bl, b, 0, 0);
  }
}

/* Keys a tile, as the items are cut: the kernel's (plan_opts.tile_tokens), or 64 where none was given. */
static int64_t plan_tile(const struct plan_opts *o) { return o->tile_tokens > 0 ? o->tile_tokens : 64; }

/* The device's SMs, or the H100's and H200's 132 where no device was asked (plan_opts.sm_count 0). */
static int plan_sms(const struct plan_opts *o) { return o->sm_count > 0 ? o->sm_count : 132; }

/* The CTAs per SM the wave counts: as many as the producer is built for (plan_opts.wave_ctas, its
 * __launch_bounds__ or its shared memory's bound), and fewer where fewer are resident (plan_opts.ctas_per_sm). Where more are resident
 * than the build is for, splitting the work to fill them cost more (merge, per-CTA prologue) than it
 * gained (H200, when the d = 128 producers ran 3 per SM: B16 T8192 split 2 0.851 of the roofline vs 3
 * 0.826; B8 T16384 MHA split 1 0.967 vs 3 0.922). At d = 64, built for 4, counting 2 left the auto split
 * up to 13 % behind the best forced one (docs/kernels.md, "Four CTAs per SM at d = 64"). */
static int plan_wave_ctas(const struct plan_opts *o) {
  const int built = o->wave_ctas > 0 ? o->wave_ctas : 2;
  return o->ctas_per_sm > 0 && o->ctas_per_sm < built ? o->ctas_per_sm : built;
}

/* The CTA slots of one wave: the SMs times the CTAs each runs at once. */
static int plan_wave_slots(const struct plan_opts *o) { return plan_sms(o) * plan_wave_ctas(o); }

/* The device's peak DRAM rate, or an H100's 3.352 TB/s where no device was asked (plan_opts.dram_bytes_per_s 0). */
static double plan_dram_rate(const struct plan_opts *o) { return o->dram_bytes_per_s > 0 ? o->dram_bytes_per_s : 3.352e12; }

/* One K/V head a CTA, two or four times the CTAs, where a CTA's ends are cheap: contiguous NHD caches at
 * 64 < d <= 128 whose CTA holds at most four query rows (GQA 4 decode), so its warps' merge has few rows. On
 * the H200 each step in heads timed the same there (B64 T2048 one head against two, B128 T1024 two against
 * four, and four heads' register epilogue, 2.0-3.5 % faster at GQA 8, nothing at GQA 4); on three H100s one
 * head was 0.9-2.7 % faster than four at B128 T1024 and B256 T512 and 0-1.7 % than two at B64 T2048, as
 * cuDNN's one-head CTAs are (Nsight Compute: the same instructions, 1.6-3 points more of the DRAM's peak;
 * docs/kernels.md, "One K/V head a CTA on contiguous caches at GQA 4"). Pages keep the heads: fewer ends
 * made them 2-5 % faster on the H200, and two heads for four cost GQA 8 pages 1.5-2 % on an H100. */
static int plan_one_head(const struct decode_call *c) {
  return c->layout == KV_CONTIG_NHD && c->dk > 64 && c->dk <= 128 && (int64_t)(c->H_q / c->H_kv) * c->C <= 4;
}

/* A CTA's fixed cost in tile times: the prologue of dependent loads (item, length, page list, first
 * copy), the warp merge and the state store, and the merge of its slot. Fitted on the H200 (bf16,
 * d = 128): at B4 T4096 a second wave of 4-tile CTAs (split 16, 36.7 us) costs 8 us more than one wave
 * of 8-tile CTAs (split 8, 28.6 us) at 0.9 us per tile, about 9 tiles. */
enum { kPlanCtaCostTiles = 9 };

static int cmp_desc(const void *a, const void *b) {
  const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x > y ? -1 : x < y;
}

/* Makespan of greedy list scheduling of the CTA costs (sorted longest first) on `slots` workers; heap
 * is scratch for `slots` finish times. */
static int64_t lpt_makespan(const int64_t *cost, int64_t n, int64_t *heap, int slots) {
  int64_t end = 0;
  for (int i = 0; i < slots; i++) heap[i] = 0;
  for (int64_t k = 0; k < n; k++) {
    int64_t f = heap[0] + cost[k];
    end = f > end ? f : end;
    /* sift the root down with its new finish time (min-heap) */
    int i = 0;
    for (;;) {
      int l = 2 * i + 1, r = l + 1, m = i;
      int64_t v = f;
      if (l < slots && heap[l] < v) { m = l; v = heap[l]; }
      if (r < slots && heap[r] < v) m = r;
      if (m == i) break;
      heap[i] = heap[m];
      i = m;
    }
    heap[i] = f;
  }
  return end;
}

/* The plan's makespan in tile times (of `tile` keys) with one K/V head a CTA: each (item, head) a CTA costing
 * its tiles and kPlanCtaCostTiles, list-scheduled longest first on `slots`. */
static int64_t one_head_makespan(const struct decode_call *c, const struct decode_plan *p, int64_t tile, int slots) {
  const int64_t n = (int64_t)p->n_items * c->H_kv;
  int64_t *cost = DKB_MALLOC((size_t)n * sizeof *cost), *heap = DKB_MALLOC((size_t)slots * sizeof *heap);
  for (int i = 0, k = 0; i < p->n_items; i++)
    for (int h = 0; h < c->H_kv; h++)
      cost[k++] = (p->item_hi[i] - p->item_lo[i] + tile - 1) / tile + kPlanCtaCostTiles;
  qsort(cost, (size_t)n, sizeof *cost, cmp_desc);
  const int64_t t = lpt_makespan(cost, n, heap, slots);
  free(cost);
  free(heap);
  return t;
}

/* Two or four K/V heads a producer CTA in a direct plan divide the CTAs each slot runs in turn, and a CTA's
 * ends cost the call about 0.9 us contiguous and 2.2 us in 16-key pages (docs/performance.md, "What a CTA
 * costs"), so the most heads are taken whose grid still fills the device: at least 95 % of one wave's slots,
 * and no worse a last wave than one head a CTA fills (B32 T4096 at 128 CTAs of 264 slots ran 26 % slower).
 * Not on contiguous caches at d = 128 with at most four query rows a K/V head (plan_one_head). */
static int plan_heads(const struct decode_call *c, const struct plan_opts *o, const struct decode_plan *p) {
  if (o->hp_max < 2 || !p->direct || p->fused || p->cluster > 1 || plan_one_head(c)) return 1;
  const int64_t slots = plan_wave_slots(o);
  const int64_t one = (int64_t)p->n_items * c->H_kv, w1 = (one + slots - 1) / slots;
  /* items run longest first: item 0's tiles are the longest CTA's, times its heads */
  const int64_t tile = plan_tile(o);
  const int64_t longest = p->n_items ? (p->item_hi[0] - p->item_lo[0] + tile - 1) / tile : 0;
  int64_t m1 = -1;
  for (int hp = o->hp_max; hp > 1; hp /= 2) {
    const int64_t n = one / hp, w = (n + slots - 1) / slots;
    /* filled fraction of the waves, as a ratio: ctas / (waves * slots) */
    if (c->H_kv % hp != 0 || n * 100 < slots * 95 || n * 100 * w1 < one * 95 * w) continue;
    /* ... and no CTA of hp heads outlasting the one-head plan's schedule: in a ragged batch whose long
     * requests run unsplit, the CTA holding a long request's heads is the call (the serving batch forced to
     * one split on an H100: two heads a CTA 1215.71 us, FlashInfer's one-head CTAs 502.37) */
    if (m1 < 0) m1 = one_head_makespan(c, p, tile, (int)slots);
    if (hp * longest + kPlanCtaCostTiles <= m1) return hp;
  }
  return 1;
}

/* One-head CTAs of a direct plan at three an SM, on the producer built for three (d = 128), overlap more of
 * each other's ends (at B512 T256 on the H200 a CTA waits 3.5 us for its first tile and spends 1.2 us after
 * its last). Against two an SM (four heads or one a CTA), measured (docs/kernels.md, "Three CTAs an SM for
 * many CTAs"): at 10.3 CTAs a slot of three (B512 T256) faster on an H100 (2.2-2.9 %) and on the H200 (7.8 %
 * contiguous, 3.1 % in 16-key pages); at 5.2 (B256 T512) contiguous calls faster on the H200 (1.5-3.0 %, GQA 8
 * the same on one of two instances) and slower on an H100 (up to 1.8 %), 16-key pages slower on both (H200
 * 2.6-4.0 %, H100 0.3-1.7 %: their four heads' fewer ends pay more); at 2.6 (B128 T1024) 2.5 % slower on an
 * H100. So a plan of at least kThreeMinCtas a slot takes three, and a contiguous NHD one of at least
 * kThreeMinShortCtas where its CTA streams briefly against its ends: its mean K/V bytes, at the device's peak
 * DRAM rate shared by two CTAs on each SM, take at most kThreeMaxStreamUs (B256 T512's 256 KiB: 14.4 us on the
 * H200, 20.6 on an H100). Only where every item's page list fits the producer's shared memory (plan_opts
 * three_room, 0 where there is no such producer or the device holds fewer than three of it). */
enum { kThreeMinCtas = 8, kThreeMinShortCtas = 4 };
static const double kThreeMaxStreamUs = 17.0;
static int plan_three(const struct decode_call *c, const struct plan_opts *o, const struct decode_plan *p) {
  if (o->three_room <= 0 || !p->direct || p->fused || p->cluster > 1 || p->max_item_pages > o->three_room) return 0;
  const int64_t ctas = (int64_t)p->n_items * c->H_kv, slots = (int64_t)plan_sms(o) * 3;
  if (ctas >= kThreeMinCtas * slots) return 1;
  if (c->layout != KV_CONTIG_NHD || ctas < kThreeMinShortCtas * slots) return 0;
  const double rate = plan_dram_rate(o);
  const double cta_bytes = (double)plan_visible_kv_bytes(c, p) / (double)ctas;
  return cta_bytes / (rate / (2.0 * plan_sms(o))) * 1e6 <= kThreeMaxStreamUs;
}

/* A one-head plan whose schedule its longest CTA sets (that CTA's tiles and ends are the LPT makespan on the wave's
 * slots: it runs on an SM of its own or beside shorter ones that end first) runs on the producer of eight warps, one
 * CTA an SM. A CTA alone on its SM streams at what its own warps issue: four warps, one a scheduler, stream a 16-key
 * paged item at about 26 GB/s on an H100 where FlashInfer's tensor-core CTA reached 34, and eight warps doing the same
 * work a warp double what is in flight. On an H100 (docs/kernels.md, "Eight warps for a CTA that streams alone"):
 * the ragged serving batch forced to one split 632.35 -> 407.42 us, packed 592.58 -> 387.04, the 32-request one
 * 453.22 -> 426.59, B16 T8192 in 16-key pages unsplit -1.3 %, B8 T16384 MHA -0.7 %, B16 contiguous +0.3 % (inside the
 * noise); B64 T2048's two full waves of one-head CTAs, which its longest CTA does not set, +0.9 % slower, so those
 * keep four warps. Not for fused or cluster plans (their merge is the four-warp producer's), nor FlashMask (its
 * summaries are of 64-key tiles), nor an item whose page list outgrows the producer's room. */
static int plan_eight(const struct decode_call *c, const struct plan_opts *o, const struct decode_plan *p) {
  if (o->eight_room <= 0 || p->fused || p->cluster > 1 || p->three || p->kv_heads_per_cta > 1 || p->n_items < 1 ||
      c->mask_kind == MASK_FLASHMASK || p->max_item_pages > o->eight_room)
    return 0;
  const int64_t tile = plan_tile(o);
  /* items run longest first: item 0 is the longest CTA */
  const int64_t longest = (p->item_hi[0] - p->item_lo[0] + tile - 1) / tile + kPlanCtaCostTiles;
  return one_head_makespan(c, p, tile, plan_wave_slots(o)) <= longest;
}

/* The slots an unsplit plan must fill to stream at the DRAM's rate (plan_auto_splits' early exit). A one-head
 * CTA alone on its SM streams a contiguous NHD item at about kLoneCtaBytesPerS (the H200: B16 T8192 GQA 4 at
 * split 1, 128 CTAs of 4.19 MB in 137.12 us). Where the device's peak DRAM rate shared by its SMs is no more,
 * one CTA an SM keeps the DRAM busy and a split only adds CTA ends and a merge: on an H100 (25.4 GB/s an SM)
 * that call ran 176.54 us unsplit against 181.89 at split 2 (GPU-b35d39e1, one run, noise 0.27-0.53 %), on
 * the H200 (36.5) 137.12 against 125.57. So there the early exit counts one slot an SM, elsewhere the wave's.
 * Only for the d = 128 producers built for two an SM on contiguous NHD caches, where it was measured: the
 * same call's 16-key pages stream slower alone (187.58 us unsplit against 185.28 on the H100). */
static const double kLoneCtaBytesPerS = 31e9;
static int plan_fill_slots(const struct decode_call *c, const struct plan_opts *o) {
  if (c->layout != KV_CONTIG_NHD || plan_wave_ctas(o) != 2 || plan_dram_rate(o) / plan_sms(o) > kLoneCtaBytesPerS)
    return plan_wave_slots(o);
  return plan_sms(o);
}

static int64_t max_item_pages(const struct decode_call *c, const struct decode_plan *p) {
  int64_t most = 0;
  if (!kv_layout_paged(c->layout) || c->page_size <= 0) return 0;
  for (int i = 0; i < p->n_items; i++) {
    const int64_t lo = p->item_lo[i], hi = p->item_hi[i], n = hi > lo ? (hi - 1) / c->page_size - lo / c->page_size + 1 : 0;
    if (n > most) most = n;
  }
  return most;
}

int plan_auto_splits(const int64_t *tiles, int n, int heads, int slots, int fill, int max_splits) {
  if (n < 1 || heads < 1 || slots < 1 || fill < 1 || fill > slots || max_splits < 1) return -1;
  int64_t max_tiles = 0, total = 0;
  for (int b = 0; b < n; b++) {
    if (tiles[b] < 0) return -1;
    max_tiles = tiles[b] > max_tiles ? tiles[b] : max_tiles;
    total += tiles[b];
  }
  if (max_tiles < 1) return 1;
  /* enough (request, K/V head) blocks, in units of the longest request, to fill most of a wave
   * unsplit: FlashAttention-2's early exit */
  const int64_t blocks = (total + max_tiles - 1) / max_tiles * heads;
  if (blocks * 5 >= (int64_t)fill * 4) return 1;
  const int64_t cap = max_splits < max_tiles ? max_splits : max_tiles;
  int64_t most = 0;  /* CTAs at the largest split */
  for (int b = 0; b < n; b++) most += tiles[b] > cap ? cap : (tiles[b] > 0 ? tiles[b] : 1);
  most *= heads;
  int64_t *cost = DKB_MALLOC((size_t)most * sizeof *cost), *heap = DKB_MALLOC((size_t)slots * sizeof *heap), best = 0, prev_chunk = 0;
  int best_s = 1;
  for (int64_t s = 1; s <= cap; s++) {
    const int64_t chunk = (max_tiles + s - 1) / s;
    if (chunk == prev_chunk) continue;  /* the same pieces as a smaller s */
    prev_chunk = chunk;
    int64_t k = 0;
    for (int b = 0; b < n; b++) {
      const int64_t pieces = tiles[b] > 0 ? (tiles[b] + chunk - 1) / chunk : 1;
      for (int64_t q = 0; q < pieces; q++) {
        long long lo, hi;
        ss_balanced_bounds(tiles[b], pieces, q, &lo, &hi);
        for (int h = 0; h < heads; h++) cost[k++] = (hi - lo) + kPlanCtaCostTiles;
      }
    }
    qsort(cost, (size_t)k, sizeof *cost, cmp_desc);
    const int64_t t = lpt_makespan(cost, k, heap, slots);
    if (s == 1 || t < best) { best = t; best_s = (int)s; }  /* ties keep the smaller split */
  }
  free(cost);
  free(heap);
  return best_s;
}

/* Longest item first, then plan order: the launch order of the producer's CTAs (item-major, every K/V
 * head of an item together), so a ragged batch's long pieces start in the first wave (LPT). A cluster
 * plan keeps each request's items together in slot order (a cluster is consecutive items): requests are
 * ordered by their longest item instead. */
static int cmp_item(const void *a, const void *b, void *lens) {
  const int x = *(const int *)a, y = *(const int *)b;
  const int64_t *len = lens;
  if (len[x] != len[y]) return len[x] > len[y] ? -1 : 1;
  return (x > y) - (x < y);
}
static void order_longest_first(struct decode_plan *p, int by_request) {
  const int n = p->n_items;
  int *idx = DKB_MALLOC((size_t)n * sizeof *idx);
  int64_t *len = DKB_MALLOC((size_t)n * sizeof *len);
  for (int i = 0; i < n; i++) { idx[i] = i; len[i] = p->item_hi[i] - p->item_lo[i]; }
  if (by_request) /* plan order is request-major, so the items of one request are a run */
    for (int i = 0, j; i < n; i = j) {
      int64_t mx = 0;
      for (j = i; j < n && p->item_b[j] == p->item_b[i]; j++) mx = len[j] > mx ? len[j] : mx;
      for (int k = i; k < j; k++) len[k] = mx;
    }
  qsort_r(idx, (size_t)n, sizeof *idx, cmp_item, len);
#define PERMUTE(field, type) do { type *t = DKB_MALLOC((size_t)n * sizeof *t); \
    for (int i = 0; i < n; i++) { t[i] = p->field[idx[i]]; } free(p->field); p->field = t; } while (0)
  PERMUTE(item_b, int32_t); PERMUTE(item_lo, int64_t); PERMUTE(item_hi, int64_t); PERMUTE(item_slot, int32_t);
  PERMUTE(item_n, int64_t); PERMUTE(item_base, int64_t);
#undef PERMUTE
  free(idx);
  free(len);
}

int plan_build(const struct decode_call *c, const struct decode_inputs *in, const struct plan_opts *o,
               struct decode_plan *p, struct dkb_err *err) {
  memset(p, 0, sizeof *p);
  const int64_t T = plan_tile(o);
  struct builder bl = {p, &in->L, 0};
  struct range **rs = DKB_CALLOC((size_t)c->B, sizeof *rs);
  int *nr = DKB_CALLOC((size_t)c->B, sizeof *nr);
  int64_t max_tiles = 0, *vt = DKB_CALLOC((size_t)c->B, sizeof *vt);  /* visible tiles of each request */
  int64_t *vk = DKB_CALLOC((size_t)c->B, sizeof *vk);                     /* and its visible keys */
  for (int b = 0; b < c->B; b++) {
    nr[b] = visible_ranges(c, in, b, T, &rs[b], p->tiles);
    for (int i = 0; i < nr[b]; i++) vk[b] += rs[b][i].e - rs[b][i].a;
    p->visible_keys += vk[b];
    vt[b] = (vk[b] + T - 1) / T;
    if (vt[b] > max_tiles) max_tiles = vt[b];
  }
  switch (c->split_policy) {
  case SPLIT_FIXED:
    p->splits = c->splits;
    p->capacity = c->capacity;
    break;
  case SPLIT_CHUNK:
    p->splits = 0;  /* per request below */
    break;
  default: {
    /* Every request is cut into pieces of at most ceil(max_tiles / S) tiles (a shorter request into
     * proportionally fewer), S from the schedule model over the requests' visible tiles, on
     * plan_wave_ctas CTAs per SM. */
    p->heuristic_sms = plan_wave_slots(o);
    p->fill_slots = plan_fill_slots(c, o);
    int s = plan_auto_splits(vt, c->B, c->H_kv, p->heuristic_sms, p->fill_slots, c->max_splits);
    if (s < 1) {
      free(vt);
      free(vk);
      free(nr);
      for (int b = 0; b < c->B; b++) free(rs[b]);
      free(rs);
      return dkb_err_set(err, DKB_INTERNAL, c->file, "/split", "split rule rejected its arguments");
    }
    p->splits = s;
    p->capacity = s;
    p->chunk_tiles = max_tiles > 0 ? (max_tiles + s - 1) / s : 1;
  }
  }
  p->slot_indptr = DKB_CALLOC((size_t)c->B + 1, sizeof *p->slot_indptr);
  for (int b = 0; b < c->B; b++) {
    const int64_t vis = vk[b];
    if (c->split_policy == SPLIT_FIXED) {
      cut(&bl, b, rs[b], nr[b], c->splits, T, 0);
      for (int s = c->splits; s < c->capacity; s++) push_item(&bl, b, 0, 0);  /* inactive capacity slots */
    } else if (c->split_policy == SPLIT_CHUNK) {
      int64_t pieces = vis ? (vis + c->chunk - 1) / c->chunk : 1;
      /* chunks are whole multiples of the tile when the chunk allows it */
      int64_t tiles_per = c->chunk % T == 0 ? c->chunk / T : 0;
      if (tiles_per) cut(&bl, b, rs[b], nr[b], pieces, T, 1);
      else cut(&bl, b, rs[b], nr[b], pieces, T, 0);
    } else {
      /* auto: pieces of at most chunk_tiles tiles, never an empty piece */
      int64_t pieces = (vt[b] + p->chunk_tiles - 1) / p->chunk_tiles;
      cut(&bl, b, rs[b], nr[b], pieces > 0 ? pieces : 1, T, 1);
    }
    p->slot_indptr[b + 1] = p->total_slots;
    int n = p->slot_indptr[b + 1] - p->slot_indptr[b];
    if (n > p->max_slots) p->max_slots = n;
    free(rs[b]);
  }
  free(rs);
  free(nr);
  free(vt);
  free(vk);
  if (c->split_policy != SPLIT_FIXED) p->splits = p->capacity = p->max_slots;
  p->direct = p->max_slots == 1;
  if (!p->direct) {
    const int rows_per_head = (c->H_q / c->H_kv) * c->C;
    p->fused = dkb_decode_fused_ok(c->dtype, c->dk, c->dv, rows_per_head, p->max_slots);
    /* a thread-block cluster per (request, K/V head) when every request has the slot count the kernel
     * clusters (dkb_decode_cluster_ok) and the grid is one z slice (a cluster never straddles slices) */
    int uniform = p->n_items <= 65535;
    for (int b = 0; b < c->B && uniform; b++) uniform = p->slot_indptr[b + 1] - p->slot_indptr[b] == p->max_slots;
    if (p->fused && uniform && dkb_decode_cluster_ok(c->dtype, c->dk, c->dv, rows_per_head, p->max_slots, c->abi, c->ws_o_dtype))
      p->cluster = p->max_slots;
    int64_t rows = (int64_t)p->total_slots * c->H_q * c->C;
    int64_t per = c->abi == DKB_ABI_MLU ? (int64_t)c->dv * 4 + 4 + 4 + 1
                                        : (int64_t)c->dv * (int64_t)dkb_dtype_bytes((enum dkb_dtype)c->ws_o_dtype) + 4 + 1;
    /* the ABI's states (in distributed shared memory for a cluster plan); fused in global memory: one
     * int32 arrival counter per (request, K/V head) */
    p->workspace_bytes = rows * per + (p->fused && !p->cluster ? (int64_t)c->B * c->H_kv * 4 : 0);
  }
  order_longest_first(p, p->cluster > 1);
  p->max_item_pages = max_item_pages(c, p);
  p->three = plan_three(c, o, p);
  p->kv_heads_per_cta = p->three ? 1 : plan_heads(c, o, p);
  p->eight = plan_eight(c, o, p);
  return 0;
}

void plan_release(struct decode_plan *p) {
  free(p->item_b); free(p->item_lo); free(p->item_hi); free(p->item_slot); free(p->item_n); free(p->item_base);
  free(p->slot_indptr);
  memset(p, 0, sizeof *p);
}

const char *plan_combine_name(const struct decode_plan *p) {
  return p->direct ? "none (direct)" : p->cluster ? "cluster (the request's producer CTAs, distributed shared memory)"
         : p->fused ? "fused (last producer CTA)" : "kernel";
}

int64_t plan_visible_kv_bytes(const struct decode_call *c, const struct decode_plan *p) {
  return p->visible_keys * c->H_kv * (int64_t)(c->dk + c->dv) * (int64_t)dkb_dtype_bytes((enum dkb_dtype)c->dtype);
}

json_t *plan_json(const struct decode_call *c, const struct decode_plan *p) {
  static const char *const POL[] = {"fixed", "auto", "chunk"};
  json_t *slots = json_array();
  for (int b = 0; b < c->B; b++) json_array_append_new(slots, json_integer(p->slot_indptr[b + 1] - p->slot_indptr[b]));
  json_t *items = json_array();
  const int shown = p->n_items < 512 ? p->n_items : 512;  /* bounded: the bundle stays small */
  for (int i = 0; i < shown; i++)
    json_array_append_new(items, json_pack("[i,I,I,i]", p->item_b[i], (json_int_t)p->item_lo[i], (json_int_t)p->item_hi[i], p->item_slot[i]));
  json_t *j = json_pack("{s:s,s:i,s:i,s:i,s:b,s:o,s:i,s:o,s:I,s:{s:I,s:I,s:I},s:I}", "policy", POL[c->split_policy], "splits",
                        p->splits, "capacity", p->capacity, "max_slots_per_request", p->max_slots, "direct", p->direct,
                        "slots_per_request", slots, "items", p->n_items, "item_table", items, "workspace_bytes",
                        (json_int_t)p->workspace_bytes, "tiles", "SKIP", (json_int_t)p->tiles[0], "FULL",
                        (json_int_t)p->tiles[1], "PARTIAL", (json_int_t)p->tiles[2], "visible_keys", (json_int_t)p->visible_keys);
  json_object_set_new(j, "item_table_truncated", json_boolean(shown < p->n_items));
  json_object_set_new(j, "combine", json_string(plan_combine_name(p)));
  json_object_set_new(j, "cluster_ctas", json_integer(p->cluster));
  json_object_set_new(j, "kv_heads_per_cta", json_integer(p->kv_heads_per_cta));
  json_object_set_new(j, "three_ctas_per_sm", json_boolean(p->three));
  json_object_set_new(j, "eight_warps_per_cta", json_boolean(p->eight));
  json_object_set_new(j, "workspace_memory", json_string(p->direct ? "none" : p->cluster ? "distributed shared memory" : "global"));
  if (c->split_policy == SPLIT_AUTO) {
    char rule[160];
    snprintf(rule, sizeof rule,
             "1 where the blocks fill 0.8 of fill_slots, else min over s of the LPT makespan of CTAs of (tiles + %d) on "
             "heuristic_sms workers", kPlanCtaCostTiles);
    json_object_set_new(j, "split_rule", json_string(rule));
    json_object_set_new(j, "heuristic_sms", json_integer(p->heuristic_sms));
    json_object_set_new(j, "fill_slots", json_integer(p->fill_slots));
    json_object_set_new(j, "chunk_tiles", json_integer(p->chunk_tiles));
  }
  return j;
}
