/* libFuzzer target: a contract fixture (dkb oracle's input) from arbitrary bytes: parse and evaluate. */
#include "fuzz.h"
#include "contracts/contract.h"

static int check(json_t *doc, struct dkb_err *err) {
  struct oracle_outcome o;
  memset(&o, 0, sizeof o);
  const int rc = oracle_run_fixture("fuzz.json", doc, &o, err);
  oracle_outcome_release(&o);
  return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { return fuzz_json(d, n, check); }
