/* FlashInfer's CUDA-core batch decode: fp16, head dim 256, without and with a sliding window. */
#include "plugins/flashinfer/decode_inst.cuh"

DKBFI_DECODE_INSTANCE(decode_f16_d256, half, kF16, 256, false)
DKBFI_DECODE_INSTANCE(decode_f16_d256_swa, half, kF16, 256, true)
