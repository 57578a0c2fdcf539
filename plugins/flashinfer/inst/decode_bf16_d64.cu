/* FlashInfer's CUDA-core batch decode: bf16, head dim 64, without and with a sliding window. */
#include "plugins/flashinfer/decode_inst.cuh"

DKBFI_DECODE_INSTANCE(decode_bf16_d64, nv_bfloat16, kBF16, 64, false)
DKBFI_DECODE_INSTANCE(decode_bf16_d64_swa, nv_bfloat16, kBF16, 64, true)
