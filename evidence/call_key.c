/* call_key.c - the call key's field table as data, and the ledgers it determines (see call_key.h). */
#include "evidence/call_key.h"

#include <stdio.h>

#include "oracles/dtype.h"

#define ROW(id, pointer, type, need) {#id, pointer, type, need},
const struct call_key_field call_key_fields[] = {CALL_KEY_FIELDS(ROW)};
#undef ROW
const size_t call_key_nfields = sizeof call_key_fields / sizeof *call_key_fields;

int64_t call_key_kv_bytes(int64_t keys, int64_t h_kv, int64_t d_qk, int64_t d_v, int64_t e_kv) {
  return keys * h_kv * (d_qk + d_v) * e_kv;
}

int64_t call_key_qo_bytes(int64_t b, int64_t s_q, int64_t h_q, int64_t d_qk, int64_t d_v, int64_t e_q, int64_t e_o) {
  return b * s_q * h_q * (d_qk * e_q + d_v * e_o);
}

static int int_member(const json_t *ck, const char *key, int64_t *out, char why[128]) {
  const json_t *v = json_object_get(ck, key);
  if (!json_is_integer(v) || json_integer_value(v) < 0) {
    snprintf(why, 128, "%s is not a count", key);
    return -1;
  }
  *out = json_integer_value(v);
  return 0;
}

static int dtype_member(const json_t *ck, const char *key, int64_t *out, char why[128]) {
  const char *s = json_string_value(json_object_get(ck, key));
  int t = s ? dkb_dtype_parse(s) : -1;
  if (t < 0) {
    snprintf(why, 128, "%s is not a dtype dkb knows", key);
    return -1;
  }
  *out = (int64_t)dkb_dtype_bytes((enum dkb_dtype)t);
  return 0;
}

int call_key_sizes_read(const json_t *ck, struct call_key_sizes *out, char why[128]) {
  if (int_member(ck, "B", &out->b, why) || int_member(ck, "S_q", &out->s_q, why) || int_member(ck, "H_q", &out->h_q, why) ||
      int_member(ck, "H_kv", &out->h_kv, why) || int_member(ck, "d_qk", &out->d_qk, why) ||
      int_member(ck, "d_v", &out->d_v, why) || dtype_member(ck, "q_dtype", &out->e_q, why) ||
      dtype_member(ck, "kv_dtype", &out->e_kv, why) ||
      dtype_member(ck, json_object_get(ck, "o_dtype") ? "o_dtype" : "q_dtype", &out->e_o, why))
    return -1;
  const json_t *sk = json_object_get(ck, "S_k_per_request");
  if (!json_is_array(sk)) {
    snprintf(why, 128, "S_k_per_request is not a list of counts");
    return -1;
  }
  out->keys = 0;
  for (size_t i = 0; i < json_array_size(sk); i++) {
    const json_t *n = json_array_get(sk, i);
    if (!json_is_integer(n) || json_integer_value(n) < 0) {
      snprintf(why, 128, "S_k_per_request/%zu is not a count", i);
      return -1;
    }
    out->keys += json_integer_value(n);
  }
  return 0;
}
