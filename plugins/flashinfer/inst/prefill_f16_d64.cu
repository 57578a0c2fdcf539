/* FlashInfer's tensor-core decode (FA2 batch prefill, one query row): fp16, head dim 64,
 * without and with a sliding window. */
#include "plugins/flashinfer/prefill_inst.cuh"

DKBFI_PREFILL_INSTANCE(prefill_f16_d64, half, kF16, 64, false)
DKBFI_PREFILL_INSTANCE(prefill_f16_d64_swa, half, kF16, 64, true)
