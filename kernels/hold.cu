// hold.cu - the stream-holding kernel of the timing pass (nvbench's "blocking kernel"): it spins on a
// host-mapped flag so the host can enqueue the start event, the call and the stop event behind it,
// then release them together. The events then bracket GPU work only, not the host's launch calls.
#include <cuda_runtime.h>

#include "kernels/kernels.h"

// flag[0]: the host sets it to release the stream; flag[1]: set here when the wait gave up.
extern "C" __global__ void dkb_hold_stream_v1(volatile int *flag, unsigned long long timeout_ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  while (flag[0] == 0) {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    if (t - t0 > timeout_ns) {  // never hang the device on a host that stopped: say so instead
      flag[1] = 1;
      return;
    }
    __nanosleep(500);
  }
}

extern "C" int dkb_hold_stream(volatile int *flag_dev, unsigned long long timeout_ns, void *stream) {
  dkb_hold_stream_v1<<<1, 1, 0, (cudaStream_t)stream>>>(flag_dev, timeout_ns);
  return (int)cudaGetLastError();
}
