// tiny.cu - two kernels compiled to a cubin for tests/test_trace.c: the injection library's module record
// must list both symbols and hash the bytes as libcrypto does.
extern "C" __global__ void dkb_tiny_plain(float *x) { x[threadIdx.x] = 1.0f; }
template <int N> __global__ void dkb_tiny_template(float *x) { x[threadIdx.x] = N; }
template __global__ void dkb_tiny_template<3>(float *);
