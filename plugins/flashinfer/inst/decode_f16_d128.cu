/* FlashInfer's CUDA-core batch decode: fp16, head dim 128, without and with a sliding window. */
#include "plugins/flashinfer/decode_inst.cuh"

DKBFI_DECODE_INSTANCE(decode_f16_d128, half, kF16, 128, false)
DKBFI_DECODE_INSTANCE(decode_f16_d128_swa, half, kF16, 128, true)
