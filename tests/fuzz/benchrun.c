/* libFuzzer target: a bench result (dkb compare's input, bench.json of another run) from arbitrary bytes. */
#include "fuzz.h"
#include "harness/bench_diff.h"

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) {
  const char *path = fuzz_file(d, n, NULL, "dkb-fuzz-benchrun");
  struct bench_run r;
  struct dkb_err err;
  dkb_err_clear(&err);
  if (bench_run_load(path, &r, &err)) fuzz_require_input_error(&err, path);
  bench_run_release(&r);
  return 0;
}
