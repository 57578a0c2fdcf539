/* bench_diff.c - two bench runs, case by case (see bench_diff.h). */
#include "harness/bench_diff.h"
#include "lib/fsutil.h"
#include "lib/jread.h"

#include <math.h>
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>

void bench_run_release(struct bench_run *r) {
  json_decref(r->doc);
  free(r->cases);
  memset(r, 0, sizeof *r);
}

/* The run's device, when it recorded one: {"status": "available", "device": {"name", "uuid", ...}}. */
static int load_device(struct jr *j, struct bench_run *r) {
  const json_t *d = json_object_get(r->doc, "device");
  if (!d) return 0;
  const char *status = NULL;
  if (jr_str(j, d, "/device", "status", 1, &status)) return -1;
  if (strcmp(status, "available")) {
    r->no_gpu = 1;
    return 0;
  }
  const json_t *dev = jr_get(j, d, "/device", "device", 1, JSON_OBJECT);
  if (!dev) return -1;
  return jr_str(j, dev, "/device/device", "name", 1, &r->device) || jr_str(j, dev, "/device/device", "uuid", 1, &r->uuid);
}

/* A timed case's recorded fraction KEY against its median and bytes over the run's roofline: a file whose
 * figures disagree was changed after dkb bench wrote it, and which figure is the measurement it cannot
 * say, so it is malformed input (the tolerance is bench_check.py's: the figures are written in full). */
static int fraction_agrees(struct jr *j, const json_t *c, const char *p, const char *key, double median_us, double roofline_tbps) {
  const json_t *f = json_object_get(c, key);
  if (!f || json_is_null(f)) return 0;
  const int visible = !strcmp(key, "visible_roofline_fraction");
  double got = 0, io = 0, kv = 0, vis = 0;
  if (jr_num(j, c, p, key, 1, 0, 1e9, &got) || jr_num(j, c, p, "io_bytes", 1, 0, 1e18, &io) ||
      (visible && (jr_num(j, c, p, "kv_bytes", 1, 0, 1e18, &kv) || jr_num(j, c, p, "visible_kv_bytes", 1, 0, 1e18, &vis))))
    return -1;
  const double want = (visible ? vis + io - kv : io) / (median_us * 1e-6) / 1e12 / roofline_tbps;
  if (fabs(got - want) <= fmax(1e-9 * fmax(fabs(got), fabs(want)), 1e-12)) return 0;
  return jr_fail(j, p, key, "%.6g is not %s / median_us / the roofline's tbps = %.6g: the figures disagree (one changed after dkb "
                 "bench wrote them)", got, visible ? "(visible_kv_bytes + io_bytes - kv_bytes)" : "io_bytes", want);
}

static int load_case(struct jr *j, const json_t *c, const char *p, const struct bench_run *r, struct bench_run_case *bc) {
  if (!json_is_object(c)) return jr_fail(j, p, NULL, "must be an object (got %s)", jr_type_name(c));
  long long level = 0;
  if (jr_str(j, c, p, "name", 1, &bc->name) || jr_int(j, c, p, "level", 1, 0, 6, &level)) return -1;
  bc->level = (int)level;
  bc->median_us = 0;  /* null: not timed (runs before that was so recorded wrote 0) */
  if (!json_object_get(c, "median_us")) return jr_fail(j, p, NULL, "missing required key 'median_us'");
  if (!json_is_null(json_object_get(c, "median_us")) && jr_num(j, c, p, "median_us", 1, 0, 1e12, &bc->median_us)) return -1;
  bc->rel_stdev = NAN;
  const json_t *rs = json_object_get(c, "rel_stdev");
  if (rs && !json_is_null(rs) && jr_num(j, c, p, "rel_stdev", 1, 0, 1e9, &bc->rel_stdev)) return -1;
  bc->call_key = NULL;
  const json_t *k = json_object_get(c, "call_key_sha256");
  if (k && !json_is_null(k) && jr_str(j, c, p, "call_key_sha256", 1, &bc->call_key)) return -1;
  bc->frac = NAN;  /* over the visible bytes: a masked call's whole-cache fraction counts skipped bytes */
  const char *fk = json_object_get(c, "visible_roofline_fraction") ? "visible_roofline_fraction" : "roofline_fraction";
  const json_t *f = json_object_get(c, fk);  /* null: not timed, or no roofline */
  if (f && !json_is_null(f) && jr_num(j, c, p, fk, 1, 0, 1e9, &bc->frac)) return -1;
  if (!(bc->median_us > 0) || !r->roofline_measured) bc->frac = NAN;  /* not timed, or no roofline: no fraction */
  else if (fraction_agrees(j, c, p, "roofline_fraction", bc->median_us, r->roofline_tbps) ||
           fraction_agrees(j, c, p, "visible_roofline_fraction", bc->median_us, r->roofline_tbps))
    return -1;
  bc->fixture = json_string_value(json_object_get(c, "fixture"));
  const json_t *fs = json_object_get(c, "forced_splits");
  bc->forced_splits = json_is_integer(fs) ? json_integer_value(fs) : 0;
  bc->slowed = -1;
  const json_t *clk = json_object_get(c, "clocks");
  if (clk && !json_is_null(clk)) {
    char pc[DKB_PTR_MAX];
    jr_ptr_key(pc, p, "clocks");
    if (!json_is_object(clk)) return jr_fail(j, pc, NULL, "must be an object or null (got %s)", jr_type_name(clk));
    if (jr_bool(j, clk, pc, "slowed", 1, &bc->slowed)) return -1;
  }
  return 0;
}

int bench_run_load(const char *path, struct bench_run *r, struct dkb_err *err) {
  return bench_run_load_backend(path, NULL, r, err);
}

int bench_run_load_backend(const char *path, const char *backend, struct bench_run *r, struct dkb_err *err) {
  memset(r, 0, sizeof *r);
  size_t *at = NULL;
  struct stat st;  /* a bench output folder stands for its bench.json */
  const int too_long = stat(path, &st) == 0 && S_ISDIR(st.st_mode) ? dkb_path_join(r->path, sizeof r->path, path, "bench.json")
                                                                    : snprintf(r->path, sizeof r->path, "%s", path) >= (int)sizeof r->path;
  if (too_long) return dkb_err_set(err, DKB_USAGE, path, "", "path too long");
  r->doc = jr_load_file(r->path, err);
  if (!r->doc) return -1;
  struct jr j = {r->path, err, DKB_INPUT};
  const char *schema = NULL;
  if (jr_str(&j, r->doc, "", "schema", 1, &schema)) goto fail;
  if (strcmp(schema, "dkb.bench/v1")) {
    jr_fail(&j, "", "schema", "must be \"dkb.bench/v1\" (got \"%s\"): not a dkb bench result", schema);
    goto fail;
  }
  const json_t *meta = jr_get(&j, r->doc, "", "meta", 1, JSON_OBJECT);
  const json_t *roof = meta ? jr_get(&j, r->doc, "", "roofline", 1, JSON_OBJECT) : NULL;
  if (!roof || jr_str(&j, meta, "/meta", "commit", 1, &r->commit) || jr_str(&j, meta, "/meta", "created", 1, &r->created) ||
      jr_bool(&j, roof, "/roofline", "measured", 1, &r->roofline_measured) ||
      jr_num(&j, roof, "/roofline", "tbps", 1, 0, 1e9, &r->roofline_tbps) || load_device(&j, r))
    goto fail;
  const json_t *cases = jr_get(&j, r->doc, "", "cases", 1, JSON_ARRAY);
  if (!cases) goto fail;
  r->cases = DKB_CALLOC(json_array_size(cases) + 1, sizeof *r->cases);
  at = DKB_CALLOC(json_array_size(cases) + 1, sizeof *at);  /* each kept case's index in the file */
  for (size_t ci = 0; ci < json_array_size(cases); ci++) {
    char p[DKB_PTR_MAX];
    jr_ptr_idx(p, "/cases", ci);
    const json_t *cj = json_array_get(cases, ci);
    const char *b = json_string_value(json_object_get(cj, "backend"));
    if (backend && (!b || strcmp(b, backend))) continue;
    const int i = r->n++;
    at[i] = ci;
    if (load_case(&j, cj, p, r, &r->cases[i])) goto fail;
    for (int k = 0; k < i; k++)  /* cases are matched by name */
      if (!strcmp(r->cases[k].name, r->cases[i].name)) {
        jr_fail(&j, p, "name", "'%s' is also case %zu: names must be unique%s", r->cases[i].name, at[k],
                b ? " (a side-by-side run: name a backend, --base-backend / --new-backend)" : "");
        goto fail;
      }
  }
  free(at);
  at = NULL;
  r->backend = backend;
  if (backend && !r->n) {
    jr_fail(&j, "/cases", NULL, "no case ran under backend '%s'", backend);
    goto fail;
  }
  return 0;
fail:
  free(at);
  bench_run_release(r);
  return -1;
}

const char *bench_change_name(enum bench_change c) {
  static const char *const names[] = {"same", "faster", "slower", "unknown", "unmeasured", "other_call", "only_base", "only_new"};
  return names[c];
}

double bench_noise_band(double rel_a, double rel_b, double min_pct) {
  return isfinite(rel_a) && isfinite(rel_b) ? fmax(min_pct, 100 * (rel_a + rel_b)) : NAN;
}

int bench_run_find(const struct bench_run *r, const char *name) {
  for (int i = 0; i < r->n; i++)
    if (!strcmp(r->cases[i].name, name)) return i;
  return -1;
}

static int measured(const struct bench_run_case *c) { return c->level == 6 && c->median_us > 0; }

static void judge(const struct bench_run_case *a, const struct bench_run_case *b, const struct bench_diff_opts *o,
                  struct bench_delta *d) {
  d->pct = d->band = NAN;
  if (!measured(a) || !measured(b)) {
    d->change = CHANGE_UNMEASURED;
    return;
  }
  const int other = o->across_backends ? !a->fixture || !b->fixture || strcmp(a->fixture, b->fixture) ||
                                              a->forced_splits != b->forced_splits
                                        : a->call_key && b->call_key && strcmp(a->call_key, b->call_key);
  if (other) {
    d->change = CHANGE_OTHER_CALL;
    return;
  }
  d->pct = 100 * (b->median_us / a->median_us - 1);
  d->band = o->noise_pct > 0 ? o->noise_pct : bench_noise_band(a->rel_stdev, b->rel_stdev, o->min_noise_pct);
  if (!isfinite(d->band)) d->change = CHANGE_UNKNOWN;
  else if (fabs(d->pct) <= d->band) d->change = CHANGE_SAME;
  else d->change = d->pct < 0 ? CHANGE_FASTER : CHANGE_SLOWER;
}

int bench_diff(const struct bench_run *base, const struct bench_run *cand, const struct bench_diff_opts *o,
               struct bench_delta **out) {
  struct bench_delta *d = DKB_CALLOC((size_t)(base->n + cand->n) + 1, sizeof *d);
  int n = 0;
  for (int i = 0; i < base->n; i++) {
    struct bench_delta *x = &d[n++];
    x->base = i;
    x->cand = bench_run_find(cand, base->cases[i].name);
    if (x->cand < 0) {
      x->pct = x->band = NAN;
      x->change = CHANGE_ONLY_BASE;
    } else {
      judge(&base->cases[i], &cand->cases[x->cand], o, x);
    }
  }
  for (int k = 0; k < cand->n; k++)
    if (bench_run_find(base, cand->cases[k].name) < 0) d[n++] = (struct bench_delta){-1, k, NAN, NAN, CHANGE_ONLY_NEW};
  *out = d;
  return n;
}
