/* bench.c - the roofline, the judged targets and a case's figures read from its bundle (see bench.h; the
 * matrix: bench_matrix.c; bench.json, bench.csv and the SVG: bench_write.c). */
#include "harness/bench.h"
#include "harness/bench_diff.h"
#include "lib/fsutil.h"
#include "harness/gpucheck.h"
#include "lib/jread.h"
#include "harness/nvml.h"
#include "harness/timing.h"
#include "kernels/kernels.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdarg.h>
#include <string.h>

#include <cuda_runtime_api.h>

struct roof_arg { const void *buf; size_t n16; float *sink; };
static int roof_launch(void *arg, void *stream) {
  struct roof_arg *a = arg;
  return dkb_roofline_read(a->buf, a->n16, a->sink, 0, stream);
}

static int empty_launch(void *arg, void *stream) {
  (void)arg;
  return dkb_empty_launch(stream);
}

/* One timing pass of the read kernel over a fresh buffer of `bytes` (a multiple of 16) into *tm. */
static int time_read(size_t bytes, const struct dkb_timing_opts *t, struct dkb_timing *tm, struct dkb_err *err) {
  void *buf = NULL;
  float *sink = NULL;
  int rc = -1;
  DKB_CUDA_CHECK(err, cudaMalloc(&buf, bytes));
  DKB_CUDA_CHECK(err, cudaMalloc((void **)&sink, 16));
  /* Never time zeros: fill with a pattern (0x3c bytes are small finite floats). */
  DKB_CUDA_CHECK(err, cudaMemset(buf, 0x3c, bytes));
  DKB_CUDA_CHECK(err, cudaDeviceSynchronize());
  struct roof_arg a = {buf, bytes / 16, sink};
  rc = dkb_timing_run(0, t, roof_launch, &a, NULL, tm, err);
cleanup:
  cudaFree(buf);
  cudaFree(sink);
  return rc;
}

int bench_roofline(long long bytes, const struct dkb_timing_opts *t, struct bench_roofline *r, struct dkb_err *err) {
  memset(r, 0, sizeof *r);
  struct dkb_timing tm;
  memset(&tm, 0, sizeof tm);
  int rc = -1;
  struct dkb_timing_opts rt = *t;
  rt.graph = 0;
  if (time_read((size_t)bytes / 16 * 16, &rt, &tm, err)) goto cleanup;
  r->measured = 1;
  r->bytes = (double)(bytes / 16 * 16);
  r->median_us = tm.stats.median;
  r->samples = tm.n;
  r->tbps = r->bytes / (tm.stats.median * 1e-6) / 1e12;
  for (int g = 0; g < 2; g++) {
    struct bench_floor *f = &r->floor[g];
    struct dkb_timing_opts ft = *t;
    ft.graph = g;
    struct dkb_err ferr;  /* a floor that cannot be timed is recorded, and the roofline stands */
    dkb_err_clear(&ferr);
    dkb_timing_release(&tm);  /* the previous pass's samples */
    if (dkb_timing_run(0, &ft, empty_launch, NULL, NULL, &tm, &ferr)) {
      snprintf(f->reason, sizeof f->reason, "%s", ferr.msg);
    } else {
      f->measured = 1;
      f->us = tm.stats.median;
      f->samples = tm.n;
    }
  }
  rc = 0;
cleanup:
  if (rc) snprintf(r->reason, sizeof r->reason, "%s", err->msg);
  for (int g = 0; g < 2; g++)
    if (!r->floor[g].measured && !r->floor[g].reason[0])
      snprintf(r->floor[g].reason, sizeof r->floor[g].reason, "the roofline was not measured");
  dkb_timing_release(&tm);
  return rc;
}

double bench_visible_bytes(const struct bench_case *bc) { return bc->visible_kv_bytes + bc->io_bytes - bc->kv_bytes; }

int bench_read(double bytes, const struct dkb_timing_opts *t, int graph, double *median_us, size_t *samples,
               struct dkb_err *err) {
  *median_us = 0;
  *samples = 0;
  if (!(bytes >= 16)) return dkb_err_set(err, DKB_INTERNAL, NULL, NULL, "same-bytes read of %.0f bytes: under 16", bytes);
  struct dkb_timing tm;
  memset(&tm, 0, sizeof tm);
  struct dkb_timing_opts rt = *t;
  rt.graph = graph;
  const int rc = time_read((size_t)(bytes / 16) * 16, &rt, &tm, err);
  if (!rc) {
    *median_us = tm.stats.median;
    *samples = tm.n;
  }
  dkb_timing_release(&tm);
  return rc;
}

const char *bench_verdict_name(enum bench_verdict_state s) {
  return s == BENCH_MET ? "met" : s == BENCH_MISSED ? "missed" : "not_measured";
}

void bench_count_targets(const struct bench_verdict *v, int nv, struct bench_target_count *c) {
  memset(c, 0, sizeof *c);
  for (int i = 0; i < nv; i++) {
    const int met = v[i].state == BENCH_MET, missed = v[i].state == BENCH_MISSED;
    c->met += met;
    c->missed += missed;
    c->unmeasured += v[i].state == BENCH_NOT_MEASURED;
    c->met_beyond += met && v[i].beyond_noise;
    c->missed_beyond += missed && v[i].beyond_noise;
  }
}

int bench_gate(const struct bench_verdict *v, int nv, int margin, char *why, size_t n) {
  struct bench_target_count c;
  bench_count_targets(v, nv, &c);
  const int edge = c.met - c.met_beyond;
  if (!nv) {  /* a gate that judged nothing has not passed */
    snprintf(why, n, "%s: no bench target was judged: the matrix sets none", margin ? "--require-margin" : "--require-targets");
    return DKB_ENV;
  }
  if (c.missed) return snprintf(why, n, "%d of %d bench targets missed", c.missed, nv), DKB_FAIL;
  if (margin && edge)
    return snprintf(why, n, "%d of %d bench targets met only within the run's noise (at the edge)", edge, nv), DKB_FAIL;
  if (c.unmeasured) return snprintf(why, n, "%d of %d bench targets could not be measured on this host", c.unmeasured, nv), DKB_ENV;
  return DKB_OK;
}

static void verdict(struct bench_verdict *v, int i, int is_pct, double want, double got, int measured, int met, const char *fmt,
                    ...) __attribute__((format(printf, 8, 9)));
static void verdict(struct bench_verdict *v, int i, int is_pct, double want, double got, int measured, int met, const char *fmt,
                    ...) {
  memset(v, 0, sizeof *v);
  v->case_index = i;
  v->peer_index = -1;
  v->is_pct = is_pct;
  v->want = want;
  v->got = measured ? got : NAN;
  v->state = !measured ? BENCH_NOT_MEASURED : met ? BENCH_MET : BENCH_MISSED;
  v->need_us = v->noise_pct = NAN;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(v->what, sizeof v->what, fmt, ap);
  va_end(ap);
}

void bench_case_rates(struct bench_case *bc, const struct bench_roofline *r) {
  bc->tbps = bc->visible_tbps = bc->frac = bc->visible_frac = 0;
  bc->excess_us = bc->read_fraction = NAN;
  bc->dram_kv_ratio = bc->dram_measured && bc->visible_kv_bytes > 0 ? bc->dram_read_bytes / bc->visible_kv_bytes : NAN;
  if (bc->median_us <= 0) return;
  if (bc->read_us > 0) bc->read_fraction = bc->read_us / bc->median_us;
  const double s = bc->median_us * 1e-6, visible = bench_visible_bytes(bc);
  bc->tbps = bc->io_bytes / s / 1e12;
  bc->visible_tbps = visible / s / 1e12;
  if (!r->measured) return;
  bc->frac = bc->tbps / r->tbps;
  bc->visible_frac = bc->visible_tbps / r->tbps;
  const struct bench_floor *f = &r->floor[bc->graph ? 1 : 0];
  if (f->measured) bc->excess_us = bc->median_us - f->us - visible / (r->tbps * 1e12) * 1e6;
}

/* A median that counts as a measurement: from a level-6 bundle only. */
static int measured6(const struct bench_case *bc) { return bc->ran && bc->median_us > 0 && bc->level == 6; }

/* The spread of a case's timing samples, NAN when it was not timed. */
static double spread(const struct bench_case *bc) { return bc->samples > 0 ? bc->rel_stdev : NAN; }

/* Reads a measured verdict's margin against the noise band of the medians it compared (b: NULL for a
 * fraction floor, whose reference records no spread). */
static void read_noise(struct bench_verdict *v, const struct bench_case *a, const struct bench_case *b) {
  v->noise_pct = v->state == BENCH_NOT_MEASURED ? NAN : bench_noise_band(spread(a), b ? spread(b) : 0, BENCH_MIN_NOISE_PCT);
  const double margin = v->is_pct ? fabs(v->got - v->want) : 100 * fabs(v->got / v->want - 1);
  v->beyond_noise = isfinite(v->noise_pct) && margin > v->noise_pct;
}

int bench_best_forced(const struct bench_matrix *m, int i, int *forced, int *all_level6) {
  int best = -1;
  *forced = 0;
  *all_level6 = 1;
  for (int k = 0; k < m->n; k++) {
    const struct bench_case *f = &m->cases[k];
    if (!f->forced_splits || strcmp(f->fixture, m->cases[i].fixture) || strcmp(f->backend, m->cases[i].backend)) continue;
    (*forced)++;
    *all_level6 &= measured6(f);
    if (f->ran && f->median_us > 0 && (best < 0 || f->median_us < m->cases[best].median_us)) best = k;
  }
  return best;
}

/* The counters say a call read less than BENCH_DRAM_KV_MIN of its visible K/V from DRAM (false for a
 * NAN ratio: no visible K/V). */
static int kv_partly_from_l2(const struct bench_case *bc) { return bc->dram_measured && bc->dram_kv_ratio < BENCH_DRAM_KV_MIN; }

int bench_l2_served(const struct bench_matrix *m, const struct bench_case *bc) { return !m->cold && kv_partly_from_l2(bc); }

int bench_judge(const struct bench_matrix *m, const struct bench_roofline *r, struct bench_verdict *v, int cap) {
  int n = 0;
  for (int i = 0; i < m->n && n < cap; i++) {
    const struct bench_case *bc = &m->cases[i];
    /* a fraction floor needs a level-6 case and a roofline (read_fraction: the case's same-bytes read,
     * timed without the roofline's figure), and K/V that came from DRAM */
    const int ok = measured6(bc), frac_ok = ok && r->measured, l2 = bench_l2_served(m, bc);
    const int read_ok = ok && bc->read_us > 0 && isfinite(bc->read_fraction);
    if (bc->want_frac > 0 && n < cap) {
      verdict(&v[n], i, 0, bc->want_frac, bc->frac, frac_ok && !l2, bc->frac >= bc->want_frac, "roofline_fraction >= %.2f",
              bc->want_frac);
      if (v[n].state == BENCH_MISSED) v[n].need_us = bc->median_us * bc->frac / bc->want_frac;  /* the fraction is bytes / time */
      read_noise(&v[n], bc, NULL);
      v[n++].l2_served = frac_ok && l2;
    }
    if (bc->want_visible_frac > 0 && n < cap) {
      verdict(&v[n], i, 0, bc->want_visible_frac, bc->visible_frac, frac_ok && !l2, bc->visible_frac >= bc->want_visible_frac,
              "visible_roofline_fraction >= %.2f", bc->want_visible_frac);
      if (v[n].state == BENCH_MISSED) v[n].need_us = bc->median_us * bc->visible_frac / bc->want_visible_frac;
      read_noise(&v[n], bc, NULL);
      v[n++].l2_served = frac_ok && l2;
    }
    if (bc->want_read_frac > 0 && n < cap) {
      verdict(&v[n], i, 0, bc->want_read_frac, bc->read_fraction, read_ok && !l2, bc->read_fraction >= bc->want_read_frac,
              "read_fraction >= %.2f", bc->want_read_frac);
      if (v[n].state == BENCH_MISSED) v[n].need_us = bc->median_us * bc->read_fraction / bc->want_read_frac;  /* = read_us / want */
      read_noise(&v[n], bc, NULL);
      v[n++].l2_served = read_ok && l2;
    }
    if (bc->within_ref >= 0 && n < cap) {
      const struct bench_case *ref = &m->cases[bc->within_ref];
      const int rok = measured6(ref);
      const double pct = rok && ok ? 100 * (bc->median_us / ref->median_us - 1) : NAN;
      verdict(&v[n], i, 1, bc->within_pct, pct, ok && rok, pct <= bc->within_pct, "median within %.0f%% of %s", bc->within_pct, ref->name);
      read_noise(&v[n++], bc, ref);
    }
  }
  /* side by side: the first backend's case against every other backend that admitted the same call */
  for (int i = 0; i < m->n && m->nbackends > 1; i++) {
    const struct bench_case *p = &m->cases[i];
    if (p->peer_of < 0 || !p->ran || !p->selected[0] || n >= cap) continue;  /* a backend that refused the call is no peer */
    const int ai = p->peer_of;
    const struct bench_case *a = &m->cases[ai];
    const int ok = measured6(a) && measured6(p);
    const double pct = ok ? 100 * (a->median_us / p->median_us - 1) : NAN;
    verdict(&v[n], ai, 1, 0, pct, ok, pct <= 0, "median <= %s's", p->backend);
    read_noise(&v[n], a, p);
    v[n++].peer_index = i;
  }
  /* auto versus the fastest forced split count of the same fixture and backend; side by side, a target of
   * the first backend's only (another's planner is not under test, and the plugins refuse forced splits) */
  for (int i = 0; i < m->n && m->auto_within_pct > 0 && n < cap; i++) {
    const struct bench_case *a = &m->cases[i];
    if (a->forced_splits || (m->nbackends > 1 && a->peer_of >= 0)) continue;
    int forced, all;
    const int best = bench_best_forced(m, i, &forced, &all);
    if (!forced) continue;
    const int ok = all && best >= 0 && measured6(a);
    const double pct = ok ? 100 * (a->median_us / m->cases[best].median_us - 1) : NAN;
    verdict(&v[n], i, 1, m->auto_within_pct, pct, ok, pct <= m->auto_within_pct, "auto within %.0f%% of the best forced split%s%s",
            m->auto_within_pct, ok ? ", " : "", ok ? m->cases[best].name : "");
    read_noise(&v[n++], a, ok ? &m->cases[best] : NULL);
  }
  return n;
}

/* The NVML samples taken around the timed region: the SM clock and the clock event reason bits active
 * at either (the bits, not the names beside them: names and meaning come from harness/nvml.c). A sample NVML could not take is {"not_reported": "why"}, a field it does not support is
 * absent: both leave the case's clocks unreported, never a guess. The caller has reset them. */
static int read_clocks(struct jr *r, const json_t *timing, struct bench_case *bc) {
  static const char *const base = "/measurement/timing", *const key[2] = {"clocks_before", "clocks_after"};
  for (int k = 0; k < 2; k++) {
    if (!json_object_get(timing, key[k])) continue;
    char p[DKB_PTR_MAX], pe[DKB_PTR_MAX];
    jr_ptr_key(p, base, key[k]);
    const json_t *s = jr_get(r, timing, base, key[k], 1, JSON_OBJECT);
    long long mhz = -1;
    if (!s || jr_int(r, s, p, "sm_clock_mhz", 0, 0, 1000000, &mhz)) return -1;
    if (mhz >= 0) {
      bc->sm_mhz[k] = (int)mhz;
      bc->clocks_reported = 1;
    }
    if (!json_object_get(s, "clocks_event_reasons")) continue;
    jr_ptr_key(pe, p, "clocks_event_reasons");
    const json_t *ev = jr_get(r, s, p, "clocks_event_reasons", 1, JSON_OBJECT);
    const char *bits = NULL;
    if (!ev || jr_str(r, ev, pe, "bits", 1, &bits)) return -1;
    unsigned long long v;
    if (dkb_nvml_reason_bits_parse(bits, &v))
      return jr_fail(r, pe, "bits", "must be the reason bits as hex text, \"0x...\" (got \"%s\")", bits);
    bc->clocks_reported = 1;
    bc->clock_reasons |= v & ~DKB_NVML_REASON_GPU_IDLE;
  }
  return 0;
}

/* dram__bytes_read.sum of the bundle's counters (/measurement/counters, present when they were measured). */
static int read_dram(struct jr *r, const json_t *doc, struct bench_case *bc) {
  static const char *const base = "/measurement/counters";
  bc->dram_measured = 0;
  const json_t *cn = jr_resolve(doc, base);
  if (!cn) return 0;
  if (!json_is_array(cn)) return jr_fail(r, base, NULL, "must be an array of counters");
  for (size_t i = 0; i < json_array_size(cn); i++) {
    char p[DKB_PTR_MAX];
    jr_ptr_idx(p, base, i);
    const json_t *c = json_array_get(cn, i);
    const char *name = NULL;
    if (!json_is_object(c)) return jr_fail(r, p, NULL, "must be an object");
    if (jr_str(r, c, p, "name", 1, &name)) return -1;
    if (strcmp(name, "dram__bytes_read.sum")) continue;
    if (jr_num(r, c, p, "value", 1, 0, 1e18, &bc->dram_read_bytes)) return -1;
    bc->dram_measured = 1;
    return 0;
  }
  return 0;
}

int bench_case_read_bundle(struct bench_case *bc, int timed, struct dkb_err *err) {
  char path[700];
  if (dkb_path_join(path, sizeof path, bc->bundle_dir, "bundle.json"))
    return dkb_err_set(err, DKB_INTERNAL, bc->bundle_dir, "", "bundle path too long");
  json_t *doc = jr_load_file(path, err);
  if (!doc) return -1;
  struct jr r = {path, err, DKB_INPUT};
  static const char *const ptr = "/measurement/timing/summary";
  const json_t *sum = jr_resolve(doc, ptr), *dispatch = jr_get(&r, doc, "", "dispatch", 1, JSON_OBJECT);
  const char *key = NULL;
  long long n = 0;
  double rs = 0;
  int rc = -1;
  if (!dispatch || jr_str(&r, dispatch, "/dispatch", "call_key_sha256", 1, &key)) goto done;
  if (strlen(key) != 64) {
    jr_fail(&r, "/dispatch", "call_key_sha256", "must be 64 hex digits");
    goto done;
  }
  if (timed) {
    if (!json_is_object(sum)) {
      jr_fail(&r, ptr, NULL, "missing: the case was timed, so its bundle must hold the summary");
      goto done;
    }
    if (jr_int(&r, sum, ptr, "count", 1, 1, (long long)1 << 40, &n) || jr_num(&r, sum, ptr, "rel_stdev", 1, 0, 1e9, &rs)) goto done;
  }
  const json_t *timing = jr_resolve(doc, "/measurement/timing");
  bc->clocks_reported = 0;
  bc->sm_mhz[0] = bc->sm_mhz[1] = -1;
  bc->clock_reasons = 0;
  if (json_is_object(timing) && read_clocks(&r, timing, bc)) goto done;
  if (read_dram(&r, doc, bc)) goto done;
  snprintf(bc->call_key, sizeof bc->call_key, "%s", key);
  const char *sel = json_string_value(json_object_get(dispatch, "selected"));
  snprintf(bc->selected, sizeof bc->selected, "%s", sel ? sel : "");
  const json_t *why = json_object_get(json_array_get(jr_resolve(doc, "/status/reasons"), 0), "detail");
  snprintf(bc->why, sizeof bc->why, "%s", json_is_string(why) && !timed ? json_string_value(why) : "");
  bc->samples = n;
  bc->rel_stdev = rs;
  rc = 0;
done:
  json_decref(doc);
  return rc;
}

int bench_dram_note(const struct bench_case *bc, char *out, size_t n) {
  if (n) out[0] = 0;
  if (!kv_partly_from_l2(bc)) return 0;
  snprintf(out, n, "a call read %.2f of its visible K/V from DRAM (%.1f of %.1f MB): L2 served the rest, left there by the calls "
           "before it", bc->dram_kv_ratio, bc->dram_read_bytes / 1e6, bc->visible_kv_bytes / 1e6);
  return 1;
}

int bench_clock_note(const struct bench_case *bc, char *out, size_t n) {
  if (n) out[0] = 0;
  if (!dkb_nvml_reasons_slow(bc->clock_reasons)) return 0;
  const char *names[64];
  const size_t k = dkb_nvml_reason_names(bc->clock_reasons, names, 64);
  char list[1800] = "";  /* every one of the 64 bits' names, comma-separated */
  for (size_t i = 0, used = 0; i < k && used < sizeof list; i++)
    used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", i ? "," : "", names[i]);
  char mhz[2][16];
  for (int k = 0; k < 2; k++) {
    if (bc->sm_mhz[k] >= 0) snprintf(mhz[k], sizeof mhz[k], "%d", bc->sm_mhz[k]);
    else snprintf(mhz[k], sizeof mhz[k], "not reported");
  }
  snprintf(out, n, "ran slowed (%s; SM clock %s MHz before, %s after): its median is not the kernel's alone", list, mhz[0],
           mhz[1]);
  return 1;
}

int bench_unmeasured_note(const struct bench_case *bc, char *out, size_t n) {
  if (n) out[0] = 0;
  if (bc->median_us > 0 || !bc->why[0]) return 0;
  if (bc->backend[0] && !bc->selected[0]) snprintf(out, n, "refused: %s: %s", bc->backend, bc->why);
  else if (bc->selected[0]) snprintf(out, n, "below level 6: %s: %s", bc->selected, bc->why);
  else return 0;
  return 1;
}
