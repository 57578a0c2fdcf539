/* dtype.h - the storage dtypes of the article (0x03H) as the oracles see them: byte widths, exact
 * float16/bfloat16 encodings (round to nearest even), and rounding a double to a dtype's value set.
 * The input generator stores tensors through these functions and the oracle widens them back, so the
 * GPU and the float64 reference read the same values. */
#ifndef DKB_DTYPE_H
#define DKB_DTYPE_H

#include <stddef.h>
#include <stdint.h>

enum dkb_dtype { DKB_F16, DKB_BF16, DKB_F32, DKB_F64, DKB_U8, DKB_I32, DKB_I64, DKB_DTYPE_COUNT };

/* "fp16", "bf16", "fp32", "fp64", "uint8", "int32", "int64". */
const char *dkb_dtype_name(enum dkb_dtype t);
/* -1 when the name is unknown. */
int dkb_dtype_parse(const char *name);
size_t dkb_dtype_bytes(enum dkb_dtype t);

uint16_t dkb_f16_from_double(double x);
double dkb_f16_to_double(uint16_t h);
uint16_t dkb_bf16_from_double(double x);
double dkb_bf16_to_double(uint16_t h);
/* The nearest value of dtype t (round to nearest even); identity for fp64, float rounding for fp32. */
double dkb_round_to(enum dkb_dtype t, double x);
/* Reads element i of a buffer stored as t, widened to double. */
double dkb_load(enum dkb_dtype t, const void *base, size_t i);
/* Stores x rounded to t as element i. */
void dkb_store(enum dkb_dtype t, void *base, size_t i, double x);

#endif
