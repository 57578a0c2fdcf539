/* FlashInfer's tensor-core decode (FA2 batch prefill, one query row): bf16, head dim 256,
 * without and with a sliding window. */
#include "plugins/flashinfer/prefill_inst.cuh"

DKBFI_PREFILL_INSTANCE(prefill_bf16_d256, nv_bfloat16, kBF16, 256, false)
DKBFI_PREFILL_INSTANCE(prefill_bf16_d256_swa, nv_bfloat16, kBF16, 256, true)
