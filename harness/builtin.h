/* builtin.h - dkb's own backends, dkb_split_kv and dkb_naive_reference, as tables of the backend ABI
 * (harness/builtin.c). Their self->user is the call's struct builtin_ctx (harness/backends.h). */
#ifndef DKB_BUILTIN_H
#define DKB_BUILTIN_H

#include "harness/backends.h"
#include "harness/plan.h"
#include "kernels/decode.h"

/* The planner's options for dkb's split-KV kernels on call c (tile, wave) over sm_count SMs (0: none);
 * device: the ordinal of the device that runs the kernels, whose resident CTAs per SM (dkb_decode_occupancy)
 * and DRAM rate the plan then counts; -1 where none runs them. */
struct plan_opts builtin_plan_opts(const struct decode_call *c, int sm_count, int device);

/* Copies the two tables into out with user = ctx. */
void builtin_tables(struct dkb_backend out[2], struct builtin_ctx *ctx);

/* The binary and PTX versions of the kernels a dkb backend's plan launches (cudaFuncGetAttributes: dkb
 * can ask only of code it links); the count, or 0 when t is not one of dkb's tables. */
int builtin_kernel_binaries(const struct dkb_backend *t, void *state, struct dkb_kernel_info *out, int cap);

#endif
