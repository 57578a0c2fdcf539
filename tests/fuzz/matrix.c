/* libFuzzer target: a bench matrix (dkb bench --matrix's input) from arbitrary bytes. Its cases name
 * fixture files relative to it: it is written into DKB_FUZZ_DIR (tools/fuzz.sh links the bench fixtures
 * there), and a refusal may name the fixture instead of the matrix. */
#include "fuzz.h"
#include "harness/bench.h"

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) {
  const char *path = fuzz_file(d, n, getenv("DKB_FUZZ_DIR"), "matrix");
  struct bench_matrix m;
  struct dkb_err err;
  dkb_err_clear(&err);
  if (bench_matrix_load(path, &m, &err)) fuzz_require_input_error(&err, err.file[0] ? err.file : path);
  bench_matrix_release(&m);
  return 0;
}
