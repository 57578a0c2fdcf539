/* bench_write.c - what a bench run leaves in its folder (see bench.h): bench.json (the cases, the roofline,
 * the floors and the verdicts, schemas/bench.schema.json), bench.csv and roofline-fraction.svg. */
#include "harness/bench.h"
#include "lib/buf.h"
#include "lib/cjson.h"
#include "lib/fsutil.h"
#include "harness/nvml.h"
#include "include/dkb/backend.h"
#include "evidence/bundle.h"
#include "kernels/kernels.h"
#include "oracles/kv_address.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A figure of a case that has one (a median; for a fraction, a roofline too), else null: a case that was
 * not timed measured nothing, and a 0 would read as a measurement. */
static json_t *figure(int has, double x) { return has ? json_real(x) : json_null(); }

static json_t *case_json(const struct bench_case *bc, const struct bench_roofline *r) {
  const int timed = bc->median_us > 0, frac = timed && r->measured;
  json_t *c = json_pack("{s:s,s:s,s:s,s:i,s:i,s:i,s:i,s:i,s:s,s:f,s:b,s:i,s:s,s:o,s:f,s:f,s:f,s:o,s:o,s:o,s:o,s:o,s:{s:I,s:I,s:I},s:s,s:o}",
                   "name", bc->name, "fixture", bc->fixture, "layout", bc->layout, "B", bc->B, "S_q", bc->C, "H_q",
                   bc->H_q, "H_kv", bc->H_kv, "d", bc->d, "dtype", bc->dtype, "mean_kv_len", bc->mean_len, "ran",
                   bc->ran, "level", bc->level, "terminal", bc->terminal, "median_us", figure(timed, bc->median_us), "io_bytes",
                   bc->io_bytes, "kv_bytes", bc->kv_bytes, "visible_kv_bytes", bc->visible_kv_bytes, "tbps", figure(timed, bc->tbps),
                   "roofline_fraction", figure(frac, bc->frac), "visible_tbps", figure(timed, bc->visible_tbps),
                   "visible_roofline_fraction", figure(frac, bc->visible_frac), "splits",
                   bc->splits == DKB_SPLITS_UNREPORTED ? json_null() : json_integer(bc->splits), "tiles", "SKIP",
                   (json_int_t)bc->tiles[0], "FULL", (json_int_t)bc->tiles[1], "PARTIAL", (json_int_t)bc->tiles[2], "bundle",
                   bc->bundle_dir, "forced_splits", bc->forced_splits ? json_integer(bc->forced_splits) : json_null());
  json_object_set_new(c, "backend", bc->backend[0] ? json_string(bc->backend) : json_null());
  json_object_set_new(c, "selected", bc->selected[0] ? json_string(bc->selected) : json_null());
  if (bc->why[0]) json_object_set_new(c, "why", json_string(bc->why));
  json_object_set_new(c, "rel_stdev", bc->samples ? json_real(bc->rel_stdev) : json_null());  /* null: not timed */
  json_object_set_new(c, "samples", json_integer(bc->samples));
  json_object_set_new(c, "call_key_sha256", bc->call_key[0] ? json_string(bc->call_key) : json_null());
  json_object_set_new(c, "graph", json_boolean(bc->graph));
  json_object_set_new(c, "excess_us", isfinite(bc->excess_us) ? json_real(bc->excess_us) : json_null());
  json_object_set_new(c, "read_us", bc->read_us > 0 ? json_real(bc->read_us) : json_null());
  json_object_set_new(c, "read_samples", json_integer(bc->read_us > 0 ? bc->read_samples : 0));
  json_object_set_new(c, "read_fraction", bc->read_us > 0 && isfinite(bc->read_fraction) ? json_real(bc->read_fraction) : json_null());
  if (bc->read_reason[0]) json_object_set_new(c, "read_reason", json_string(bc->read_reason));
  if (bc->dram_measured) {  /* --counters */
    json_object_set_new(c, "dram_read_bytes", json_real(bc->dram_read_bytes));
    json_object_set_new(c, "dram_kv_ratio", isfinite(bc->dram_kv_ratio) ? json_real(bc->dram_kv_ratio) : json_null());
  }
  json_t *clk = json_null();
  if (bc->clocks_reported)
    clk = json_pack("{s:o,s:o,s:o,s:b}", "sm_mhz_before", bc->sm_mhz[0] >= 0 ? json_integer(bc->sm_mhz[0]) : json_null(),
                    "sm_mhz_after", bc->sm_mhz[1] >= 0 ? json_integer(bc->sm_mhz[1]) : json_null(), "event_reasons",
                    dkb_nvml_reason_names_json(bc->clock_reasons), "slowed", dkb_nvml_reasons_slow(bc->clock_reasons));
  json_object_set_new(c, "clocks", clk);
  return c;
}

/* Roofline fraction against mean context length (log2 axis), one series per layout, each call's
 * same-bytes read beside it. */
static void svg(const struct bench_matrix *m, struct dkb_buf *o) {
  const double W = 720, H = 420, L = 70, R = 170, T = 30, Bm = 50;
  double xmin = 1e30, xmax = 0;
  for (int i = 0; i < m->n; i++)
    if (m->cases[i].ran && m->cases[i].median_us > 0) {
      xmin = fmin(xmin, log2(m->cases[i].mean_len));
      xmax = fmax(xmax, log2(m->cases[i].mean_len));
    }
  if (xmin > xmax) { xmin = 0; xmax = 1; }  /* no measured point: an empty chart */
  if (xmax <= xmin) { xmin -= 1; xmax += 1; }
  dkb_buf_addf(o, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%g\" height=\"%g\" viewBox=\"0 0 %g %g\" role=\"img\">\n", W, H, W, H);
  dkb_buf_addf(o, "<title>%s: fraction of the streaming-read roofline by context length</title>\n", m->name);
  dkb_buf_addf(o, "<rect width=\"%g\" height=\"%g\" fill=\"white\"/>\n", W, H);
  for (int k = 0; k <= 10; k += 2) {
    double y = T + (H - T - Bm) * (1 - k / 10.0);
    dkb_buf_addf(o, "<line x1=\"%g\" x2=\"%g\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/><text x=\"%g\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">%.1f</text>\n",
                 L, W - R, y, y, L - 6, y + 4, k / 10.0);
  }
  for (int e = (int)floor(xmin); e <= (int)ceil(xmax); e++) {
    double x = L + (W - L - R) * (e - xmin) / (xmax - xmin);
    if (x < L - 1 || x > W - R + 1) continue;
    dkb_buf_addf(o, "<text x=\"%.1f\" y=\"%g\" font-size=\"11\" text-anchor=\"middle\">%.0f</text>\n", x, H - Bm + 16, pow(2, e));
  }
  dkb_buf_addf(o, "<text x=\"%g\" y=\"%g\" font-size=\"12\" text-anchor=\"middle\">mean keys per request (log scale)</text>\n", (L + W - R) / 2, H - 12);
  dkb_buf_addf(o, "<text x=\"16\" y=\"%g\" font-size=\"12\" transform=\"rotate(-90 16 %g)\" text-anchor=\"middle\">fraction of roofline (hollow: visible bytes of a masked call)</text>\n", (T + H - Bm) / 2, (T + H - Bm) / 2);
  static const char *const COLORS[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e"};
  int reads = 0;  /* a same-bytes read was drawn: it gets a legend entry */
  for (int l = 0; l < KV_LAYOUT_COUNT; l++) {
    const char *name = kv_layout_name((enum kv_layout_kind)l);
    int any = 0;
    for (int i = 0; i < m->n; i++) {
      const struct bench_case *bc = &m->cases[i];
      if (!bc->ran || bc->median_us <= 0 || strcmp(bc->layout, name)) continue;
      /* a masked call is plotted at its visible-bytes fraction (hollow): its whole-cache figure counts
       * bytes it rightly never read and can exceed 1 */
      const int masked = bc->tiles[0] > 0;
      const double f = masked ? bc->visible_frac : bc->frac;
      double x = L + (W - L - R) * (log2(bc->mean_len) - xmin) / (xmax - xmin), y = T + (H - T - Bm) * (1 - fmin(f, 1.0));
      dkb_buf_addf(o, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\" stroke=\"%s\"><title>%s: %s%.3f</title></circle>\n", x, y,
                   masked ? "white" : COLORS[l], COLORS[l], bc->name, masked ? "visible " : "", f);
      /* the same-bytes read's fraction of the roofline (visible bytes / read time / roofline = vfrac /
       * rfrac): what one launch that only reads the call's bytes reaches at this size, a grey dash */
      if (bc->read_us > 0 && isfinite(bc->read_fraction) && bc->read_fraction > 0 && bc->visible_frac > 0) {
        const double rf = bc->visible_frac / bc->read_fraction, ry = T + (H - T - Bm) * (1 - fmin(rf, 1.0));
        dkb_buf_addf(o, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#888\" stroke-width=\"2\"><title>%s: "
                     "same-bytes read %.3f</title></line>\n", x - 7, x + 7, ry, ry, bc->name, rf);
        reads = 1;
      }
      any = 1;
    }
    if (any)
      dkb_buf_addf(o, "<circle cx=\"%g\" cy=\"%g\" r=\"4\" fill=\"%s\"/><text x=\"%g\" y=\"%g\" font-size=\"12\">%s</text>\n", W - R + 16,
                   T + 10 + 18.0 * l, COLORS[l], W - R + 26, T + 14 + 18.0 * l, name);
  }
  if (reads)
    dkb_buf_addf(o, "<line x1=\"%g\" x2=\"%g\" y1=\"%g\" y2=\"%g\" stroke=\"#888\" stroke-width=\"2\"/><text x=\"%g\" y=\"%g\" "
                 "font-size=\"12\">same-bytes read</text>\n", W - R + 9, W - R + 23, T + 10 + 18.0 * KV_LAYOUT_COUNT,
                 T + 10 + 18.0 * KV_LAYOUT_COUNT, W - R + 26, T + 14 + 18.0 * KV_LAYOUT_COUNT);
  dkb_buf_adds(o, "</svg>\n");
}

int bench_write(const char *dir, const struct bench_matrix *m, const struct bench_roofline *r, const struct bench_verdict *v,
                int nv, const struct dkb_device_info *dev, int argc, char **argv, struct dkb_err *err) {
  char path[4200];
  struct dkb_buf b;
  dkb_buf_init(&b);
  int rc = -1;
  json_t *cases = json_array();
  for (int i = 0; i < m->n; i++) json_array_append_new(cases, case_json(&m->cases[i], r));
  json_t *doc = json_pack("{s:s,s:o,s:s,s:{s:b,s:f,s:f,s:f,s:I,s:s,s:s},s:s,s:o}", "schema", "dkb.bench/v1", "meta",
                          bundle_meta_new(argc, argv), "matrix", m->name, "roofline", "measured", r->measured, "bytes",
                          r->bytes, "median_us", r->median_us, "tbps", r->tbps, "samples", (json_int_t)r->samples, "kernel",
                          dkb_roofline_symbol, "reason", r->reason, "bandwidth_formula",
                          "(unique K/V bytes + Q bytes + O bytes) / median time, decimal TB/s; visible: K/V of non-SKIP tiles only",
                          "cases", cases);
  json_object_set_new(doc, "excess_formula",
                      json_string("median_us - launch_floor median_us (graph: launch_floor.graph) - (visible K/V + Q + O "
                                  "bytes) / roofline: the call's cost beyond an empty launch and its read at the roofline"));
  json_object_set_new(doc, "read_formula",
                      json_string("read_us: the median of the roofline kernel over a buffer of the case's visible K/V + Q + O "
                                  "bytes (rounded down to 16), timed as the case was (its graph mode, the run's cold flag); "
                                  "read_fraction = read_us / median_us: the call's speed as a fraction of a plain read of "
                                  "the bytes it must read"));
  json_t *targets = json_array();
  for (int i = 0; i < nv; i++)
  {
    const struct bench_case *tc = &m->cases[v[i].case_index];
    json_t *t = json_pack("{s:s,s:s,s:f,s:o,s:s}", "case", tc->name, "target", v[i].what, "want", v[i].want, "got",
                          isfinite(v[i].got) ? json_real(v[i].got) : json_null(), "verdict", bench_verdict_name(v[i].state));
    if (tc->backend[0]) json_object_set_new(t, "backend", json_string(tc->backend));
    if (v[i].peer_index >= 0) json_object_set_new(t, "peer", json_string(m->cases[v[i].peer_index].backend));
    const int banded = isfinite(v[i].noise_pct);
    json_object_set_new(t, "noise_pct", banded ? json_real(v[i].noise_pct) : json_null());
    json_object_set_new(t, "beyond_noise", banded ? json_boolean(v[i].beyond_noise) : json_null());
    json_array_append_new(targets, t);
  }
  json_object_set_new(doc, "targets", targets);
  json_object_set_new(doc, "cold", json_boolean(m->cold));  /* whether counters' DRAM ratios bear on the timed calls */
  if (m->nbackends) {
    json_t *bs = json_array();
    for (int k = 0; k < m->nbackends; k++) json_array_append_new(bs, json_string(m->backends[k]));
    json_object_set_new(doc, "backends", bs);
  }
  if (dev) json_object_set_new(doc, "device", dkb_device_json(dev));
  const struct bench_floor *fp = &r->floor[0], *fg = &r->floor[1];
  json_object_set_new(doc, "launch_floor",
                      json_pack("{s:b,s:s,s:f,s:I,s:s,s:s,s:{s:b,s:f,s:I,s:s}}", "measured", fp->measured, "kernel",
                                dkb_empty_symbol, "median_us", fp->us, "samples", (json_int_t)fp->samples, "reason", fp->reason,
                                "meaning",
                                "an empty kernel (one CTA of 32 threads) timed by the cases' method with plain launches: the "
                                "least any case can measure; graph: the same kernel replayed from a CUDA graph, the floor of "
                                "--graph cases",
                                "graph", "measured", fg->measured, "median_us", fg->us, "samples", (json_int_t)fg->samples,
                                "reason", fg->reason));
  if (cjson_write(doc, 2, &b, err)) goto cleanup;
  dkb_buf_addc(&b, '\n');
  if (dkb_path_join(path, sizeof path, dir, "bench.json") || dkb_write_atomic(path, b.p, b.n, err)) goto cleanup;
  dkb_buf_release(&b);
  dkb_buf_adds(&b, "name,layout,B,S_q,H_q,H_kv,d,dtype,mean_kv_len,splits,median_us,io_bytes,tbps,roofline_fraction,visible_tbps,visible_roofline_fraction,tiles_skip,tiles_full,tiles_partial,level,rel_stdev,samples,graph,excess_us,sm_mhz_after,slowed,read_us,read_fraction,backend,selected\n");
  for (int i = 0; i < m->n; i++) {
    const struct bench_case *bc = &m->cases[i];
    char rs[32] = "";  /* empty when not timed */
    if (bc->samples) snprintf(rs, sizeof rs, "%.5f", bc->rel_stdev);
    char ex[32] = "";  /* empty when not derivable */
    if (isfinite(bc->excess_us)) snprintf(ex, sizeof ex, "%.3f", bc->excess_us);
    char rd[32] = "", rf[32] = "";  /* empty when the same-bytes read was not measured */
    if (bc->read_us > 0) snprintf(rd, sizeof rd, "%.3f", bc->read_us);
    if (bc->read_us > 0 && isfinite(bc->read_fraction)) snprintf(rf, sizeof rf, "%.4f", bc->read_fraction);
    char med[32] = "", tb[32] = "", vtb[32] = "", fr[32] = "", vfr[32] = "";  /* empty when not timed (fractions: or no roofline) */
    if (bc->median_us > 0) {
      snprintf(med, sizeof med, "%.3f", bc->median_us);
      snprintf(tb, sizeof tb, "%.4f", bc->tbps);
      snprintf(vtb, sizeof vtb, "%.4f", bc->visible_tbps);
      if (r->measured) {
        snprintf(fr, sizeof fr, "%.4f", bc->frac);
        snprintf(vfr, sizeof vfr, "%.4f", bc->visible_frac);
      }
    }
    char mhz[16] = "", slow[8] = "";  /* empty when NVML reported no clocks */
    char split[16] = "";               /* empty when the backend does not report its split */
    if (bc->splits != DKB_SPLITS_UNREPORTED) snprintf(split, sizeof split, "%d", bc->splits);
    if (bc->clocks_reported) {
      if (bc->sm_mhz[1] >= 0) snprintf(mhz, sizeof mhz, "%d", bc->sm_mhz[1]);
      snprintf(slow, sizeof slow, "%d", dkb_nvml_reasons_slow(bc->clock_reasons));
    }
    dkb_buf_addf(&b, "%s,%s,%d,%d,%d,%d,%d,%s,%.1f,%s,%s,%.0f,%s,%s,%s,%s,%lld,%lld,%lld,%d,%s,%lld,%d,%s,%s,%s,%s,%s,%s,%s\n",
                 bc->name, bc->layout, bc->B, bc->C, bc->H_q, bc->H_kv, bc->d, bc->dtype, bc->mean_len, split, med,
                 bc->io_bytes, tb, fr, vtb, vfr, bc->tiles[0], bc->tiles[1], bc->tiles[2], bc->level, rs, bc->samples, bc->graph,
                 ex, mhz, slow, rd, rf, bc->backend, bc->selected);
  }
  if (dkb_path_join(path, sizeof path, dir, "bench.csv") || dkb_write_atomic(path, b.p, b.n, err)) goto cleanup;
  dkb_buf_release(&b);
  svg(m, &b);
  if (dkb_path_join(path, sizeof path, dir, "roofline-fraction.svg") || dkb_write_atomic(path, b.p, b.n, err)) goto cleanup;
  rc = 0;
cleanup:
  json_decref(doc);
  dkb_buf_release(&b);
  return rc;
}
