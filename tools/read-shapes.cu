// read-shapes.cu - how fast one GPU streams the K/V bytes of a B64 T2048 decode call (two 268 MB
// buffers of 2 KiB NHD rows: 8 heads x 128 dims, bf16) when a plain read is shaped as dkb's producer
// shapes it: 128-thread CTAs held to 2 per SM by their shared memory (as the d = 128 producer is), 32 KB
// tiles (64 rows of one head's K and V, or fewer rows of several heads) copied by cp.async through a ring
// of 2 or 3 stages, and spins that stand in for what a producer does besides copying (its prologue, its
// compute per tile, its epilogue). What varies is how the 16384 tiles are dealt to CTAs (one CTA per
// (request, K/V head) item as dkb's direct plan launches them, equal runs, a global counter, chains of
// items), the spins, the order of 16-row pages (contiguous or shuffled through the pool; K and V in pools
// of their own or a page's K and V side by side in one), and which requests the CTAs sharing an SM read at
// once (SM runs). The roofline's own read (kernels/roofline.cu, linked) is the reference. Each shape is
// timed as the mean of 10 back-to-back launches (median of BATCHES batches), so the rows compare with each
// other, not with dkb bench.
// docs/kernels.md ("Read shapes") has what it measured: on H200s, and the SM runs on H100s and an H200.
// usage: build/read-shapes [BATCHES]   (make build/read-shapes)
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <random>
#include <cuda_runtime.h>

#include "kernels/kernels.h"  // dkb_roofline_read: the roofline's own read, linked from kernels/roofline.cu

constexpr int H = 8, ROWB = H * 128 * 2;  // 2 KiB rows: 8 heads x 128 dims bf16
constexpr int B = 64, T = 2048, NTOK = 64;  // 64 requests of 2048 keys, 64-key tiles of one head
constexpr int TPI = T / NTOK, UNITS = B * H * TPI;
constexpr int NT = 128, TILE = 2 * NTOK * 256;  // a tile: 32 KB of K and V
constexpr int LAUNCHES = 10;                    // back-to-back launches per timed batch

// ITEM: one CTA per item, launched in item order (the hardware deals items to free slots, as it deals
// dkb's CTAs); STATIC: one persistent CTA per slot, an equal run of tiles each; DYNAMIC: persistent CTAs
// taking single tiles from a global counter; CHAIN: persistent CTAs taking items c, c + grid, ... (dkb's
// chained-CTA trial); CHAIN_DYN: persistent CTAs taking each next item from a global counter shortly
// before the current one's last tile; SM_RUNS: persistent CTAs, 2 an SM, each SM an equal run of the
// (request, head pair, tile) units in order (below, "SM runs").
enum Deal { ITEM, STATIC, DYNAMIC, CHAIN, CHAIN_DYN, SM_RUNS };
// HEAD_MAJOR: the tiles of DYNAMIC are dealt as the H heads of one tile of one request in turn
enum Order { ITEM_MAJOR, HEAD_MAJOR };

struct Run {
  const char *k, *v;
  const int *page;       // 16-row page map (identity or shuffled), or null: contiguous rows, no lookup
  int *ctr;              // DYNAMIC, CHAIN_DYN: this launch's counter, zeroed
  float *sink;
  long pro, tile, epi;   // spins in cycles: at entry, after each tile, at exit (CHAIN*: after each item)
  int tpi, hp, order;    // tiles per item; K/V heads per item; Order
  int pf;                // ITEM: with its last tile issued, send the first 2 tiles of item blockIdx + pf to L2
  int pair;              // SM_RUNS: the SM's two CTAs read the two heads of one run (else two SMs' runs)
  int kvi;               // pages: a page's K and V side by side in one pool (page p's K at pool page 2p, V
                         // at 2p + 1, v = k + one page), as FlashInfer's [pages, 2, rows, heads, dims] lays them
};

__device__ __forceinline__ void cp16(unsigned s, const void *g) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(g));
}
__device__ __forceinline__ void commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> __device__ __forceinline__ void wait_group() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }
__device__ __forceinline__ void spin(long cycles) {
  const long t0 = clock64();
  while (clock64() - t0 < cycles) {}
}

// Tile u into the stage at s. Items are b * H + r: with hp heads per item, heads r / hp * hp .. + hp - 1
// and piece r % hp of the request's keys, so every item holds 32 tiles of 64 / hp rows x hp heads. Each
// thread copies 16-byte chunk t % (16 hp) of rows t / (16 hp) + j (8 / hp) of K and of V.
__device__ __forceinline__ void issue(const Run &r, int u, unsigned s) {
  const int hp = r.hp, cpr = 16 * hp, t = threadIdx.x;
  int b, h0, row0;
  if (r.order == HEAD_MAJOR) {
    b = u / H / TPI; h0 = u % H; row0 = u / H % TPI * NTOK;
  } else {
    const int item = u / TPI, q = item % H;
    b = item / H; h0 = q / hp * hp; row0 = q % hp * (T / hp) + u % TPI * (NTOK / hp);
  }
#pragma unroll
  for (int j = 0; j < NTOK / 8; j++) {
    const int key = b * T + row0 + t / cpr + j * (NT / cpr);
    const size_t g = r.page ? (size_t)r.page[key / 16] * (r.kvi ? 32 : 16) + key % 16 : key;
    const size_t off = g * ROWB + h0 * 256 + (t % cpr) * 16;
    cp16(s + (j * NT + t) * 16, r.k + off);
    cp16(s + TILE / 2 + (j * NT + t) * 16, r.v + off);
  }
}

// Into L2: the first n tiles of item `item` (one head, contiguous rows), 128-byte lines over the threads.
__device__ __forceinline__ void prefetch_item(const Run &r, int item, int n) {
  const int b = item / H, h = item % H;
  for (int l = threadIdx.x; l < n * NTOK * 4; l += NT) {  // 4 lines a row: 2 of K, 2 of V
    const size_t off = ((size_t)b * T + l / 4) * ROWB + h * 256 + (l % 2) * 128;
    asm volatile("prefetch.global.L2 [%0];\n" ::"l"((l & 2 ? r.v : r.k) + off));
  }
}

// SM runs: with pair, the SM's two CTAs read the two heads of each unit of its run, so an SM reads one
// request's pages at a time; without, its second CTA reads the second heads of the run half the SMs on, so an
// SM reads two requests' pages at once. The bytes, the order of every CTA's reads and the SMs' shares are the
// same either way: what differs is how many distinct pages (and pool regions) an SM's copies touch at once.
// %smid has gaps (below 256 on Hopper), so the first CTA on an SM takes a dense SM index from a counter
// (ctr[768]) and publishes it (ctr[256 + smid]) for the second, which waits for it: the grid is one wave,
// every CTA resident. Thread 0 writes got[0] the SM's dense index, got[1] this CTA's slot on it.
__device__ __forceinline__ void sm_slot(const Run &r, int *got) {
  unsigned id;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
  const int k = atomicAdd(r.ctr + id, 1);
  volatile int *pub = r.ctr + 256 + id;
  if (k == 0) *pub = atomicAdd(r.ctr + 768, 1) + 1;
  while (*pub == 0) {}
  got[0] = *pub - 1;
  got[1] = k;
}

template <int ST, Deal DEAL>
__global__ void __launch_bounds__(NT) staged(const Run r) {
  extern __shared__ __align__(16) unsigned char sm[];
  constexpr bool RING = DEAL != ITEM && DEAL != STATIC && DEAL != SM_RUNS;
  // RING: next[i % (ST + 1)] is the unit of the CTA's i-th issue, written by thread 0 an issue ahead.
  // In the dynamic allocation: a 16-byte static array beside 100 KB of it measured like 1 CTA per SM.
  // SM_RUNS: next[0 .. 1] is sm_slot's got.
  int *next = reinterpret_cast<int *>(sm + ST * TILE);
  const unsigned s0 = (unsigned)__cvta_generic_to_shared(sm);
  const int nitems = UNITS / r.tpi;
  int u = 0, end = 0, pending = 0, it = 0, tt = -1;  // thread 0, RING: item and tile of the last assigned
  int k = 0;                                         // SM_RUNS: this CTA's head of each pair
  if (DEAL == ITEM) { u = blockIdx.x * r.tpi; end = u + r.tpi; }
  if (DEAL == STATIC) { u = (int)((long)blockIdx.x * UNITS / gridDim.x); end = (int)((long)(blockIdx.x + 1) * UNITS / gridDim.x); }
  auto assign = [&]() {
    if (DEAL == DYNAMIC) {  // the counter's value from an issue earlier, so no warp waits on the atomic
      const int x = pending;
      pending = x < UNITS ? atomicAdd(r.ctr, 1) : UNITS;
      return x;
    }
    if (++tt == r.tpi) {
      tt = 0;
      it = DEAL == CHAIN ? it + (int)gridDim.x : pending;
    }
    // CHAIN_DYN takes its next item 2 tiles before this one's last is assigned: late, so the CTAs that
    // stream fastest take more items, yet a round trip before the value is needed
    if (DEAL == CHAIN_DYN && it < nitems && tt == (r.tpi > 2 ? r.tpi - 2 : 0)) pending = atomicAdd(r.ctr, 1);
    return it < nitems ? it * r.tpi + tt : UNITS;
  };
  if (RING && threadIdx.x == 0) {
    if (DEAL == DYNAMIC) pending = atomicAdd(r.ctr, 1);
    it = DEAL == CHAIN ? (int)blockIdx.x : DEAL == CHAIN_DYN ? atomicAdd(r.ctr, 1) : 0;
    for (int i = 0; i < ST; i++) next[i] = assign();
  }
  if (DEAL == SM_RUNS && threadIdx.x == 0) sm_slot(r, next);
  if (r.pro) spin(r.pro);
  __syncthreads();
  if (DEAL == SM_RUNS) {  // units of the run: (request, head pair, tile), numbered in that order
    const int sms = (int)gridDim.x / 2, n = B * (H / 2) * TPI;
    const int run = r.pair || next[1] == 0 ? next[0] : (next[0] + sms / 2) % sms;
    k = next[1];
    u = (int)((long)run * n / sms);
    end = (int)((long)(run + 1) * n / sms);
  }
  auto tile_of = [&](int x) {  // the one-head tile index issue() takes
    if (DEAL != SM_RUNS) return x;
    const int b = x / (H / 2 * TPI), hp = x / TPI % (H / 2), t = x % TPI;
    return (b * H + 2 * hp + k) * TPI + t;
  };
  auto unit = [&](int i) { return RING ? next[i % (ST + 1)] : u + i; };
  auto valid = [&](int x) { return RING ? x < UNITS : x < end; };
  for (int i = 0; i < ST - 1; i++) {
    if (valid(unit(i))) issue(r, tile_of(unit(i)), s0 + i * TILE);
    commit();
  }
  float a = 0.f;
  for (int i = 0;; i++) {
    __syncthreads();  // the stage read last is free; next[] holds the units of issues i .. i + ST - 1
    const int cur = unit(i), x = unit(i + ST - 1);
    if (!valid(cur)) break;
    if (RING && threadIdx.x == 0) next[(i + ST) % (ST + 1)] = assign();
    if (valid(x)) issue(r, tile_of(x), s0 + ((i + ST - 1) % ST) * TILE);
    if (DEAL == ITEM && r.pf && x == end - 1 && (int)blockIdx.x + r.pf < nitems) prefetch_item(r, blockIdx.x + r.pf, 2);
    commit();
    wait_group<ST - 1>();
    __syncthreads();
    a += reinterpret_cast<const float *>(sm + (i % ST) * TILE)[threadIdx.x * 33];
    if (r.tile) spin(r.tile);
    if ((DEAL == CHAIN || DEAL == CHAIN_DYN) && r.epi && cur % r.tpi == r.tpi - 1) spin(r.epi);  // next item's tiles in flight
  }
  wait_group<0>();
  if (DEAL != CHAIN && DEAL != CHAIN_DYN && r.epi) spin(r.epi);
  if (a == 1.2345e-37f) r.sink[0] = a;
}

struct Shape {
  const char *name;
  void (*fn)(const Run);
  bool persistent;
  int pro_ns = 0, tile_ns = 0, epi_ns = 0;
  int per_sm = 2;  // CTAs per SM, held by their shared memory
  int tpi = TPI, hp = 1, order = ITEM_MAJOR, pages = 0;  // pages: 0 contiguous, 1 identity map, 2 shuffled
  int pf = 0;      // ITEM: prefetch the first tiles of the item this many slots on (0: none)
  int pair = 0;    // SM_RUNS: Run::pair
  int kvi = 0;     // pages: Run::kvi
};

int main(int argc, char **argv) {
  const int batches = argc > 1 ? atoi(argv[1]) : 12;
  const size_t bytes = (size_t)B * T * ROWB;  // each of K and V
  int sms = 0, khz = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0);  // the boost clock: the spins' ns are estimates
  char *kv;
  int *pid, *pshuf, *ctr;
  float *sink;
  const int groups = B * T / 16, nctr = 1024 * LAUNCHES;  // a launch's counters: 1024 ints (SM_RUNS)
  // K and V in one allocation, so the grid-stride read covers both in one pass
  if (cudaMalloc(&kv, 2 * bytes) || cudaMemset(kv, 0, 2 * bytes) || cudaMalloc(&sink, 4) ||
      cudaMalloc(&pid, groups * 4) || cudaMalloc(&pshuf, groups * 4) || cudaMalloc(&ctr, nctr * 4)) {
    fprintf(stderr, "read-shapes: %s\n", cudaGetErrorString(cudaGetLastError()));
    return 1;
  }
  std::vector<int> id(groups), sh(groups);
  for (int i = 0; i < groups; i++) id[i] = sh[i] = i;
  std::mt19937 rng(7);
  std::shuffle(sh.begin(), sh.end(), rng);
  cudaMemcpy(pid, id.data(), groups * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(pshuf, sh.data(), groups * 4, cudaMemcpyHostToDevice);
  auto sp = [](const char *n, void (*f)(const Run), bool persistent) { Shape s; s.name = n; s.fn = f; s.persistent = persistent; return s; };
  std::vector<Shape> shapes;
  auto add = [&](Shape s) { shapes.push_back(s); return &shapes.back(); };
  // how the tiles are dealt, no spins
  add(sp("items, 2 stages (dkb's direct plan)", staged<2, ITEM>, false));
  add(sp("items, 3 stages", staged<3, ITEM>, false));
  add(sp("items, 3 per SM", staged<2, ITEM>, false))->per_sm = 3;
  add(sp("16-tile items", staged<2, ITEM>, false))->tpi = 16;
  add(sp("static runs", staged<2, STATIC>, true));
  add(sp("dynamic tiles", staged<2, DYNAMIC>, true));
  add(sp("chained items", staged<2, CHAIN>, true));
  // the spins: a producer's prologue, compute per tile and epilogue
  add(sp("items, 250 ns per tile", staged<2, ITEM>, false))->tile_ns = 250;
  add(sp("items, 500 ns per tile", staged<2, ITEM>, false))->tile_ns = 500;
  { Shape *s = add(sp("items, 1 us prologue, 250 ns per tile", staged<2, ITEM>, false)); s->pro_ns = 1000; s->tile_ns = 250; }
  { Shape *s = add(sp("items, 1 us epilogue, 250 ns per tile", staged<2, ITEM>, false)); s->epi_ns = 1000; s->tile_ns = 250; }
  const struct { const char *name; void (*fn)(const Run); bool persistent; int ns, per_sm, tpi, pf; } ends[] = {
      {"items, 1 us at each end, 250 ns per tile", staged<2, ITEM>, false, 1000, 2, TPI, 0},
      {"items, 0.5 us at each end, 250 ns per tile", staged<2, ITEM>, false, 500, 2, TPI, 0},
      {"items, 3 stages, 1 us at each end, 250 ns", staged<3, ITEM>, false, 1000, 2, TPI, 0},
      {"items, 3 per SM, 1 us at each end, 250 ns", staged<2, ITEM>, false, 1000, 3, TPI, 0},
      {"items, 1 us at each end, 250 ns, next to L2", staged<2, ITEM>, false, 1000, 2, TPI, 2},
      {"16-tile items, 1 us at each end, 250 ns", staged<2, ITEM>, false, 1000, 2, 16, 0},
      {"16-tile items, 3 per SM, 1 us at each end, 250 ns", staged<2, ITEM>, false, 1000, 3, 16, 0},
      {"chained items, 1 us at each end, 250 ns", staged<2, CHAIN>, true, 1000, 2, TPI, 0},
      {"chained dynamic items, 1 us at each end, 250 ns", staged<2, CHAIN_DYN>, true, 1000, 2, TPI, 0},
      {"chained dynamic items, 3 stages, 1 us, 250 ns", staged<3, CHAIN_DYN>, true, 1000, 2, TPI, 0},
      {"16-tile chained dynamic items, 1 us, 250 ns", staged<2, CHAIN_DYN>, true, 1000, 2, 16, 0},
  };
  for (const auto &e : ends) {
    Shape *s = add(sp(e.name, e.fn, e.persistent));
    s->pro_ns = s->epi_ns = e.ns; s->tile_ns = 250; s->per_sm = e.per_sm; s->tpi = e.tpi; s->pf = e.pf;
  }
  add(sp("items, 2 us at each end", staged<2, ITEM>, false))->pro_ns = 2000;
  shapes.back().epi_ns = 2000;
  // the page order
  add(sp("items, identity page map", staged<2, ITEM>, false))->pages = 1;
  add(sp("items, shuffled pages", staged<2, ITEM>, false))->pages = 2;
  const struct { int hp; const char *name; } heads[] = {
      {2, "items of 2 heads, shuffled pages"}, {4, "items of 4 heads, shuffled pages"}, {8, "items of 8 heads, shuffled pages"}};
  for (const auto &e : heads) {
    Shape *s = add(sp(e.name, staged<2, ITEM>, false));
    s->hp = e.hp; s->pages = 2;
  }
  add(sp("items of 8 heads", staged<2, ITEM>, false))->hp = 8;
  add(sp("dynamic tiles, shuffled pages", staged<2, DYNAMIC>, true))->pages = 2;
  { Shape *s = add(sp("dynamic tiles, head-major, shuffled pages", staged<2, DYNAMIC>, true)); s->order = HEAD_MAJOR; s->pages = 2; }
  // which requests an SM reads at once
  const struct { const char *name; int pages, pair, kvi; } runs[] = {
      {"SM runs, one request an SM", 0, 1, 0}, {"SM runs, two requests an SM", 0, 0, 0},
      {"SM runs, one request an SM, shuffled pages", 2, 1, 0}, {"SM runs, two requests an SM, shuffled pages", 2, 0, 0},
      {"SM runs, two requests an SM, K+V pages in order", 1, 0, 1},
      {"SM runs, two requests an SM, K+V pages shuffled", 2, 0, 1}};
  for (const auto &e : runs) {
    Shape *s = add(sp(e.name, staged<2, SM_RUNS>, true));
    s->pages = e.pages; s->pair = e.pair; s->kvi = e.kvi;
  }
  // a page's K and V side by side in one pool: half the pool regions a copy in flight touches
  { Shape *s = add(sp("items, K+V pages in order", staged<2, ITEM>, false)); s->pages = 1; s->kvi = 1; }
  { Shape *s = add(sp("items, K+V pages shuffled", staged<2, ITEM>, false)); s->pages = 2; s->kvi = 1; }

  // 100 KB of shared memory holds a CTA to 2 per SM, 70 KB to 3; every shape's count is checked
  auto smem = [](const Shape &s) { return s.per_sm == 3 ? 70 * 1024 : 100 * 1024; };
  for (const Shape &s : shapes) {
    int occ = 0;
    cudaFuncSetAttribute((const void *)s.fn, cudaFuncAttributeMaxDynamicSharedMemorySize, 100 * 1024);
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, (const void *)s.fn, NT, smem(s));
    if (occ != s.per_sm) {
      fprintf(stderr, "read-shapes: %s holds %d CTAs per SM, not %d\n", s.name, occ, s.per_sm);
      return 1;
    }
  }
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  printf("%d SMs, %d kHz; %d tiles of 32 KB; mean of %d back-to-back launches, median of %d batches\n", sms, khz, UNITS,
         LAUNCHES, batches);
  const int ns = (int)shapes.size();
  for (int round = 0; round < 3; round++)
    for (int m = -1; m < ns; m++) {
      std::vector<float> us;
      for (int bt = 0; bt < batches + 2; bt++) {
        cudaMemset(ctr, 0, nctr * 4);
        cudaEventRecord(e0);
        for (int l = 0; l < LAUNCHES; l++) {
          if (m < 0) {
            dkb_roofline_read(kv, 2 * bytes / 16, sink, 0, nullptr);
            continue;
          }
          const Shape &s = shapes[m];
          const long c = khz / 1000;  // cycles per us
          const Run r{kv, s.kvi ? kv + 16 * ROWB : kv + bytes, s.pages == 2 ? pshuf : s.pages ? pid : nullptr, ctr + 1024 * l,
                      sink, s.pro_ns * c / 1000, s.tile_ns * c / 1000, s.epi_ns * c / 1000, s.tpi, s.hp, s.order, s.pf * sms,
                      s.pair, s.kvi};
          s.fn<<<s.persistent ? s.per_sm * sms : UNITS / s.tpi, NT, smem(s)>>>(r);
        }
        cudaEventRecord(e1);
        cudaEventSynchronize(e1);
        float ms;
        cudaEventElapsedTime(&ms, e0, e1);
        if (bt >= 2) us.push_back(ms * 1000.f / LAUNCHES);
      }
      std::sort(us.begin(), us.end());
      const double med = us[us.size() / 2];
      printf("round %d  %-52s %8.2f us  %.3f TB/s  (min %.2f max %.2f)\n", round, m < 0 ? "grid-stride (roofline)" : shapes[m].name,
             med, 2.0 * bytes / med / 1e6, us.front(), us.back());
    }
  cudaError_t e = cudaGetLastError();
  printf("cuda: %s\n", cudaGetErrorString(e));
  return e == cudaSuccess ? 0 : 1;
}
