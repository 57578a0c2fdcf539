// inject_test.cu - the GPU test program of dkb's injection library (tests/test_trace.c,
// tools/trace-examples.sh): the same output with and without `dkb trace`, and every launch attributed.
// usage: inject_test MODE [CALL_KEY_FILE]
//   ok             THREADS threads, each on its own stream inside its own range "inject/thread<i>":
//                  kernels, a memset, a device-to-host copy, and a CUDA graph captured and replayed twice;
//                  the main thread runs one "dkb/call/<key>" range (the key file's contents) with a kernel
//   nvtx-first     a range pushed before the first CUDA call (before cuInit loads the injection)
//   open           a range left open when main returns
//   exit-in-range  exit(7) from inside a range, after its kernels finished
//   exit-unsynced  exit(7) from inside a range while its kernel may still run
// Prints one line per thread with a checksum of what its kernels wrote, checked on the host; exit 1 when
// a value is wrong, 2 on a usage error, 4 when there is no GPU.
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { THREADS = 4, N = 1 << 20, REPEAT = 3 };

__global__ void inject_test_fill(uint32_t *x, int n, uint32_t seed) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = seed * 2654435761u + (uint32_t)i;
}

__global__ void inject_test_add(uint32_t *x, int n, uint32_t v) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += v;
}

static int check(const char *what, cudaError_t e) {
  if (e == cudaSuccess) return 0;
  fprintf(stderr, "inject_test: %s: %s\n", what, cudaGetErrorString(e));
  return 1;
}

// What thread t's buffer must hold after its work: fill(seed t) then REPEAT adds of 1 in kernels, two
// graph replays of add 5, all on the thread's stream.
static uint64_t expected_sum(uint32_t seed) {
  uint64_t s = 0;
  for (uint32_t i = 0; i < N; i++) s += (uint32_t)(seed * 2654435761u + i + REPEAT + 10);
  return s;
}

struct job { int t; int failed; uint64_t sum; };

static void *thread_main(void *arg) {
  struct job *j = (struct job *)arg;
  char name[64];
  snprintf(name, sizeof name, "inject/thread%d", j->t);
  cudaStream_t s;
  uint32_t *d = NULL, *h = NULL;
  cudaGraph_t g;
  cudaGraphExec_t ge;
  j->failed = 1;
  if (check("stream", cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)) || check("malloc", cudaMalloc(&d, N * 4)) ||
      check("host", cudaMallocHost(&h, N * 4)))
    return NULL;
  nvtxRangePushA(name);
  if (check("memset", cudaMemsetAsync(d, 0, N * 4, s))) return NULL;
  inject_test_fill<<<N / 256, 256, 0, s>>>(d, N, (uint32_t)j->t);
  for (int r = 0; r < REPEAT; r++) inject_test_add<<<N / 256, 256, 0, s>>>(d, N, 1);
  // a graph: captured here (its launch does not execute), replayed twice (those kernels do)
  if (check("capture", cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal))) return NULL;
  inject_test_add<<<N / 256, 256, 0, s>>>(d, N, 5);
  if (check("end capture", cudaStreamEndCapture(s, &g)) || check("instantiate", cudaGraphInstantiate(&ge, g, 0)))
    return NULL;
  for (int r = 0; r < 2; r++)
    if (check("graph launch", cudaGraphLaunch(ge, s))) return NULL;
  if (check("copy", cudaMemcpyAsync(h, d, N * 4, cudaMemcpyDeviceToHost, s))) return NULL;
  nvtxRangePop();
  if (check("sync", cudaStreamSynchronize(s))) return NULL;
  uint64_t sum = 0;
  for (int i = 0; i < N; i++) sum += h[i];
  j->sum = sum;
  j->failed = sum != expected_sum((uint32_t)j->t);
  cudaGraphExecDestroy(ge);
  cudaGraphDestroy(g);
  cudaFreeHost(h);
  cudaFree(d);
  cudaStreamDestroy(s);
  return NULL;
}

static int call_range(const char *key_file, uint32_t **d) {
  static char name[1 << 16] = "dkb/call/{}";
  if (key_file) {
    FILE *f = fopen(key_file, "rb");
    if (!f) { perror(key_file); return 2; }
    size_t n = fread(name + 9, 1, sizeof name - 10, f);
    fclose(f);
    while (n && (name[9 + n - 1] == '\n' || name[9 + n - 1] == '\r')) n--;
    name[9 + n] = '\0';
  }
  if (check("malloc", cudaMalloc(d, N * 4))) return 1;
  nvtxRangePushA(name);
  inject_test_fill<<<N / 256, 256>>>(*d, N, 99);
  return check("launch", cudaGetLastError());
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "ok";
  const char *key = argc > 2 ? argv[2] : NULL;
  if (strcmp(mode, "ok") && strcmp(mode, "nvtx-first") && strcmp(mode, "open") && strcmp(mode, "exit-in-range") &&
      strcmp(mode, "exit-unsynced")) {
    fprintf(stderr, "usage: inject_test ok|nvtx-first|open|exit-in-range|exit-unsynced [CALL_KEY_FILE]\n");
    return 2;
  }
  if (!strcmp(mode, "nvtx-first")) nvtxRangePushA("inject/before-cuinit");
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    fprintf(stderr, "inject_test: no GPU\n");
    return 4;
  }
  uint32_t *d = NULL;
  int rc = call_range(key, &d);
  if (rc) return rc;
  if (!strcmp(mode, "exit-unsynced")) exit(7);
  if (check("sync", cudaDeviceSynchronize())) return 1;
  if (!strcmp(mode, "exit-in-range")) exit(7);
  if (strcmp(mode, "open")) nvtxRangePop();
  struct job jobs[THREADS];
  pthread_t th[THREADS];
  for (int t = 0; t < THREADS; t++) {
    jobs[t].t = t;
    pthread_create(&th[t], NULL, thread_main, &jobs[t]);
  }
  int failed = 0;
  for (int t = 0; t < THREADS; t++) {
    pthread_join(th[t], NULL);
    printf("thread %d sum %llu %s\n", t, (unsigned long long)jobs[t].sum, jobs[t].failed ? "WRONG" : "ok");
    failed |= jobs[t].failed;
  }
  if (!strcmp(mode, "nvtx-first")) nvtxRangePop();
  cudaFree(d);
  return failed;
}
