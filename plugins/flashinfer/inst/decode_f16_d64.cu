/* FlashInfer's CUDA-core batch decode: fp16, head dim 64, without and with a sliding window. */
#include "plugins/flashinfer/decode_inst.cuh"

DKBFI_DECODE_INSTANCE(decode_f16_d64, half, kF16, 64, false)
DKBFI_DECODE_INSTANCE(decode_f16_d64_swa, half, kF16, 64, true)
