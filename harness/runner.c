/* runner.c - `dkb run` as one function (see runner.h). Each stage adds its section to the bundle;
 * a stage that cannot run records why and the ladder decides the level. */
#include "harness/runner.h"
#include "harness/backends.h"
#include "lib/cjson.h"
#include "harness/decode_ref.h"
#include "harness/decode_dump.h"
#include "harness/device.h"
#include "lib/fsutil.h"
#include "harness/gpu_call.h"
#include "harness/gpucheck.h"
#include "harness/inputs.h"
#include "harness/loadmap.h"
#include "harness/nvml.h"
#include "harness/plan.h"
#include "harness/provenance.h"
#include "lib/sha256.h"
#include "harness/trace.h"
#include "harness/counters.h"
#include "evidence/bundle.h"
#include "kernels/decode.h"
#include "oracles/compare.h"
#include "oracles/dtype.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

static void progress(const struct run_opts *o, const char *stage, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void progress(const struct run_opts *o, const char *stage, const char *fmt, ...) {
  if (!o->progress) return;
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  o->progress(o->progress_ctx, stage, buf);
}

void run_result_release(struct run_result *r) {
  json_decref(r->bundle);
  memset(r, 0, sizeof *r);
}

/* ---- levels 1-2: the source manifest generated at build time ---------------------------------- */
static int add_source(json_t *bundle, struct dkb_err *err) {
  char hex[65];
  json_t *m = dkb_provenance_load(dkb_source_manifest_json, "source manifest", hex, err);
  if (!m) return -1;
  json_t *files = json_array(), *nodes = json_array(), *edges = json_array();
  size_t i;
  json_t *f, *s;
  json_array_foreach(json_object_get(m, "files"), i, f) {
    json_t *syms = json_array();
    size_t k;
    json_array_foreach(json_object_get(m, "symbols"), k, s) {
      if (strcmp(json_string_value(json_object_get(s, "path")), json_string_value(json_object_get(f, "path")))) continue;
      json_array_append_new(syms, json_pack("{s:O,s:O,s:O}", "name", json_object_get(s, "symbol"), "role",
                                            json_object_get(s, "kind"), "lines", json_object_get(s, "span")));
    }
    json_array_append_new(files, json_pack("{s:O,s:O,s:o}", "path", json_object_get(f, "path"), "sha256",
                                           json_object_get(f, "sha256"), "symbols", syms));
  }
  json_t *chain = json_object_get(m, "chain");
  json_array_foreach(json_object_get(chain, "nodes"), i, s)
    json_array_append_new(nodes, json_pack("{s:O,s:O,s:O,s:O}", "id", json_object_get(s, "symbol"), "layer",
                                           json_object_get(s, "layer"), "path", json_object_get(s, "path"), "symbol",
                                           json_object_get(s, "symbol")));
  json_array_foreach(json_object_get(chain, "edges"), i, s)
    json_array_append_new(edges, json_pack("[O,O]", json_object_get(s, "from"), json_object_get(s, "to")));
  json_object_set_new(bundle, "source", json_pack("{s:O,s:O,s:o}", "commit", json_object_get(m, "commit"), "dirty",
                                                  json_object_get(m, "dirty"), "files", files));
  json_object_set_new(bundle, "chain", json_pack("{s:o,s:o,s:[s,s,s,s,s,s]}", "nodes", nodes, "edges", edges,
                                                 "required_layers", "cmd", "plan", "admission", "launch", "producer",
                                                 "combine"));
  json_decref(m);
  return 0;
}

/* ---- correctness: the one tolerance rule over O, LSE and the cache ----------------------------- */
struct typed { enum dkb_dtype t; const void *p; };
static double get_typed(const void *base, size_t i) {
  const struct typed *x = base;
  return dkb_load(x->t, x->p, i);
}

static json_t *cmp_json(const struct dkb_cmp *c) {
  return json_pack("{s:I,s:I,s:I,s:I,s:f,s:f,s:f,s:o}", "n", (json_int_t)c->n, "violations", (json_int_t)c->violations,
                   "nan", (json_int_t)c->nan_got, "inf", (json_int_t)c->inf_got, "max_abs", c->max_abs, "max_rel",
                   c->max_rel, "max_ratio", c->max_ratio, "worst_index", c->n ? json_integer((json_int_t)c->worst) : json_null());
}

/* ---- level 3: what is loaded in this process --------------------------------------------------- */
static int add_loaded(json_t *bundle, const char *dir, const struct dkb_device_info *dev,
                      const struct dkb_kernel_info *kin, int nk, struct dkb_err *err) {
  struct dkb_loadmap lm;
  memset(&lm, 0, sizeof lm);
  struct dkb_buf b;
  dkb_buf_init(&b);
  json_t *loaded = json_object(), *ref = NULL;
  char hex[65];
  int rc = -1;
  if (dkb_loadmap_capture(&lm, err) || dkb_loadmap_artifact(&lm, &b, hex, err)) goto cleanup;
  if (bundle_add_artifact(bundle, dir, "loader-map", "json", b.p, b.n, &ref, err)) goto cleanup;
  json_object_set_new(loaded, "loader_map", ref);
  json_t *objs = json_array();
  static const char *const ROLES[] = {"dkb", "cudart", "cupti", "cuda", "nvperf", "nvml", NULL};
  for (size_t i = 0; i < lm.n; i++) {
    const char *role = "other";
    for (int k = 0; ROLES[k]; k++)
      if (!strcmp(lm.v[i].role, ROLES[k])) role = ROLES[k];
    if (!strcmp(role, "other")) continue;  /* the full list is in the loader map artifact */
    json_array_append_new(objs, json_pack("{s:s,s:s,s:s,s:I}", "path", lm.v[i].path, "role", role, "sha256",
                                          lm.v[i].sha256, "bytes", (json_int_t)lm.v[i].size));
  }
  json_object_set_new(loaded, "objects", objs);
  json_t *br = dkb_provenance_load(dkb_build_report_json, "build report", hex, err);
  if (!br) goto cleanup;
  rc = bundle_add_json_artifact(bundle, dir, "build-report", br, &ref, err);
  json_decref(br);
  if (rc) goto cleanup;
  rc = -1;
  json_object_set_new(loaded, "build_report", ref);
  if (dev->available) {
    char drv[16], rt[16], cc[16];
    dkb_device_version_text(dev->driver_version, drv);
    dkb_device_version_text(dev->runtime_version, rt);
    snprintf(cc, sizeof cc, "%d.%d", dev->dev.cc_major, dev->dev.cc_minor);
    json_object_set_new(loaded, "device", json_pack("{s:s,s:s,s:i,s:s,s:s,s:s}", "name", dev->dev.name,
                                                    "compute_capability", cc, "sm_count", dev->dev.sm_count,
                                                    "driver_version", drv, "runtime_version", rt, "pci_bus_id",
                                                    dev->dev.pci_bus_id));
  }
  if (nk > 0) {
    json_t *kb = json_array();
    for (int i = 0; i < nk; i++)
      json_array_append_new(kb, json_pack("{s:s,s:i,s:i}", "symbol", kin[i].symbol, "binary_version",
                                          kin[i].binary_version, "ptx_version", kin[i].ptx_version));
    json_object_set_new(loaded, "kernel_binaries", kb);
  }
  json_object_set(bundle, "loaded", loaded);
  rc = 0;
cleanup:
  json_decref(loaded);
  dkb_buf_release(&b);
  dkb_loadmap_release(&lm);
  return rc;
}

static const char *short_name(const char *demangled, char *buf, size_t n) {
  /* "void (anonymous namespace)::decode_split_kv_producer<...>(...)" -> "decode_split_kv_producer" */
  const char *p = strstr(demangled, "::");
  p = p ? p + 2 : demangled;
  const char *q = p;
  while (*q && *q != '<' && *q != '(') q++;
  snprintf(buf, n, "%.*s", (int)(q - p), p);
  return buf;
}

int runner_execute(struct decode_call *c, const struct run_opts *o, struct run_result *res, struct dkb_err *err) {
  memset(res, 0, sizeof *res);
  res->correctness = -1;
  struct decode_inputs in;
  struct decode_plan pl;
  struct gpu_call g;
  struct dkb_trace tr;
  struct dkb_timing tm;
  struct admission *adm = DKB_CALLOC(1, sizeof *adm);
  memset(&in, 0, sizeof in);
  memset(&pl, 0, sizeof pl);
  memset(&g, 0, sizeof g);
  memset(&tr, 0, sizeof tr);
  memset(&tm, 0, sizeof tm);
  double *o_ref = NULL, *lse_ref = NULL;
  void *o_gpu = NULL, *k_after = NULL, *v_after = NULL, *k_exp = NULL, *v_exp = NULL;
  float *lse_gpu = NULL;
  struct dkb_kernel_info kin[8];
  int nk = 0, rc = -1, gpu_ok = 0, family = -1;
  int launch_code = DKB_FAIL;  /* launch_failed: the exit code its error calls for (gpucheck.c: kernel or machine) */
  json_t *bundle = NULL;
  char fixture_sha[65], call_sha[65], why[1024];
  struct dkb_err e2;
  struct dkb_nvml nvml;
  memset(&nvml, 0, sizeof nvml);

  if (dkb_mkdirs(o->out_dir, err)) goto cleanup;
  if (dkb_sha256_file(c->file, fixture_sha, err)) goto cleanup;
  bundle = bundle_new(o->argc, o->argv, c->file, c->name, fixture_sha);
  if (add_source(bundle, err)) goto cleanup;

  /* Device first: without one, everything below still runs on the host and is recorded. */
  struct dkb_device_info dev;
  dkb_err_clear(&e2);
  dkb_device_probe(0, &dev, &e2);
  gpu_ok = dev.available;
  long long cc = gpu_ok ? dev.dev.cc_major * 10 + dev.dev.cc_minor : DK_ABSENT;
  progress(o, "device", "%s", gpu_ok ? dev.dev.name : dev.reason);

  /* Inputs and plan on the host. */
  const int rows = (c->H_q / c->H_kv) * c->C;
  int tile = dkb_decode_tile_tokens(c->dtype, c->dk, c->dv, rows);
  if (inputs_build(c, tile > 0 ? tile : 64, &in, err)) goto cleanup;
  progress(o, "inputs", "%zu MB of K/V, %lld poisoned elements", (in.k_bytes + in.v_bytes) >> 20, (long long)in.poisoned_elems);

  /* Admission (level 4) before planning launches. */
  family = backends_select(c, cc, adm);
  struct plan_opts po = {tile > 0 ? tile : 64, gpu_ok ? dev.dev.sm_count : 0, 0};
  if (gpu_ok && family == DKB_FAMILY_SPLIT_KV) po.ctas_per_sm = dkb_decode_occupancy(c->dtype, c->dk, c->dv, rows);  /* real occupancy */
  if (plan_build(c, &in, &po, &pl, err)) goto cleanup;
  res->splits = pl.splits;
  res->direct = pl.direct;
  memcpy(res->tiles, pl.tiles, sizeof res->tiles);
  res->kv_bytes = (double)decode_call_kv_bytes(c);
  res->visible_kv_bytes = (double)plan_visible_kv_bytes(c, &pl);
  res->io_bytes = res->kv_bytes + (double)decode_call_qo_bytes(c);
  progress(o, "plan", "%d items, %d slots, split %d, combine %s, tiles SKIP %lld FULL %lld PARTIAL %lld", pl.n_items,
           pl.total_slots, pl.splits, plan_combine_name(&pl), (long long)pl.tiles[0], (long long)pl.tiles[1],
           (long long)pl.tiles[2]);
  {
    json_t *key = decode_call_key(c);
    if (cjson_digest(key, call_sha, err)) { json_decref(key); goto cleanup; }
    json_t *arec = admission_to_json(adm, err);
    if (!arec) { json_decref(key); goto cleanup; }
    json_t *diag = NULL;
    if (bundle_add_json_artifact(bundle, o->out_dir, "admission", arec, &diag, err)) { json_decref(key); json_decref(arec); goto cleanup; }
    json_t *cands = json_array();
    for (size_t i = 0; i < adm->n; i++) {
      const struct admission_candidate *ca = &adm->cand[i];
      json_t *rs = json_array();
      const struct admit_reasons *why_r = ca->in_domain ? &ca->reasons : &ca->domain;
      for (size_t k = 0; k < why_r->n; k++) json_array_append_new(rs, json_string(why_r->text[k]));
      json_array_append_new(cands, json_pack("{s:s,s:i,s:b,s:b,s:o}", "backend", ca->backend->name, "priority",
                                             ca->backend->priority, "in_domain", ca->in_domain, "eligible", ca->eligible,
                                             "reasons", rs));
    }
    const char *outcome = adm->selected >= 0 ? "selected" : adm->outcome == ADM_FORCED_ERROR ? "rejected" : "no_eligible";
    json_t *disp = json_pack("{s:o,s:s,s:s,s:o,s:s,s:o,s:o}", "call_key", key, "call_key_sha256", call_sha, "request",
                             c->backend, "candidates", cands, "outcome", outcome, "selected",
                             adm->selected >= 0 ? json_string(adm->cand[adm->selected].backend->name) : json_null(),
                             "diagnostic", diag);
    if (adm->selected >= 0) {
      snprintf(res->selected, sizeof res->selected, "%s", adm->cand[adm->selected].backend->name);
      json_object_set_new(disp, "split_count", json_integer(family == DKB_FAMILY_NAIVE ? 1 : pl.max_slots));
      json_object_set_new(disp, "workspace_bytes", json_integer(family == DKB_FAMILY_NAIVE ? 0 : pl.workspace_bytes));
      json_t *pj = plan_json(c, &pl);
      /* the naive backend ignores the split plan: one pass per output row, nothing to merge */
      if (family == DKB_FAMILY_NAIVE) json_object_set_new(pj, "combine", json_string("none (naive backend, one pass)"));
      json_object_set_new(disp, "plan", pj);
      json_t *pk = json_pack("{s:s,s:s,s:i,s:i,s:i,s:i,s:s,s:s,s:O,s:b,s:s,s:i,s:I}", "backend", res->selected,
                             "cache_layout", json_string_value(json_object_get(key, "cache_layout")), "H_q", c->H_q,
                             "H_kv", c->H_kv, "d_qk", c->dk, "d_v", c->dv, "q_dtype", dkb_dtype_name(c->dtype),
                             "kv_dtype", dkb_dtype_name(c->dtype), "page_size", json_object_get(key, "page_size"),
                             "graph_mode", c->graph, "workspace_abi", c->abi == DKB_ABI_MLU ? "mlu" : "lse_o",
                             "split_count", family == DKB_FAMILY_NAIVE ? 1 : pl.max_slots, "workspace_bytes",
                             (json_int_t)(family == DKB_FAMILY_NAIVE ? 0 : pl.workspace_bytes));
      json_object_set_new(disp, "plan_key", pk);
      if (bundle_set_digest(disp, "plan_key", "plan_key_sha256", err)) { json_decref(disp); json_decref(arec); goto cleanup; }
    }
    json_decref(arec);
    json_object_set_new(bundle, "dispatch", disp);
  }
  if (family < 0) {
    const char *terminal = adm->outcome == ADM_FORCED_ERROR ? "backend_rejected" : "no_eligible_backend";
    struct dkb_buf none;
    dkb_buf_init(&none);
    admission_why_none(adm, &none);
    bundle_set_status(bundle, terminal, terminal, "%s", none.p);
    dkb_buf_release(&none);
  }

  /* The float64 oracle. */
  size_t orows = (size_t)c->B * c->C * c->H_q;
  o_ref = DKB_MALLOC(orows * (size_t)c->dv * sizeof *o_ref);
  lse_ref = DKB_MALLOC(orows * sizeof *lse_ref);
  decode_ref_compute(c, &in, o_ref, lse_ref);
  progress(o, "oracle", "float64 reference of %zu rows", orows);

  if (!gpu_ok) {
    const char *terminal = dev.device_count == 0 ? "no_gpu" : "cuda_runtime_unavailable";
    bundle_set_status(bundle, terminal, terminal, "%s", dev.reason);
  } else if (family >= 0) {
    /* ---- capture pass: NVTX range + CUPTI activity, outputs poisoned first ---- */
    if (gpu_call_setup(c, &in, &pl, family, &g, err)) {
      launch_code = err->code;
      bundle_set_status(bundle, "launch_failed", "device_setup_failed", "%s", err->msg);
      goto grade;
    }
    nk = dkb_decode_kernels(&g.p, family, kin, 8);
    if (nk < 0) nk = 0;
    char range[128];
    snprintf(range, sizeof range, "dkb/call/%s", call_sha);
    dkb_err_clear(&e2);
    if (gpu_call_poison(&g, &e2)) {
      launch_code = e2.code;
      bundle_set_status(bundle, "launch_failed", "poison_failed", "%s", e2.msg);
      goto grade;
    }
    int traced = dkb_trace_capture(0, range, 1, gpu_call_launch, &g, NULL, &tr, &e2) == 0;
    if (!traced && tr.nkernels == 0) {
      /* CUPTI may be refused (privileges, another profiler): still check correctness untraced */
      snprintf(why, sizeof why, "%s", e2.msg);
      dkb_err_clear(&e2);
      int lrc = gpu_call_launch(&g, NULL);
      if (!lrc) lrc = (int)cudaDeviceSynchronize();
      if (lrc) {
        dkb_gpucheck_cuda(&e2, lrc, "gpu_call_launch(&g, NULL) or cudaDeviceSynchronize()", __FILE__, __LINE__);
        launch_code = e2.code;
        bundle_set_status(bundle, "launch_failed", "launch_failed", "%s, untraced after CUPTI refused: %s", e2.msg, why);
        goto grade;
      }
      bundle_set_status(bundle, "profiler_unavailable", "profiler_unavailable", "%s", why);
    } else {
      struct dkb_buf tb;
      dkb_buf_init(&tb);
      json_t *tref = NULL;
      if (dkb_trace_jsonl(&tr, &tb, err) ||
          bundle_add_artifact(bundle, o->out_dir, "trace", "jsonl", tb.p, tb.n, &tref, err)) {
        dkb_buf_release(&tb);
        goto cleanup;
      }
      dkb_buf_release(&tb);
      json_t *ks = json_array();
      res->kernels[0] = '\0';
      for (size_t i = 0; i < tr.nsymbols; i++) {
        const struct dkb_trace_symbol *s = &tr.symbols[i];
        if (!s->launches_in_range) continue;
        const struct dkb_trace_kernel *k = s->first;
        json_array_append_new(ks, json_pack("{s:s,s:s,s:I,s:[i,i,i],s:[i,i,i],s:i,s:i}", "symbol", s->name, "demangled",
                                            s->demangled, "launches", (json_int_t)s->launches_in_range, "grid",
                                            k->grid[0], k->grid[1], k->grid[2], "block", k->block[0], k->block[1],
                                            k->block[2], "registers", k->registers, "shared_bytes",
                                            k->static_smem + k->dynamic_smem));
        char sn[96];
        size_t len = strlen(res->kernels);
        snprintf(res->kernels + len, sizeof res->kernels - len, "%s%s x%zu", len ? ", " : "",
                 short_name(s->demangled, sn, sizeof sn), s->launches_in_range);
      }
      char ver[32];
      snprintf(ver, sizeof ver, "%u", tr.cupti_version);
      json_object_set_new(bundle, "execution",
                          json_pack("{s:o,s:s,s:i,s:o,s:I,s:{s:s,s:s}}", "trace", tref, "nvtx_range", range,
                                    "external_correlation_id", 1, "kernels", ks, "dropped_records", (json_int_t)tr.dropped,
                                    "profiler", "name", "CUPTI", "version", ver));
      if (!traced) {
        launch_code = e2.code;
        bundle_set_status(bundle, "launch_failed", "launch_failed", "%s", e2.msg);
      }
    }
    json_t *req = json_array();
    for (int i = 0; i < nk; i++) json_array_append_new(req, json_string(kin[i].symbol));
    json_object_set_new(json_object_get(bundle, "dispatch"), "required_kernels", req);

    /* ---- correctness against the float64 oracle, on the captured launch ---- */
    o_gpu = DKB_MALLOC(g.o_bytes);
    lse_gpu = c->return_lse ? DKB_MALLOC(g.lse_bytes) : NULL;
    if (c->phase == PHASE_APPEND) { k_after = DKB_MALLOC(in.k_bytes); v_after = DKB_MALLOC(in.v_bytes); }
    if (gpu_call_download(&g, &in, o_gpu, lse_gpu, k_after, v_after, &e2)) {
      launch_code = e2.code;
      bundle_set_status(bundle, "launch_failed", "launch_failed", "%s", e2.msg);
      goto grade;
    }
    struct typed got = {(enum dkb_dtype)c->dtype, o_gpu};
    struct dkb_cmp co, cl, cc_k;
    dkb_compare(&got, get_typed, o_ref, dkb_cmp_get_f64, orows * (size_t)c->dv, c->atol, c->rtol, &co);
    json_t *corr = json_pack("{s:s,s:f,s:f,s:o}", "reference", "float64 oracle (harness/decode_ref.c over oracles/)",
                             "atol", c->atol, "rtol", c->rtol, "output", cmp_json(&co));
    int passed = co.pass;
    if (lse_gpu) {
      dkb_compare(lse_gpu, dkb_cmp_get_f32, lse_ref, dkb_cmp_get_f64, orows, c->lse_atol, c->lse_rtol, &cl);
      json_object_set_new(corr, "lse", cmp_json(&cl));
      json_object_set_new(corr, "lse_atol", json_real(c->lse_atol));
      json_object_set_new(corr, "lse_rtol", json_real(c->lse_rtol));
      passed &= cl.pass;
      res->lse_max_abs = cl.max_abs;
    } else {
      json_object_set_new(corr, "lse", json_string("not_applicable"));
    }
    if (c->phase == PHASE_APPEND) {
      /* Exact: the cache after the call must equal the pre-call cache with the new rows written. */
      k_exp = inputs_expected_cache(c, &in, 0);
      v_exp = inputs_expected_cache(c, &in, 1);
      /* poison is NaN on both sides outside the visible rows: compare bytes, count mismatching elements */
      size_t es = (size_t)in.esize, mk = 0, mv = 0;
      for (size_t i = 0; i < in.k_bytes / es; i++) mk += memcmp((char *)k_after + i * es, (char *)k_exp + i * es, es) != 0;
      for (size_t i = 0; i < in.v_bytes / es; i++) mv += memcmp((char *)v_after + i * es, (char *)v_exp + i * es, es) != 0;
      memset(&cc_k, 0, sizeof cc_k);
      cc_k.n = (in.k_bytes + in.v_bytes) / es;
      cc_k.violations = mk + mv;
      cc_k.pass = cc_k.violations == 0;
      json_object_set_new(corr, "cache", cmp_json(&cc_k));
      json_object_set_new(corr, "cache_rule", json_string("bitwise: every K and V element equals the pre-call cache with the new rows written through the address translator"));
      passed &= cc_k.pass;
    } else {
      json_object_set_new(corr, "cache", json_string("not_applicable"));
    }
    json_object_set_new(corr, "passed", json_boolean(passed));
    res->correctness = passed;
    res->out_max_abs = co.max_abs;
    res->out_max_ratio = co.max_ratio;
    res->out_violations = (long long)co.violations;
    json_t *meas = json_pack("{s:o}", "correctness", corr);
    json_object_set_new(bundle, "measurement", meas);
    progress(o, "correctness", "%s: max |err| %.3g (O), %zu violations", passed ? "passed" : "FAILED", co.max_abs, co.violations);
    if (!passed) {
      bundle_set_status(bundle, "correctness_failed", "correctness_failed",
                        "O: %zu of %zu elements outside atol %.3g + rtol %.3g*|ref| (max |err| %.3g, %zu NaN)",
                        co.violations, co.n, c->atol, c->rtol, co.max_abs, co.nan_got);
      goto grade;
    }

    /* ---- timing pass: no tracing, raw cudaEvent samples, stop rule, clocks around it ---- */
    if (o->timing_enabled) {
      json_t *before = NULL, *after = NULL;
      struct dkb_nvml_sample ns;
      int have_nvml = dkb_nvml_open(&nvml, &e2) == 0;
      if (have_nvml && dkb_nvml_sample(&nvml, dev.dev.pci_bus_id, &ns, &e2) == 0) before = dkb_nvml_sample_json(&ns);
      struct dkb_timing_opts to = o->timing;
      to.graph = to.graph || c->graph;
      dkb_err_clear(&e2);
      int trc = dkb_timing_run(0, &to, gpu_call_launch, &g, NULL, &tm, &e2);
      if (have_nvml && dkb_nvml_sample(&nvml, dev.dev.pci_bus_id, &ns, &e2) == 0) after = dkb_nvml_sample_json(&ns);
      if (trc) {
        launch_code = e2.code;
        bundle_set_status(bundle, "launch_failed", "timing_failed", "%s", e2.msg);
        json_decref(before);
        json_decref(after);
        goto grade;
      }
      json_t *tj = dkb_timing_json(&tm, err);
      if (!tj) goto cleanup;
      json_t *samples = json_array();
      for (size_t i = 0; i < tm.n; i++) json_array_append_new(samples, json_real(tm.samples_us[i]));
      json_t *timing = json_pack("{s:b,s:s,s:i,s:o,s:o,s:{s:s,s:s,s:I,s:I,s:f,s:b,s:f,s:f,s:f},s:b}", "tracing", 0, "method",
                                 to.graph ? "cudaEvent pair around each CUDA graph replay, enqueued behind a stream-holding spin kernel and released together (GPU time, not host launch time), synchronized"
                                          : "cudaEvent pair around each call's launches, enqueued behind a stream-holding spin kernel and released together (GPU time, not host launch time), synchronized",
                                 "warmup", to.warmup, "samples_us", samples, "summary", dkb_stats_json(&tm.stats),
                                 "stop_rule", "rule", "nvbench stdrel: relative stdev target after min samples and min time",
                                 "stopped_by", dkb_timing_stop_name(tm.stop), "min_samples",
                                 (json_int_t)to.min_samples, "max_samples", (json_int_t)to.max_samples, "max_rel_stdev",
                                 to.max_noise, "met", tm.stop == DKB_STOP_NOISE_REACHED, "min_time_s", to.min_time_s,
                                 "max_time_s", to.max_time_s, "elapsed_s", tm.wall_s, "l2_flush", to.cold);
      json_object_set_new(timing, "clocks_before", before ? before : json_pack("{s:s}", "not_reported", nvml.lib ? "nvml sample failed" : "libnvidia-ml.so.1 not loaded"));
      json_object_set_new(timing, "clocks_after", after ? after : json_pack("{s:s}", "not_reported", nvml.lib ? "nvml sample failed" : "libnvidia-ml.so.1 not loaded"));
      json_decref(tj);
      json_object_set_new(meas, "timing", timing);
      /* The timed calls must leave the kernels able to reproduce the checked output: one more call on
       * poisoned outputs, compared bit for bit (state kept between calls, such as the fused combine's
       * arrival counters, or a merge in a varying order would show here). */
      void *o_again = DKB_MALLOC(g.o_bytes);
      float *lse_again = lse_gpu ? DKB_MALLOC(g.lse_bytes) : NULL;
      dkb_err_clear(&e2);
      int lrc = gpu_call_poison(&g, &e2) ? -1 : gpu_call_launch(&g, g.stream);
      int drc = lrc ? -1 : gpu_call_download(&g, &in, o_again, lse_again, NULL, NULL, &e2);
      int same = !lrc && !drc && !memcmp(o_again, o_gpu, g.o_bytes) && (!lse_gpu || !memcmp(lse_again, lse_gpu, g.lse_bytes));
      free(o_again);
      free(lse_again);
      if (lrc > 0) dkb_gpucheck_cuda(&e2, lrc, "gpu_call_launch(&g, g.stream)", __FILE__, __LINE__);
      if (lrc || drc) {
        launch_code = e2.code;
        bundle_set_status(bundle, "launch_failed", "launch_failed", "the call after the timing pass: %s", e2.msg);
        goto grade;
      }
      json_object_set_new(timing, "repeat_check",
                          json_pack("{s:s,s:I,s:b}", "rule", "outputs poisoned, the call run once more after the timed samples, O and LSE compared bitwise with the checked call",
                                    "after_samples", (json_int_t)tm.n, "output_bitwise_equal", same));
      progress(o, "repeat", "%s", same ? "the call after the timed samples reproduces the checked output bitwise" : "DIFFERS from the checked output");
      if (!same) {
        bundle_set_status(bundle, "correctness_failed", "timing_output_not_reproduced",
                          "after %zu timed samples, a call on poisoned outputs did not reproduce the checked output", tm.n);
        goto grade;
      }
      res->median_us = tm.stats.median;
      progress(o, "timing", "%zu samples, median %.2f us, rel stdev %.2f%%", tm.n, tm.stats.median, 100 * tm.stats.rel_stdev);
    }
    /* ---- counters: their own pass, never the timed one ---- */
    if (o->counters) {
      struct dkb_counters cn;
      memset(&cn, 0, sizeof cn);
      dkb_err_clear(&e2);
      /* The counted call starts from the L2 the timed calls started from: flushed (--cold) or as the
       * previous call left it. */
      struct dkb_l2_flush fl = {0};
      const int cold = o->timing_enabled && o->timing.cold;
      if (!cold || dkb_l2_flush_init(0, &fl, &e2) == 0)
        /* its own short range name: the NVTX range name (73 characters) crashes the counter decoder */
        dkb_counters_collect(0, "dkb/counters", gpu_call_launch, &g, NULL, cold ? dkb_l2_flush_launch : NULL, &fl, &cn,
                             &e2);
      else
        dkb_counters_unavailable(&cn, "dkb/counters", &e2);
      dkb_l2_flush_release(&fl);
      json_t *cp = dkb_counters_json(&cn);
      json_object_set_new(cp, "l2_before_pass", json_string(cold ? "flushed: a read of 2x L2 through L2, as before each timed sample (--cold)"
                                                                 : "as the call before it left it, as for the timed samples"));
      json_object_set_new(meas, "counters_pass", cp);
      if (cn.available) {
        json_t *arr = json_array();
        for (int i = 0; i < DKB_COUNTERS_N; i++)
          json_array_append_new(arr, json_pack("{s:s,s:f,s:s,s:s,s:s,s:s,s:s}", "name", cn.v[i].name, "value", cn.v[i].value,
                                               "unit", cn.v[i].unit, "numerator", cn.v[i].numerator, "denominator",
                                               cn.v[i].denominator, "scope", cn.v[i].scope, "replay", "application, one pass"));
        json_object_set_new(meas, "counters", arr);
      }
    }
  }

grade:
  /* The dump: inputs and oracle always, GPU outputs when they exist; --dump-on-fail only on failure. */
  if (o->dump_dir && (!o->dump_on_fail || res->correctness == 0)) {
    struct decode_outputs dout = {o_ref, lse_ref, res->correctness >= 0 ? o_gpu : NULL,
                                  res->correctness >= 0 ? lse_gpu : NULL, res->correctness >= 0 ? k_after : NULL,
                                  res->correctness >= 0 ? v_after : NULL};
    json_t *index = NULL, *iref = NULL;
    if (decode_dump_write(o->dump_dir, c, &in, &dout, &index, err)) goto cleanup;
    int arc = bundle_add_json_artifact(bundle, o->out_dir, "dump-index", index, &iref, err);
    json_decref(index);
    if (arc) goto cleanup;
    json_object_set_new(bundle, "dump", json_pack("{s:s,s:o}", "dir", o->dump_dir, "index", iref));
    snprintf(res->dump_dir, sizeof res->dump_dir, "%s", o->dump_dir);
    progress(o, "dump", "%s", o->dump_dir);
  }
  /* Logical byte ledgers beside any counters (0x03F): never presented as measured traffic. */
  json_object_set_new(bundle, "ledgers",
                      json_pack("{s:I,s:I,s:I,s:I,s:s}", "unique_kv_bytes", (json_int_t)res->kv_bytes, "visible_kv_bytes",
                                (json_int_t)res->visible_kv_bytes, "q_o_bytes", (json_int_t)decode_call_qo_bytes(c),
                                "workspace_round_trip_bytes", (json_int_t)(pl.direct ? 0 : 2 * pl.workspace_bytes),
                                "kind", "logical ledgers (article 0x03F), not measured DRAM traffic"));
  if (add_loaded(bundle, o->out_dir, &dev, kin, nk, err)) goto cleanup;
  {
    struct ladder_result lr;
    ladder_result_init(&lr);
    if (bundle_write(bundle, o->out_dir, &lr, err)) { ladder_result_release(&lr); goto cleanup; }
    res->level = lr.computed;
    snprintf(res->terminal, sizeof res->terminal, "%s", lr.terminal);
    ladder_result_release(&lr);
  }
  res->gpu = gpu_ok;
  res->launch_code = !strcmp(res->terminal, "launch_failed") ? launch_code : DKB_OK;
  res->bundle = json_incref(bundle);
  rc = 0;
cleanup:
  json_decref(bundle);
  dkb_timing_release(&tm);
  dkb_trace_release(&tr);
  if (nvml.lib) dkb_nvml_close(&nvml);
  gpu_call_release(&g);
  plan_release(&pl);
  inputs_release(&in);
  free(adm); free(o_ref); free(lse_ref); free(o_gpu); free(lse_gpu); free(k_after); free(v_after); free(k_exp); free(v_exp);
  return rc;
}
