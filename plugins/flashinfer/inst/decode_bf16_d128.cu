/* FlashInfer's CUDA-core batch decode: bf16, head dim 128, without and with a sliding window. */
#include "plugins/flashinfer/decode_inst.cuh"

DKBFI_DECODE_INSTANCE(decode_bf16_d128, nv_bfloat16, kBF16, 128, false)
DKBFI_DECODE_INSTANCE(decode_bf16_d128_swa, nv_bfloat16, kBF16, 128, true)
