/* libFuzzer target: a contract fixture (dkb oracle's input) from arbitrary bytes: parse and evaluate. */
#include "fuzz.h"
#include "harness/jread.h"
#include "oracles/contract.h"

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) {
  char *s = fuzz_text(d, n);
  struct dkb_err err;
  dkb_err_clear(&err);
  json_t *doc = jr_load_string(s, "fuzz.json", &err);
  if (!doc) {
    fuzz_require_input_error(&err, "fuzz.json");
  } else {
    struct oracle_outcome o;
    memset(&o, 0, sizeof o);
    if (oracle_run_fixture("fuzz.json", doc, &o, &err)) fuzz_require_input_error(&err, "fuzz.json");
    oracle_outcome_release(&o);
    json_decref(doc);
  }
  free(s);
  return 0;
}
