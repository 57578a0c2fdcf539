// read-patterns.cu - how fast one GPU streams the K/V bytes of a B64 T2048 decode call (two 268 MB
// buffers of 2 KiB NHD rows: 8 heads x 128 dims, bf16) under the access patterns of dkb's producer CTAs,
// against the roofline's grid-stride read: the same 512 CTAs of 256 threads and 8 loads of 16 bytes in
// flight per thread in every pattern, so only the addresses differ. docs/kernels.md ("Read patterns")
// has what it measured on the H200. Each launch is timed by an event pair on an idle stream, so a
// median includes the launch's latency: compare the patterns with each other, not with dkb bench.
// usage: build/read-patterns [REPS]   (make build/read-patterns; prints three rounds of four medians)
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <random>
#include <cuda_runtime.h>

constexpr int H = 8, D = 128, ROWB = H * D * 2;  // 2 KiB rows: 8 heads x 128 dims bf16
constexpr int B = 64, T = 2048, NT = 256, IN = 8;  // 64 requests of 2048 keys; 256 threads, 8 loads in flight
constexpr long ROWS = (long)B * T;

__device__ __forceinline__ void acc4(float &a, const float4 v) { a += v.x + v.y + v.z + v.w; }

// 0: grid-stride over K then V (the roofline's pattern), 512 CTAs
__global__ void grid_stride(const float4 *k, const float4 *v, size_t n16, float *sink) {
  const size_t stride = (size_t)gridDim.x * blockDim.x;
  float a = 0.f;
  for (int buf = 0; buf < 2; buf++) {
    const float4 *s = buf ? v : k;
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + (IN - 1) * stride < n16; i += IN * stride) {
      float4 x[IN];
#pragma unroll
      for (int j = 0; j < IN; j++) x[j] = __ldcs(s + i + j * stride);
#pragma unroll
      for (int j = 0; j < IN; j++) acc4(a, x[j]);
    }
  }
  if (a == 1.2345e-37f) sink[0] = a;
}
// 1/3: CTA (h, b): head h's 256 B of each row of request b, K and V rows together, 16-row groups; page[]
// maps a 16-row group of the request to its group in the pool (identity: contiguous; shuffled: paged16)
__global__ void head_slice(const char *k, const char *v, const int *page, float *sink) {
  const int h = blockIdx.x, b = blockIdx.y, t = threadIdx.x;
  const int lane16 = t & 15, r = t >> 4;  // 16 threads per row slice, 16 rows per pass
  float a = 0.f;
  for (int r0 = 0; r0 < T; r0 += 16 * IN / 2) {  // 64 rows: 4 passes of K and 4 of V in flight
    float4 x[IN];
#pragma unroll
    for (int j = 0; j < IN / 2; j++) {
      const int row = r0 + j * 16 + r;
      const long g = (long)page[(b * T + row) / 16] * 16 + row % 16;
      const size_t off = (size_t)g * ROWB + h * 256 + lane16 * 16;
      x[j] = __ldcs(reinterpret_cast<const float4 *>(k + off));
      x[j + IN / 2] = __ldcs(reinterpret_cast<const float4 *>(v + off));
    }
#pragma unroll
    for (int j = 0; j < IN; j++) acc4(a, x[j]);
  }
  if (a == 1.2345e-37f) sink[0] = a;
}
// 2: CTA (c, b): whole rows (all heads) of chunk c of request b: 256 contiguous rows of K and of V
__global__ void whole_rows(const char *k, const char *v, float *sink) {
  const int c = blockIdx.x, b = blockIdx.y, t = threadIdx.x;
  const size_t base = ((size_t)b * T + (size_t)c * (T / H)) * ROWB, n = (size_t)(T / H) * ROWB;
  float a = 0.f;
  for (size_t o = 0; o < n; o += (size_t)NT * 16 * IN / 2) {
    float4 x[IN];
#pragma unroll
    for (int j = 0; j < IN / 2; j++) {
      const size_t off = base + o + ((size_t)j * NT + t) * 16;
      x[j] = __ldcs(reinterpret_cast<const float4 *>(k + off));
      x[j + IN / 2] = __ldcs(reinterpret_cast<const float4 *>(v + off));
    }
#pragma unroll
    for (int j = 0; j < IN; j++) acc4(a, x[j]);
  }
  if (a == 1.2345e-37f) sink[0] = a;
}

int main(int argc, char **argv) {
  const int reps = argc > 1 ? atoi(argv[1]) : 200;
  const size_t bytes = (size_t)ROWS * ROWB;
  char *k, *v; int *pid, *pshuf; float *sink;
  if (cudaMalloc(&k, bytes) || cudaMalloc(&v, bytes) || cudaMalloc(&sink, 4) || cudaMemset(k, 0, bytes) ||
      cudaMemset(v, 0, bytes)) {
    fprintf(stderr, "read-patterns: %s\n", cudaGetErrorString(cudaGetLastError()));
    return 1;
  }
  const int groups = (int)(ROWS / 16);
  std::vector<int> id(groups), sh(groups);
  for (int i = 0; i < groups; i++) id[i] = sh[i] = i;
  std::mt19937 rng(7);
  std::shuffle(sh.begin(), sh.end(), rng);
  cudaMalloc(&pid, groups * 4); cudaMalloc(&pshuf, groups * 4);
  cudaMemcpy(pid, id.data(), groups * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(pshuf, sh.data(), groups * 4, cudaMemcpyHostToDevice);
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  const char *names[4] = {"grid-stride (roofline)", "head slice, contiguous", "whole rows, 512 KB chunks", "head slice, shuffled 16-row pages"};
  for (int round = 0; round < 3; round++)
    for (int m = 0; m < 4; m++) {
      std::vector<float> us;
      for (int i = 0; i < reps + 5; i++) {
        cudaEventRecord(e0);
        if (m == 0) grid_stride<<<512, NT>>>((const float4 *)k, (const float4 *)v, bytes / 16, sink);
        else if (m == 1) head_slice<<<dim3(H, B), NT>>>(k, v, pid, sink);
        else if (m == 2) whole_rows<<<dim3(H, B), NT>>>(k, v, sink);
        else head_slice<<<dim3(H, B), NT>>>(k, v, pshuf, sink);
        cudaEventRecord(e1);
        cudaEventSynchronize(e1);
        float ms; cudaEventElapsedTime(&ms, e0, e1);
        if (i >= 5) us.push_back(ms * 1000.f);
      }
      std::sort(us.begin(), us.end());
      const double med = us[us.size() / 2];
      printf("round %d  %-36s median %8.2f us  %.3f TB/s  (p10 %.2f p90 %.2f)\n", round, names[m], med, 2.0 * bytes / med / 1e6,
             us[us.size() / 10], us[us.size() * 9 / 10]);
    }
  cudaError_t e = cudaGetLastError();
  printf("cuda: %s\n", cudaGetErrorString(e));
  return e == cudaSuccess ? 0 : 1;
}
