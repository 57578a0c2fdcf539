/* libFuzzer target: a decode fixture (dkb run's input) from arbitrary bytes: parse, check, call key. */
#include "fuzz.h"
#include "harness/decode_call.h"

static int check(json_t *doc, struct dkb_err *err) {
  struct decode_call c;
  const int rc = decode_call_from_json("fuzz.json", doc, &c, err);
  if (!rc) {
    json_decref(decode_call_key(&c));
    (void)decode_call_kv_bytes(&c);
    (void)decode_call_qo_bytes(&c);
  }
  decode_call_release(&c);
  return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { return fuzz_json(d, n, check); }
