// scan_sample.cu - input for the source-manifest scanner test (tests/test_provenance.c): each
// definition below hides a brace, a name or a template in a place a naive scanner gets wrong.
#include <cuda_runtime.h>
#define OPEN_BRACE {
#define FAKE_DEF(x) int x(void) { return 0; }

/* int scan_plain(void) { a definition inside a comment must not count } */
static const char *decoy = "scan_plain(void) { not code }";
static const char decoy_c = '{';

int scan_plain(void);  // a declaration, not a definition

static int scan_plain_helper(int v) { return scan_plain() + v; }

int scan_plain(void)
{
  const char *s = "}";   /* a brace in a string */
  char c = '}';          // and in a character literal
  (void)s; (void)c;
  return 1'000 + '\'';   // digit separators and an escaped quote
}

template <typename T, int kHeadDim>
__global__ void __launch_bounds__(256, 2)
scan_kernel(const T *__restrict__ q, T *out, int n) {
  struct Local { int x; } l = {0};
  if (n > 0) {
    out[0] = q[0] + (T)l.x;
  }
}

extern "C" {
__global__ void scan_extern_c_kernel(float *p) { p[threadIdx.x] = 0.f; }
}

namespace dkb_scan {
int scan_in_namespace(int a,
                      int b)
{
  auto raw = R"x(scan_in_namespace(int) { } )x";
  (void)raw;
  return a + b;
}
}  // namespace dkb_scan

void scan_launcher(float *p) {
  scan_kernel<float, 128><<<1, 32>>>(p, p, 1);
  scan_extern_c_kernel<<<1, 32>>>(p);
}
