/* FlashInfer's CUDA-core batch decode: bf16, head dim 256, without and with a sliding window. */
#include "plugins/flashinfer/decode_inst.cuh"

DKBFI_DECODE_INSTANCE(decode_bf16_d256, nv_bfloat16, kBF16, 256, false)
DKBFI_DECODE_INSTANCE(decode_bf16_d256_swa, nv_bfloat16, kBF16, 256, true)
