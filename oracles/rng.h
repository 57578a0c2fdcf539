/* rng.h - the one deterministic generator (splitmix64): seeded inputs, random partitions and test
 * data are reproducible from the seed frozen in a fixture, on every machine. */
#ifndef DKB_RNG_H
#define DKB_RNG_H

#include <stdint.h>

struct dkb_rng { uint64_t s; };

static inline void dkb_rng_seed(struct dkb_rng *r, uint64_t seed) { r->s = seed; }
static inline uint64_t dkb_rng_u64(struct dkb_rng *r) {
  uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
/* Uniform in [0, 1) with 53 random bits. */
static inline double dkb_rng_unit(struct dkb_rng *r) { return (double)(dkb_rng_u64(r) >> 11) * 0x1.0p-53; }
/* Uniform in [lo, hi). */
static inline double dkb_rng_uniform(struct dkb_rng *r, double lo, double hi) { return lo + (hi - lo) * dkb_rng_unit(r); }
/* Uniform integer in [0, n), n > 0. */
static inline uint64_t dkb_rng_below(struct dkb_rng *r, uint64_t n) { return dkb_rng_u64(r) % n; }

#endif
