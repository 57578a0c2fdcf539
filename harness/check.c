/* check.c - a dump checked against the float64 oracle (see check.h). */
#include "harness/check.h"
#include "harness/decode_ref.h"
#include "harness/dump_read.h"
#include "harness/run_evidence.h"
#include "oracles/dtype.h"
#include "oracles/kv_address.h"
#include "oracles/mask.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static json_t *call_summary(const struct decode_call *c) {
  return json_pack("{s:i,s:i,s:i,s:i,s:i,s:i,s:s,s:s,s:s,s:s}", "B", c->B, "S_q", c->C, "H_q", c->H_q, "H_kv", c->H_kv,
                   "d_qk", c->dk, "d_v", c->dv, "dtype", dkb_dtype_name((enum dkb_dtype)c->dtype), "phase",
                   c->phase == PHASE_APPEND ? "append" : "decode", "layout", kv_layout_name((enum kv_layout_kind)c->layout),
                   "mask", mask_kind_name((enum mask_kind)c->mask_kind));
}

int check_dump(const char *dir, json_t **report, struct check_summary *s, struct dkb_err *err) {
  *report = NULL;
  memset(s, 0, sizeof *s);
  struct dump_call d;
  if (dump_read(dir, &d, err)) return -1;
  const struct decode_call *c = &d.c;
  const size_t rows = (size_t)c->B * c->C * c->H_q;
  double *o_ref = DKB_MALLOC(rows * (size_t)c->dv * sizeof *o_ref), *lse_ref = DKB_MALLOC(rows * sizeof *lse_ref);
  decode_ref_compute(c, &d.in, o_ref, lse_ref);
  int64_t visible = 0, empty = 0;
  decode_ref_visibility(c, &d.in, &visible, &empty);
  struct dkb_plan plan;
  memset(&plan, 0, sizeof plan);
  plan.lse_base = d.lse_base;
  plan.empty_row = d.empty_row;
  struct run_check chk = {c, &d.in, &plan, o_ref, lse_ref, d.o, d.lse, d.k_after, d.v_after};
  struct run_check_result cr;
  json_t *corr = run_evidence_correctness(&chk, &cr);
  json_object_set_new(corr, "all_masked_rows", json_integer((json_int_t)empty));
  json_object_set_new(corr, "visible_cells", json_integer((json_int_t)visible));
  json_t *producer = json_object_get(d.index, "producer");
  *report = json_pack("{s:s,s:s,s:s,s:s,s:o,s:O,s:{s:s,s:s},s:o,s:b}", "schema", "dkb.check-report/v1", "dump", dir,
                      "index_sha256", d.index_sha256, "call_key_sha256", d.call_key_sha256, "call", call_summary(c),
                      "producer", producer ? producer : json_null(), "candidate", "lse_base",
                      d.lse_base == 2 ? "base2" : "natural", "empty_row",
                      d.empty_row == 1 ? "zero_neginf" : d.empty_row == 2 ? "zero_posinf" : "nan", "correctness", corr,
                      "passed", cr.passed);
  s->passed = cr.passed;
  s->out_max_abs = cr.out.max_abs;
  s->out_max_ratio = cr.out.max_ratio;
  s->lse_max_abs = cr.lse.max_abs;
  s->out_violations = (long long)cr.out.violations;
  s->nan = (long long)cr.out.nan_got;
  s->all_masked_rows = empty;
  memcpy(s->call_key_sha256, d.call_key_sha256, 65);
  free(o_ref);
  free(lse_ref);
  dump_call_release(&d);
  return 0;
}
