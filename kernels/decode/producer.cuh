// producer.cuh - decode_split_kv_producer, the CUDA-core split-KV producer: fp32, and fp16/bf16
// where the tensor-core producer does not fit (head dims up to 256, up to 128 query rows per K/V head).
// Part of kernels/decode.cu's one translation unit, inside its anonymous namespace: included there only.
#pragma once

#include "kernels/decode/tile_pipe.cuh"
#include "kernels/decode/split_state.cuh"

namespace {

// ---- producer configuration -------------------------------------------------------------------------
template <typename T, int D_PAD, int R_MAX, int NT>
struct Cfg {
  static constexpr int ES = (int)sizeof(T);
  static constexpr int EPC = 16 / ES;                // elements per 16-byte chunk
  static constexpr int CH = D_PAD / EPC;             // chunks per padded row
  static constexpr int ROW_BYTES = D_PAD * ES;
  static constexpr int NTOK = ROW_BYTES <= 256 ? 64 : (ROW_BYTES <= 512 ? 32 : 16);  // keys per tile
  // QK: TPT threads share one key; each keeps CPT chunks of q for RB rows in registers (<= 64 floats).
  static constexpr int RB = R_MAX < 8 ? R_MAX : 8;
  static constexpr int TPT0 = RB * D_PAD / 64 > NT / NTOK ? RB * D_PAD / 64 : NT / NTOK;
  static constexpr int TPT = TPT0 < 1 ? 1 : (TPT0 > 32 ? 32 : (TPT0 > CH ? CH : TPT0));
  static constexpr int CPT = CH / TPT;
  static constexpr int TP = NT / TPT;                 // keys per QK pass
  // PV: a thread owns one chunk of RPT rows for the keys t = ts (mod TS).
  static constexpr int RPT = R_MAX < 8 ? R_MAX : 8;
  static constexpr int RG = R_MAX / RPT;
  static constexpr int TS = NT / (CH * RG);
  static constexpr int NW = NT / 32;
  // shared memory, in bytes
  static constexpr int TILE_BYTES = NTOK * ROW_BYTES;
  static constexpr int STAGE_BYTES = 2 * TILE_BYTES;
  static constexpr int Q_BYTES = R_MAX * D_PAD * ES;
  static constexpr int P_BYTES = NTOK * R_MAX * 4;
  static constexpr int RED_BYTES = R_MAX * D_PAD * 4;  // PV reduction buffer, aliases the stages
  static constexpr int SMEM = kStages * STAGE_BYTES + Q_BYTES + P_BYTES + 3 * R_MAX * 4;
  static_assert(CH % 8 == 0, "swizzle needs multiples of 8 chunks");
  static_assert(CH % TPT == 0 && TS >= 1 && NTOK % TS == 0 && TP >= 1, "thread mapping");
  static_assert(TS == 1 || RED_BYTES <= kStages * STAGE_BYTES, "reduction buffer must fit in the stages");
};

// K tiles are read by TPT lanes per key: an XOR of the low three chunk bits keeps each quarter warp on
// distinct banks. V tiles are read one row per CH consecutive lanes and need none.
template <int TPT> __device__ __forceinline__ int kswz(int t, int c) { return c ^ ((t * TPT) & 7); }

template <typename T, int D_PAD, int R_MAX, int NT>
__global__ void __launch_bounds__(NT) decode_split_kv_producer(const dkb_decode_params p, const KvMaps) {
  using K = Cfg<T, D_PAD, R_MAX, NT>;
  extern __shared__ __align__(16) unsigned char smem[];
  unsigned char *stages = smem;
  T *q_s = reinterpret_cast<T *>(smem + kStages * K::STAGE_BYTES);                // [R_MAX][D_PAD]
  float *p_s = reinterpret_cast<float *>(smem + kStages * K::STAGE_BYTES + K::Q_BYTES);  // [NTOK][R_MAX]
  float *m_s = p_s + K::NTOK * R_MAX, *l_s = m_s + R_MAX, *a_s = l_s + R_MAX;    // per row: m (log2), l, alpha

  const int tid = threadIdx.x, item = blockIdx.y + blockIdx.z * gridDim.y, h = blockIdx.x;  // item-major grid
  if (item >= p.n_items) return;  // the last z slice of a plan with more than 65535 items
  const int b = p.item_b[item];
  const int64_t lo = p.item_lo[item], hi = p.item_hi[item];
  const int g = p.H_q / p.H_kv, C = p.C, R = g * C;
  const int64_t N = p.item_n[item];
  const int64_t q_first = N - C;               // absolute position of query row i is q_first + i
  const float scale2 = p.scale * kLog2e;

  // Rows r = j * C + i: query head h * g + j, query i. Stage q (zero-padded lanes) in shared memory.
  for (int idx = tid; idx < R_MAX * D_PAD; idx += NT) {
    int r = idx / D_PAD, x = idx % D_PAD;
    T v = from_f<T>(0.f);
    if (r < R && x < p.dk) {
      int j = r / C, i = r % C;
      v = reinterpret_cast<const T *>(p.q)[(((int64_t)b * C + i) * p.H_q + h * g + j) * p.dk + x];
    }
    q_s[idx] = v;
  }
  for (int r = tid; r < R_MAX; r += NT) { m_s[r] = -INFINITY; l_s[r] = 0.f; a_s[r] = 1.f; }

  // The tile pipeline (addresses, prefetch, SKIP tiles, ring): shared with the tensor-core producer.
  __shared__ int64_t ring_t[kStages];
  __shared__ int ring_c[kStages];
  __shared__ int32_t pg_smem[kPageSmem];
  TilePipe<T, K::NTOK, K::CH, NT> pipe;
  pipe.init(p, tid, b, h, lo, hi, N, p.item_base[item], q_first, ring_t, ring_c, pg_smem);
  __syncthreads();
  auto kpos = [](int tt, int c) { return tt * K::CH + kswz<K::TPT>(tt, c); };
  auto vpos = [](int tt, int c) { return tt * K::CH + c; };
#pragma unroll
  for (int s = 0; s < kStages - 1; s++) pipe.issue_next(s, stages + s * K::STAGE_BYTES, K::TILE_BYTES, kpos, vpos);

  // PV accumulators: chunk pc of rows [prg*RPT, prg*RPT+RPT), keys t = pts (mod TS).
  const int pc = tid % K::CH, prg = (tid / K::CH) % K::RG, pts = tid / (K::CH * K::RG);
  float acc[K::RPT][K::EPC];
#pragma unroll
  for (int r = 0; r < K::RPT; r++)
#pragma unroll
    for (int e = 0; e < K::EPC; e++) acc[r][e] = 0.f;

  const int qslot = tid / K::TPT, qpart = tid % K::TPT;
  int stage = 0;
  for (;;) {
    cp_async_wait<kStages - 2>();
    __syncthreads();  // `stage` holds its tile; every thread is done with the stage refilled below
    const int64_t t = ring_t[stage];
    if (t < 0) break;
    const bool partial = ring_c[stage] == T_PARTIAL;
    {
      const int sf = (stage + kStages - 1) % kStages;
      pipe.issue_next(sf, stages + sf * K::STAGE_BYTES, K::TILE_BYTES, kpos, vpos);
    }
    const unsigned char *ks = stages + stage * K::STAGE_BYTES, *vs = ks + K::TILE_BYTES;
    const int64_t k0 = t * K::NTOK;

    // ---- scores: p_s[key][row] = log2-domain q.k, -inf where not visible ----
    for (int rb = 0; rb < R_MAX; rb += K::RB) {
      float qr[K::RB][K::CPT][K::EPC];
#pragma unroll
      for (int r = 0; r < K::RB; r++)
#pragma unroll
        for (int j = 0; j < K::CPT; j++)
#pragma unroll
          for (int e = 0; e < K::EPC; e++)
            qr[r][j][e] = to_f<T>(q_s[(rb + r) * D_PAD + (qpart + j * K::TPT) * K::EPC + e]) * scale2;
      for (int tt = qslot; tt < K::NTOK; tt += K::TP) {
        float dot[K::RB];
#pragma unroll
        for (int r = 0; r < K::RB; r++) dot[r] = 0.f;
#pragma unroll
        for (int j = 0; j < K::CPT; j++) {
          float kf[K::EPC];
          Chunk<T>::load(ks + (tt * K::CH + kswz<K::TPT>(tt, qpart + j * K::TPT)) * 16, kf);
#pragma unroll
          for (int r = 0; r < K::RB; r++)
#pragma unroll
            for (int e = 0; e < K::EPC; e++) dot[r] = fmaf(qr[r][j][e], kf[e], dot[r]);
        }
#pragma unroll
        for (int off = K::TPT / 2; off > 0; off /= 2)
#pragma unroll
          for (int r = 0; r < K::RB; r++) dot[r] += __shfl_xor_sync(0xffffffffu, dot[r], off, K::TPT);
        if (qpart == 0) {
          int64_t key = k0 + tt;
          bool in = key >= lo && key < hi;
#pragma unroll
          for (int r = 0; r < K::RB; r++) {
            int row = rb + r;
            bool ok = in && row < R;
            if (ok && partial) ok = visible(p, b, q_first + row % C, key);
            p_s[tt * R_MAX + row] = ok ? dot[r] : -INFINITY;
          }
        }
      }
    }
    __syncthreads();

    // ---- online softmax per row (base 2): m, l, alpha; p_s becomes probabilities ----
    for (int row = tid / 32; row < R_MAX; row += K::NW) {
      int lane = tid % 32;
      float mx = -INFINITY;
      for (int tt = lane; tt < K::NTOK; tt += 32) mx = fmaxf(mx, p_s[tt * R_MAX + row]);
#pragma unroll
      for (int off = 16; off > 0; off /= 2) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, off));
      float m_old = m_s[row], m_new = fmaxf(m_old, mx);
      // No visible key yet: keep the empty state; never form -inf - -inf (0x02C).
      float alpha = m_new == -INFINITY ? 1.f : exp2f(m_old - m_new);
      float sum = 0.f;
      for (int tt = lane; tt < K::NTOK; tt += 32) {
        float s = p_s[tt * R_MAX + row];
        float pr = m_new == -INFINITY ? 0.f : exp2f(s - m_new);
        p_s[tt * R_MAX + row] = pr;
        sum += pr;
      }
#pragma unroll
      for (int off = 16; off > 0; off /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, off);
      __syncwarp();  // every lane has read m_s[row] before lane 0 replaces it
      if (lane == 0) { l_s[row] = l_s[row] * alpha + sum; m_s[row] = m_new; a_s[row] = alpha; }
    }
    __syncthreads();

    // ---- u = alpha * u + sum_t p_t v_t ----
#pragma unroll
    for (int r = 0; r < K::RPT; r++) {
      float a = a_s[prg * K::RPT + r];
#pragma unroll
      for (int e = 0; e < K::EPC; e++) acc[r][e] *= a;
    }
    for (int tt = pts; tt < K::NTOK; tt += K::TS) {
      float vf[K::EPC];
      Chunk<T>::load(vs + (tt * K::CH + pc) * 16, vf);
      const float *pr = p_s + tt * R_MAX + prg * K::RPT;
#pragma unroll
      for (int r = 0; r < K::RPT; r++) {
        float w = pr[r];
#pragma unroll
        for (int e = 0; e < K::EPC; e++) acc[r][e] = fmaf(w, vf[e], acc[r][e]);
      }
    }
    stage = (stage + 1) % kStages;
  }
  cp_async_wait<0>();
  __syncthreads();  // stages are free: reuse them to sum the TS key subsets in a fixed order

  // Dependent combine launch may start its prologue now (it waits for our writes before reading).
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::);
#endif

  // Sum the TS key subsets into the pts == 0 owners, in a fixed order (deterministic).
  if constexpr (K::TS > 1) {
    float *red = reinterpret_cast<float *>(stages);  // [R_MAX][D_PAD]
    for (int round = 1; round < K::TS; round++) {
      if (pts == round) {
#pragma unroll
        for (int r = 0; r < K::RPT; r++)
#pragma unroll
          for (int e = 0; e < K::EPC; e++) {
            float *dst = red + (prg * K::RPT + r) * D_PAD + pc * K::EPC + e;
            *dst = round == 1 ? acc[r][e] : *dst + acc[r][e];
          }
      }
      __syncthreads();
    }
    if (pts == 0)
#pragma unroll
      for (int r = 0; r < K::RPT; r++)
#pragma unroll
        for (int e = 0; e < K::EPC; e++) acc[r][e] += red[(prg * K::RPT + r) * D_PAD + pc * K::EPC + e];
  }
  if (pts != 0) return;

  // ---- epilogue: this slot's state, or the final output when the plan is direct ----
  const int slot = p.item_slot[item];
#pragma unroll
  for (int r = 0; r < K::RPT; r++) {
    const int row = prg * K::RPT + r;
    if (row >= R) break;
    const int j = row / C, i = row % C, hq = h * g + j;
    const float m2 = m_s[row], l = l_s[row];
    const bool valid = m2 != -INFINITY;  // the empty identity: O = 0, LSE = -inf, valid = 0
    const int64_t orow = ((int64_t)b * C + i) * p.H_q + hq, srow = ((int64_t)slot * p.H_q + hq) * C + i;
#pragma unroll
    for (int e = 0; e < K::EPC; e++) {
      const int x = pc * K::EPC + e;
      if (x >= p.dv) break;
      store_elem<T>(p, orow, srow, x, acc[r][e], l, valid);
    }
    if (pc == 0) store_scalars(p, orow, srow, m2, l, valid);
  }
}

}  // namespace
