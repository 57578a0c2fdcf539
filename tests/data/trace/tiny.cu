// tiny.cu - three kernels compiled to a cubin for tests/test_trace.c: the injection library's module record
// must list every symbol, the one with internal linkage too, and hash the bytes as libcrypto does.
extern "C" __global__ void dkb_tiny_plain(float *x) { x[threadIdx.x] = 1.0f; }
template <int N> __global__ void dkb_tiny_template(float *x) { x[threadIdx.x] = N; }
template __global__ void dkb_tiny_template<3>(float *);
namespace {
__global__ void dkb_tiny_internal(float *x) { x[threadIdx.x] = 2.0f; }
}
void *dkb_tiny_internal_address() { return (void *)dkb_tiny_internal; }
