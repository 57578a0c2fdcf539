/* FlashInfer's tensor-core decode (FA2 batch prefill, one query row): fp16, head dim 128,
 * without and with a sliding window. */
#include "plugins/flashinfer/prefill_inst.cuh"

DKBFI_PREFILL_INSTANCE(prefill_f16_d128, half, kF16, 128, false)
DKBFI_PREFILL_INSTANCE(prefill_f16_d128_swa, half, kF16, 128, true)
