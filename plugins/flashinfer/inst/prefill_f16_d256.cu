/* FlashInfer's tensor-core decode (FA2 batch prefill, one query row): fp16, head dim 256,
 * without and with a sliding window. */
#include "plugins/flashinfer/prefill_inst.cuh"

DKBFI_PREFILL_INSTANCE(prefill_f16_d256, half, kF16, 256, false)
DKBFI_PREFILL_INSTANCE(prefill_f16_d256_swa, half, kF16, 256, true)
