/* dtype.c - exact fp16/bf16 encodings and dtype-generic loads and stores (see dtype.h). */
#include "oracles/dtype.h"

#include <math.h>
#include <string.h>

static const char *const NAMES[DKB_DTYPE_COUNT] = {"fp16", "bf16", "fp32", "fp64", "uint8", "int32", "int64"};
static const size_t BYTES[DKB_DTYPE_COUNT] = {2, 2, 4, 8, 1, 4, 8};

const char *dkb_dtype_name(enum dkb_dtype t) { return (unsigned)t < DKB_DTYPE_COUNT ? NAMES[t] : "?"; }
size_t dkb_dtype_bytes(enum dkb_dtype t) { return (unsigned)t < DKB_DTYPE_COUNT ? BYTES[t] : 0; }

int dkb_dtype_parse(const char *name) {
  for (int i = 0; i < DKB_DTYPE_COUNT; i++)
    if (!strcmp(NAMES[i], name)) return i;
  return -1;
}

/* Binary16-like encoder for `mant` stored mantissa bits and exponent bias `bias` (fp16: 10, 15;
 * bf16: 7, 127), round to nearest even, overflow to infinity, gradual underflow. */
static uint16_t encode(double x, int mant, int ebits, int bias) {
  uint16_t sign = signbit(x) ? (uint16_t)(1u << 15) : 0;
  uint16_t einf = (uint16_t)(((1u << ebits) - 1) << mant);
  if (isnan(x)) return (uint16_t)(sign | einf | (1u << (mant - 1)));
  x = fabs(x);
  if (isinf(x)) return (uint16_t)(sign | einf);
  if (x == 0) return sign;
  int e;
  frexp(x, &e);                    /* x = f * 2^e, f in [0.5, 1) */
  int emin = 1 - bias;             /* smallest normal exponent (value 2^emin) */
  int q = (e - 1 < emin ? emin : e - 1) - mant;  /* exponent of one unit in the last place */
  double units = nearbyint(ldexp(x, -q));        /* default rounding mode: nearest, ties to even */
  double r = ldexp(units, q);
  if (r == 0) return sign;
  frexp(r, &e);
  int be = e - 1 + bias;           /* biased exponent after rounding (may carry) */
  if (be >= (1 << ebits) - 1) return (uint16_t)(sign | einf);
  if (e - 1 < emin) return (uint16_t)(sign | (uint16_t)units);  /* subnormal */
  uint32_t frac = (uint32_t)(ldexp(r, mant - (e - 1)) - ldexp(1.0, mant));
  return (uint16_t)(sign | ((uint32_t)be << mant) | frac);
}

static double decode(uint16_t h, int mant, int ebits, int bias) {
  int s = h >> 15;
  int be = (h >> mant) & ((1 << ebits) - 1);
  uint32_t frac = h & ((1u << mant) - 1);
  double v;
  if (be == (1 << ebits) - 1) v = frac ? NAN : INFINITY;
  else if (be == 0) v = ldexp((double)frac, 1 - bias - mant);
  else v = ldexp((double)(frac | (1u << mant)), be - bias - mant);
  return s ? -v : v;
}

uint16_t dkb_f16_from_double(double x) { return encode(x, 10, 5, 15); }
double dkb_f16_to_double(uint16_t h) { return decode(h, 10, 5, 15); }
uint16_t dkb_bf16_from_double(double x) { return encode(x, 7, 8, 127); }
double dkb_bf16_to_double(uint16_t h) { return decode(h, 7, 8, 127); }

double dkb_round_to(enum dkb_dtype t, double x) {
  switch (t) {
  case DKB_F16: return dkb_f16_to_double(dkb_f16_from_double(x));
  case DKB_BF16: return dkb_bf16_to_double(dkb_bf16_from_double(x));
  case DKB_F32: return (double)(float)x;
  default: return x;
  }
}

double dkb_load(enum dkb_dtype t, const void *base, size_t i) {
  switch (t) {
  case DKB_F16: return dkb_f16_to_double(((const uint16_t *)base)[i]);
  case DKB_BF16: return dkb_bf16_to_double(((const uint16_t *)base)[i]);
  case DKB_F32: return ((const float *)base)[i];
  case DKB_F64: return ((const double *)base)[i];
  case DKB_U8: return ((const uint8_t *)base)[i];
  case DKB_I32: return ((const int32_t *)base)[i];
  case DKB_I64: return (double)((const int64_t *)base)[i];
  default: return NAN;
  }
}

void dkb_store(enum dkb_dtype t, void *base, size_t i, double x) {
  switch (t) {
  case DKB_F16: ((uint16_t *)base)[i] = dkb_f16_from_double(x); break;
  case DKB_BF16: ((uint16_t *)base)[i] = dkb_bf16_from_double(x); break;
  case DKB_F32: ((float *)base)[i] = (float)x; break;
  case DKB_F64: ((double *)base)[i] = x; break;
  case DKB_U8: ((uint8_t *)base)[i] = (uint8_t)x; break;
  case DKB_I32: ((int32_t *)base)[i] = (int32_t)x; break;
  case DKB_I64: ((int64_t *)base)[i] = (int64_t)x; break;
  default: break;
  }
}
