/* libFuzzer target: a decode fixture (dkb run's input) from arbitrary bytes: parse, check, call key. */
#include "fuzz.h"
#include "harness/decode_call.h"
#include "harness/jread.h"

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) {
  char *s = fuzz_text(d, n);
  struct dkb_err err;
  dkb_err_clear(&err);
  json_t *doc = jr_load_string(s, "fuzz.json", &err);
  if (!doc) {
    fuzz_require_input_error(&err, "fuzz.json");
  } else {
    struct decode_call c;
    if (decode_call_from_json("fuzz.json", doc, &c, &err)) {
      fuzz_require_input_error(&err, "fuzz.json");
    } else {
      json_decref(decode_call_key(&c));
      (void)decode_call_kv_bytes(&c);
      (void)decode_call_qo_bytes(&c);
    }
    decode_call_release(&c);
    json_decref(doc);
  }
  free(s);
  return 0;
}
