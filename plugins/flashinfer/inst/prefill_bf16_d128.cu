/* FlashInfer's tensor-core decode (FA2 batch prefill, one query row): bf16, head dim 128,
 * without and with a sliding window. */
#include "plugins/flashinfer/prefill_inst.cuh"

DKBFI_PREFILL_INSTANCE(prefill_bf16_d128, nv_bfloat16, kBF16, 128, false)
DKBFI_PREFILL_INSTANCE(prefill_bf16_d128_swa, nv_bfloat16, kBF16, 128, true)
