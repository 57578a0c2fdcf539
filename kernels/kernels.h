/* kernels.h - the plain C face of dkb's CUDA code. Everything here is callable from C11; the .cu
 * files behind it hold the kernels. Launch wrappers return a cudaError_t value as int (0 = success)
 * and never exit: the harness turns a failure into evidence with a reason. */
#ifndef DKB_KERNELS_H
#define DKB_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Streaming-read roofline (roofline.cu): reads n16 16-byte vectors from src with evict-first loads
 * and folds them into sink[0] so the loads cannot be removed. grid 0 picks 8 CTAs per SM. */
int dkb_roofline_read(const void *src, size_t n16, float *sink, int grid, void *stream);
/* Names of the kernel symbols roofline.cu defines, for matching CUPTI records. */
extern const char *const dkb_roofline_symbol;
/* An empty kernel (roofline.cu, one CTA of 32 threads): what the timing method measures for no work. */
int dkb_empty_launch(void *stream);
extern const char *const dkb_empty_symbol;
/* The L2 flush of the cold timing pass (roofline.cu): reads bytes (a multiple of 16) of buf, which the
 * caller zeroed once, through L2, so the lines left there are clean (see dkb_l2_flush_v1). */
int dkb_l2_flush(const void *buf, size_t bytes, void *stream);

/* Stream hold (hold.cu): one thread spins until flag_dev[0] != 0, or sets flag_dev[1] and returns after
 * timeout_ns. flag_dev is the device address of host-mapped memory the host writes. */
int dkb_hold_stream(volatile int *flag_dev, unsigned long long timeout_ns, void *stream);

#ifdef __cplusplus
}
#endif

#endif
