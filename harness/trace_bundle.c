/* trace_bundle.c - record files joined into dkb.trace/v1 bundles (see trace_bundle.h). The per-symbol
 * summary and the demangling are harness/trace.c's (dkb_trace_finalize over the range's kernels), the
 * same as `dkb run`'s capture uses. */
#include "harness/trace_bundle.h"
#include "evidence/trace_ladder.h"
#include "harness/trace.h"
#include "harness/trace_dumps.h"
#include "harness/trace_loaded.h"
#include "lib/cjson.h"
#include "lib/jread.h"
#include "oracles/stats.h"

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NONE ((size_t)-1)
#define CALL_PREFIX "dkb/call/"

static const char HASHED_BY[] =
    "SHA-256 of each file by dkb trace after the program ended; its device, inode, size and mtime are "
    "compared with what the program's loader map recorded (identity 'changed' or 'missing' otherwise); "
    "modules loaded from memory are hashed inside the program by the injection library";
static const char TIMED_METHOD[] =
    "sum of CUPTI CONCURRENT_KERNEL activity durations (end - start) of the kernels attributed to each "
    "instance, with tracing on (CUPTI callbacks and activity collection active): not a measurement in the "
    "article's level-6 sense (no untraced pass, no warm-up or stop rule)";

/* ---- correlation id -> range id ---- */

struct cmap { uint64_t *k, *v; size_t cap; };

static void cmap_put(struct cmap *m, uint32_t key, uint64_t val) {
  uint64_t k = (uint64_t)key + 1;
  for (size_t i = (k * 0x9E3779B97F4A7C15ull) & (m->cap - 1);; i = (i + 1) & (m->cap - 1))
    if (!m->k[i] || m->k[i] == k) { m->k[i] = k; m->v[i] = val; return; }
}
static int cmap_get(const struct cmap *m, uint32_t key, uint64_t *val) {
  uint64_t k = (uint64_t)key + 1;
  for (size_t i = (k * 0x9E3779B97F4A7C15ull) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
    if (!m->k[i]) return 0;
    if (m->k[i] == k) { *val = m->v[i]; return 1; }
  }
}
static void cmap_init(struct cmap *m, size_t n) {
  m->cap = 16;
  while (m->cap < 2 * n + 16) m->cap *= 2;
  m->k = DKB_CALLOC(m->cap, sizeof *m->k);
  m->v = DKB_CALLOC(m->cap, sizeof *m->v);
}
static void cmap_free(struct cmap *m) { free(m->k); free(m->v); }

/* ---- per process ---- */

struct proc_ctx {
  const struct tr_proc *p;
  size_t *owner;          /* range index -> index of the selected range instance owning it, NONE */
  size_t *kernel_inst;    /* kernel -> owning instance range index, NONE */
  size_t *copy_inst;
  size_t *launch_inst;
  size_t *map_inst;       /* loader map -> owning instance */
  unsigned char *kernel_ok; /* per launch: its kernel record arrived (K launches) */
};

struct ctx {
  const struct trace_run *run;
  struct trace_loaded loaded;
  struct trace_dumps dumps;
};

static int selected(const struct trace_run *run, const char *name) {
  if (!name) return 0;
  if (!run->patterns || !run->npatterns) return !strncmp(name, CALL_PREFIX, sizeof CALL_PREFIX - 1);
  for (size_t i = 0; i < run->npatterns; i++)
    if (!fnmatch(run->patterns[i], name, 0)) return 1;
  return 0;
}

static size_t range_index(const struct tr_proc *p, uint64_t id) {
  const struct tr_range *r = id ? tr_proc_range(p, id) : NULL;
  return r ? (size_t)(r - p->ranges) : NONE;
}

static void proc_ctx_build(struct proc_ctx *x, const struct tr_proc *p, const struct trace_run *run) {
  memset(x, 0, sizeof *x);
  x->p = p;
  x->owner = DKB_MALLOC((p->nranges + 1) * sizeof *x->owner);
  for (size_t i = 0; i < p->nranges; i++) {
    size_t parent = range_index(p, p->ranges[i].parent);
    x->owner[i] = selected(run, p->ranges[i].name) ? i : parent != NONE && parent < i ? x->owner[parent] : NONE;
  }
  struct cmap m;
  cmap_init(&m, p->nlaunches);
  x->launch_inst = DKB_MALLOC((p->nlaunches + 1) * sizeof *x->launch_inst);
  for (size_t i = 0; i < p->nlaunches; i++) {
    size_t r = range_index(p, p->launches[i].range);
    x->launch_inst[i] = r == NONE ? NONE : x->owner[r];
    cmap_put(&m, p->launches[i].corr, p->launches[i].range);
  }
  uint64_t rid;
  x->kernel_inst = DKB_MALLOC((p->nkernels + 1) * sizeof *x->kernel_inst);
  struct cmap kc; /* the correlation ids kernel records carry */
  cmap_init(&kc, p->nkernels);
  for (size_t i = 0; i < p->nkernels; i++) {
    size_t r = cmap_get(&m, p->kernels[i].corr, &rid) ? range_index(p, rid) : NONE;
    x->kernel_inst[i] = r == NONE ? NONE : x->owner[r];
    cmap_put(&kc, p->kernels[i].corr, 1);
  }
  x->copy_inst = DKB_MALLOC((p->ncopies + 1) * sizeof *x->copy_inst);
  for (size_t i = 0; i < p->ncopies; i++) {
    const struct tr_copy *c = &p->copies[i];
    size_t r = cmap_get(&m, c->corr, &rid) || (c->rt_corr && cmap_get(&m, c->rt_corr, &rid)) ? range_index(p, rid) : NONE;
    x->copy_inst[i] = r == NONE ? NONE : x->owner[r];
  }
  /* a runtime launch is served when a kernel carries its id or the id of a driver call it made */
  struct cmap served;
  cmap_init(&served, p->nlaunches);
  for (size_t i = 0; i < p->nlaunches; i++)
    if (p->launches[i].outer && cmap_get(&kc, p->launches[i].corr, &rid)) cmap_put(&served, p->launches[i].outer, 1);
  x->kernel_ok = DKB_CALLOC(p->nlaunches + 1, 1);
  for (size_t i = 0; i < p->nlaunches; i++)
    x->kernel_ok[i] = cmap_get(&kc, p->launches[i].corr, &rid) || cmap_get(&served, p->launches[i].corr, &rid);
  x->map_inst = DKB_MALLOC((p->nmaps + 1) * sizeof *x->map_inst);
  for (size_t i = 0; i < p->nmaps; i++) {
    size_t r = range_index(p, p->maps[i].range);
    x->map_inst[i] = r == NONE ? NONE : x->owner[r];
  }
  cmap_free(&m);
  cmap_free(&kc);
  cmap_free(&served);
}

static void proc_ctx_free(struct proc_ctx *x) {
  free(x->owner); free(x->kernel_inst); free(x->copy_inst); free(x->launch_inst); free(x->map_inst); free(x->kernel_ok);
}

/* ---- sections ---- */

static json_t *jstr_or_null(const char *s) { return s ? json_string(s) : json_null(); }

static json_t *process_json(const struct trace_run *run, const struct tr_proc *p) {
  const struct tr_cupti_call *sub = tr_proc_cupti(p, "cuptiSubscribe"), *act = tr_proc_cupti(p, "cuptiActivityEnable(CONCURRENT_KERNEL)");
  const char *status = p->forked_from && !sub ? "forked" : !sub ? "not_initialized" : sub->code ? "refused"
                       : act && act->code ? "refused" : "subscribed";
  char rel[4200];
  const char *base = strrchr(p->file, '/');
  snprintf(rel, sizeof rel, "records/%s", base ? base + 1 : p->file);
  json_t *cupti = json_pack("{s:s,s:o,s:o,s:o}", "status", status, "version",
                            p->cupti_version ? json_integer(p->cupti_version) : json_null(), "subscribe",
                            sub ? json_pack("{s:I,s:o}", "code", (json_int_t)sub->code, "text", jstr_or_null(sub->text)) : json_null(),
                            "kernel_activity",
                            act ? json_pack("{s:I,s:o}", "code", (json_int_t)act->code, "text", jstr_or_null(act->text)) : json_null());
  json_t *end = p->has_end ? json_pack("{s:I,s:I,s:I,s:I,s:I}", "lines_stated", (json_int_t)p->end_lines, "lines_read",
                                       (json_int_t)p->lines_at_end, "lost", (json_int_t)p->lost, "write_errors",
                                       (json_int_t)p->write_errors, "open_ranges", (json_int_t)p->end_open_ranges)
                           : json_null();
  (void)run;
  return json_pack("{s:I,s:I,s:o,s:o,s:s,s:{s:s,s:s,s:I,s:b},s:o,s:o,s:o,s:b,s:o,s:o,s:I,s:I,s:I}", "pid", (json_int_t)p->pid,
                   "ppid", (json_int_t)p->ppid, "forked_from", p->forked_from ? json_integer(p->forked_from) : json_null(),
                   "exe", jstr_or_null(p->exe), "how", p->how, "records", "file", rel, "sha256", p->sha256, "lines",
                   (json_int_t)p->lines, "truncated", p->truncated, "cupti", cupti, "cuda_injection",
                   jstr_or_null(p->cuda_injection), "nvtx_injection", jstr_or_null(p->nvtx_injection), "end_record",
                   p->has_end, "end", end, "exit_flush", p->exit_flush[0] ? json_string(p->exit_flush) : json_null(),
                   "range_end_flushes", (json_int_t)p->range_end_flushes, "dropped_records", (json_int_t)p->dropped,
                   "unmatched_pops", (json_int_t)p->unmatched_pops);
}

static json_t *program_json(const struct trace_run *run, const struct tr_proc *p) {
  int direct = p->pid == run->child_pid && !p->forked_from;
  json_t *exit = direct && run->child_exit ? json_incref(run->child_exit) : json_pack("{s:s}", "kind", "not_observed");
  return json_pack("{s:O,s:b,s:o}", "argv", run->argv, "direct_child", direct, "exit", exit);
}

/* The declared call key from a range name: parsed, digested, and whether the name held canonical bytes. */
static json_t *declared_json(const char *name) {
  if (!name || strncmp(name, CALL_PREFIX, sizeof CALL_PREFIX - 1))
    return json_pack("{s:n,s:n,s:n,s:s}", "call_key", "call_key_sha256", "message_canonical", "parse_error",
                     "the range is not named dkb/call/ + a call key");
  const char *text = name + sizeof CALL_PREFIX - 1;
  struct dkb_err e;
  json_t *key = jr_load_string(text, "the call key", &e);
  if (!key || !json_is_object(key)) {
    char msg[1200];
    if (key) snprintf(msg, sizeof msg, "the call key must be a JSON object");
    else dkb_err_format(&e, msg, sizeof msg);
    json_decref(key);
    return json_pack("{s:n,s:n,s:n,s:s}", "call_key", "call_key_sha256", "message_canonical", "parse_error", msg);
  }
  char sha[65];
  struct dkb_buf b;
  dkb_buf_init(&b);
  int canon = cjson_write(key, 0, &b, &e) == 0 && b.p && !strcmp(b.p, text);
  dkb_buf_release(&b);
  if (cjson_digest(key, sha, &e)) {
    json_decref(key);
    return json_pack("{s:n,s:n,s:n,s:s}", "call_key", "call_key_sha256", "message_canonical", "parse_error", e.msg);
  }
  return json_pack("{s:o,s:s,s:b,s:n}", "call_key", key, "call_key_sha256", sha, "message_canonical", canon, "parse_error");
}

static json_t *triple(const int32_t v[3]) { return json_pack("[i,i,i]", v[0], v[1], v[2]); }

/* Kernels of the instances in `in` (in[range index] != 0): trace.c's per-symbol summary, durations,
 * streams, graph launches, and the modules whose symbol tables hold the name. modules_used marks them. */
static json_t *kernels_json(const struct proc_ctx *x, const unsigned char *in, unsigned char *modules_used,
                            json_t **split_combine) {
  const struct tr_proc *p = x->p;
  struct dkb_trace t;
  memset(&t, 0, sizeof t);
  size_t nk = 0;
  for (size_t i = 0; i < p->nkernels; i++) nk += x->kernel_inst[i] != NONE && in[x->kernel_inst[i]];
  t.kernels = DKB_CALLOC(nk ? nk : 1, sizeof *t.kernels);
  size_t *src = DKB_MALLOC((nk ? nk : 1) * sizeof *src);
  for (size_t i = 0; i < p->nkernels; i++) {
    if (x->kernel_inst[i] == NONE || !in[x->kernel_inst[i]]) continue;
    const struct tr_kernel *k = &p->kernels[i];
    struct dkb_trace_kernel *o = &t.kernels[t.nkernels];
    src[t.nkernels++] = i;
    o->name = DKB_STRDUP(k->name);
    o->correlation_id = k->corr;
    memcpy(o->grid, k->grid, sizeof o->grid);
    memcpy(o->block, k->block, sizeof o->block);
    memcpy(o->cluster, k->cluster, sizeof o->cluster);
    o->registers = (uint16_t)k->regs;
    o->static_smem = k->smem_static;
    o->dynamic_smem = k->smem_dynamic;
    o->start_ns = k->start;
    o->end_ns = k->end;
    o->device_id = k->dev, o->context_id = k->ctx, o->stream_id = k->stream, o->graph_id = k->graph;
  }
  dkb_trace_finalize(&t);
  json_t *arr = json_array(), *splits = json_array(), *combines = json_array();
  for (size_t s = 0; s < t.nsymbols; s++) {
    const struct dkb_trace_symbol *sym = &t.symbols[s];
    uint64_t sum = 0, mn = UINT64_MAX, mx = 0;
    size_t graphs = 0;
    json_t *streams = json_array();
    for (size_t i = 0; i < t.nkernels; i++) {
      const struct dkb_trace_kernel *k = &t.kernels[i];
      if (strcmp(k->name, sym->name)) continue;
      if (k->end_ns > k->start_ns && k->start_ns) {
        uint64_t d = k->end_ns - k->start_ns;
        sum += d;
        if (d < mn) mn = d;
        if (d > mx) mx = d;
      }
      graphs += k->graph_id != 0;
      int seen = 0;
      for (size_t q = 0; q < json_array_size(streams); q++) seen |= json_integer_value(json_array_get(streams, q)) == k->stream_id;
      if (!seen) json_array_append_new(streams, json_integer(k->stream_id));
    }
    json_t *mods = json_array();
    for (size_t m = 0; m < p->nmodules; m++)
      for (size_t q = 0; q < p->modules[m].nsymbols; q++)
        if (!strcmp(p->modules[m].symbols[q], sym->name)) {
          json_array_append_new(mods, json_integer(p->modules[m].id));
          modules_used[m] = 1;
          break;
        }
    int role = trace_kernel_role(sym->demangled);
    if (role == 1) json_array_append_new(combines, json_string(sym->demangled));
    if (role == 2) json_array_append_new(splits, json_string(sym->demangled));
    const struct dkb_trace_kernel *f = sym->first;
    json_array_append_new(
        arr, json_pack("{s:s,s:s,s:I,s:o,s:o,s:o,s:i,s:i,s:i,s:o,s:I,s:{s:I,s:o,s:o},s:o,s:o}", "symbol", sym->name,
                       "demangled", sym->demangled, "launches", (json_int_t)sym->launches, "grid", triple(f->grid), "block",
                       triple(f->block), "cluster", triple(f->cluster), "registers_per_thread", (int)f->registers,
                       "static_shared_bytes", (int)f->static_smem, "dynamic_shared_bytes", (int)f->dynamic_smem, "streams",
                       streams, "graph_launches", (json_int_t)graphs, "duration_ns", "sum", (json_int_t)sum, "min",
                       mn == UINT64_MAX ? json_null() : json_integer((json_int_t)mn), "max",
                       mn == UINT64_MAX ? json_null() : json_integer((json_int_t)mx), "modules", mods, "role",
                       role == 1 ? json_string("combine") : role == 2 ? json_string("split") : json_null()));
  }
  *split_combine = json_pack("{s:s,s:b,s:b,s:o,s:o}", "rule", TRACE_SPLIT_RULE, "split", json_array_size(splits) + json_array_size(combines) > 0, "combine",
                             json_array_size(combines) > 0, "split_kernels", splits, "combine_kernels", combines);
  dkb_trace_release(&t);
  free(src);
  return arr;
}

/* The loader maps a bundle cites, each once: maps[pos[s]] is process map s (the first of its equals). */
struct cited_maps {
  json_t *maps;
  size_t *pos;  /* NONE: not cited */
};

/* Totals over a bundle's instances, for its summary row. */
struct inst_totals {
  size_t kernels, launches;
  uint64_t gpu_ns;
  int all_closed;
};

/* One instance of the range (range index r of x's process): its launches, kernels, copies, loader map. */
static json_t *instance_json(struct ctx *c, const struct proc_ctx *x, size_t r, struct cited_maps *cm, struct inst_totals *t) {
  const struct tr_proc *p = x->p;
  const struct tr_range *rg = &p->ranges[r];
  size_t launches = 0, captured = 0, missing = 0, nk = 0, incomplete = 0, ncp = 0, nms = 0;
  uint64_t gpu = 0, lo = UINT64_MAX, hi = 0, cpb = 0, msb = 0;
  for (size_t i = 0; i < p->nlaunches; i++) {
    if (x->launch_inst[i] != r) continue;
    const struct tr_launch *l = &p->launches[i];
    if (l->outer) continue; /* the runtime call it was made by counts */
    launches++;
    if (l->capturing) { captured++; continue; }
    if (l->kind == 'K' && l->rc == 0 && !x->kernel_ok[i]) missing++;
  }
  for (size_t i = 0; i < p->nkernels; i++) {
    if (x->kernel_inst[i] != r) continue;
    const struct tr_kernel *k = &p->kernels[i];
    nk++;
    if (!k->start || !k->end || k->end < k->start) { incomplete++; continue; }
    gpu += k->end - k->start;
    if (k->start < lo) lo = k->start;
    if (k->end > hi) hi = k->end;
  }
  for (size_t i = 0; i < p->ncopies; i++) {
    if (x->copy_inst[i] != r) continue;
    if (p->copies[i].is_memset) { nms++; msb += p->copies[i].bytes; }
    else { ncp++; cpb += p->copies[i].bytes; }
  }
  json_t *mref = json_null();
  for (size_t i = 0; i < p->nmaps; i++)
    if (x->map_inst[i] == r) {
      size_t s = p->maps[i].same_as;
      if (cm->pos[s] == NONE) {
        cm->pos[s] = json_array_size(cm->maps);
        json_array_append_new(cm->maps, trace_loaded_map_json(&c->loaded, &p->maps[s]));
      }
      mref = json_integer((json_int_t)cm->pos[s]);
      break;
    }
  t->kernels += nk;
  t->launches += launches;
  t->gpu_ns += gpu;
  t->all_closed &= rg->popped;
  return json_pack("{s:I,s:I,s:i,s:b,s:o,s:I,s:I,s:I,s:I,s:I,s:I,s:o,s:I,s:I,s:I,s:I,s:o}", "id", (json_int_t)rg->id,
                   "thread_id", (json_int_t)rg->tid, "depth", rg->depth, "closed", rg->popped, "cpu_ns",
                   rg->popped ? json_integer((json_int_t)(rg->t_pop - rg->t_push)) : json_null(), "launch_calls",
                   (json_int_t)launches, "captured_launches", (json_int_t)captured, "launches_without_record",
                   (json_int_t)missing, "kernels", (json_int_t)nk, "incomplete_kernel_records", (json_int_t)incomplete,
                   "gpu_ns", (json_int_t)gpu, "span_ns", hi > lo ? json_integer((json_int_t)(hi - lo)) : json_null(),
                   "memcpys", (json_int_t)ncp, "memcpy_bytes", (json_int_t)cpb, "memsets", (json_int_t)nms, "memset_bytes",
                   (json_int_t)msb, "loader_map", mref);
}

/* The modules the bundle's kernels came from. */
static json_t *modules_json(const struct tr_proc *p, const unsigned char *used) {
  json_t *modules = json_array();
  for (size_t m = 0; m < p->nmodules; m++) {
    if (!used[m]) continue;
    const struct tr_module *md = &p->modules[m];
    json_array_append_new(modules, json_pack("{s:I,s:I,s:o,s:s,s:I,s:o,s:b}", "id", (json_int_t)md->id, "bytes",
                                             (json_int_t)md->bytes, "sha256", md->sha256[0] ? json_string(md->sha256) : json_null(),
                                             "format", md->format, "symbols", (json_int_t)md->nsymbols, "in_object",
                                             jstr_or_null(md->in_object), "unloaded", md->unloaded));
  }
  return modules;
}

/* One bundle: the instances of `name` in process p. */
static json_t *bundle_doc(struct ctx *c, const struct proc_ctx *x, const char *name, json_t **row) {
  const struct tr_proc *p = x->p;
  unsigned char *in = DKB_CALLOC(p->nranges + 1, 1);
  size_t ninst = 0;
  for (size_t i = 0; i < p->nranges; i++)
    if (x->owner[i] == i && ((!name && !p->ranges[i].name) || (name && p->ranges[i].name && !strcmp(name, p->ranges[i].name)))) {
      in[i] = 1;
      ninst++;
    }
  unsigned char *modules_used = DKB_CALLOC(p->nmodules + 1, 1);
  json_t *split_combine = NULL;
  json_t *kernels = kernels_json(x, in, modules_used, &split_combine);
  json_t *instances = json_array(), *per_gpu = json_array();
  struct cited_maps cm = {json_array(), DKB_MALLOC((p->nmaps + 1) * sizeof *cm.pos)};
  for (size_t i = 0; i < p->nmaps; i++) cm.pos[i] = NONE;
  struct inst_totals tot = {0, 0, 0, 1};
  for (size_t r = 0; r < p->nranges; r++) {
    if (!in[r]) continue;
    const uint64_t before = tot.gpu_ns;
    json_array_append_new(instances, instance_json(c, x, r, &cm, &tot));
    json_array_append_new(per_gpu, json_integer((json_int_t)(tot.gpu_ns - before)));
  }
  json_t *modules = modules_json(p, modules_used);
  /* GPU time: the summary the grader recomputes */
  size_t ng = json_array_size(per_gpu);
  double *v = DKB_MALLOC((ng ? ng : 1) * sizeof *v);
  for (size_t i = 0; i < ng; i++) v[i] = (double)json_integer_value(json_array_get(per_gpu, i));
  struct dkb_stats st;
  dkb_stats_compute(v, ng, &st);
  free(v);
  json_t *timed = json_pack("{s:b,s:s,s:s,s:o,s:o}", "tracing", 1, "method", TIMED_METHOD, "unit", "ns",
                            "per_instance_gpu_ns", per_gpu, "summary",
                            ng ? json_pack("{s:I,s:f,s:f,s:f}", "count", (json_int_t)st.count, "min", st.min, "median",
                                           st.median, "max", st.max)
                               : json_null());
  json_t *declared = declared_json(name);
  const char *sha = json_string_value(json_object_get(declared, "call_key_sha256"));
  json_t *doc = json_pack("{s:s,s:O,s:s,s:o,s:o,s:{s:s,s:s,s:o},s:o,s:o,s:o,s:{s:o,s:o,s:s},s:o,s:o}", "schema",
                          TRACE_SCHEMA_ID, "meta", c->run->meta, "article_levels", "not_claimed", "program",
                          program_json(c->run, p), "process", process_json(c->run, p), "range", "name",
                          name ? name : "", "selected_by",
                          c->run->npatterns ? "--range" : "dkb/call/*", "instances", instances, "declared", declared,
                          "kernels", kernels, "split_combine", split_combine, "loaded", "maps", cm.maps, "modules", modules,
                          "hashed_by", HASHED_BY, "checked", trace_dumps_checked(&c->dumps, sha), "timed", timed);
  /* the summary row for people */
  json_t *kshort = json_array();
  for (size_t i = 0; i < json_array_size(kernels); i++)
    json_array_append_new(kshort, json_pack("{s:O,s:O}", "demangled", json_object_get(json_array_get(kernels, i), "demangled"),
                                            "launches", json_object_get(json_array_get(kernels, i), "launches")));
  *row = json_pack("{s:I,s:s,s:o,s:I,s:I,s:I,s:I,s:o,s:b,s:b,s:o,s:b}", "pid", (json_int_t)p->pid, "range", name ? name : "",
                   "call_key_sha256", jstr_or_null(sha), "instances", (json_int_t)ninst, "kernels",
                   (json_int_t)json_array_size(kernels), "launches", (json_int_t)tot.kernels, "launch_calls",
                   (json_int_t)tot.launches, "kernel_list", kshort, "split",
                   json_is_true(json_object_get(split_combine, "split")), "combine",
                   json_is_true(json_object_get(split_combine, "combine")), "gpu_ns_median",
                   ng ? json_real(st.median) : json_null(), "all_closed", tot.all_closed);
  free(in);
  free(modules_used);
  free(cm.pos);
  return doc;
}

/* ---- the run ---- */

/* Ended without everything it recorded: a cut line, lost or dropped records, and with CUPTI on, no exit
 * path, a line count other than the end record's, or no final flush. NVTX records are written as they
 * happen, so a process without CUPTI had nothing waiting for a flush. A process without a bundle (a
 * compiler worker the framework killed) does not count: it is evidence of nothing. */
static int proc_incomplete(const struct tr_proc *p) {
  const struct tr_cupti_call *sub = tr_proc_cupti(p, "cuptiSubscribe");
  if (p->truncated || p->dropped || p->lost || p->write_errors) return 1;
  if (!sub || sub->code) return 0;
  return !p->has_end || p->end_lines != p->lines_at_end || strcmp(p->exit_flush, "done");
}

static json_t *proc_summary(const struct trace_run *run, const struct tr_proc *p) {
  json_t *pj = process_json(run, p);
  json_t *row = json_pack("{s:O,s:O,s:O,s:O,s:O,s:O,s:O,s:I}", "pid", json_object_get(pj, "pid"), "forked_from",
                          json_object_get(pj, "forked_from"), "exe", json_object_get(pj, "exe"), "records",
                          json_object_get(pj, "records"), "cupti", json_object_get(json_object_get(pj, "cupti"), "status"),
                          "end_record", json_object_get(pj, "end_record"), "dropped_records",
                          json_object_get(pj, "dropped_records"), "ranges", (json_int_t)p->nranges);
  json_object_set_new(row, "kernels", json_integer((json_int_t)p->nkernels));
  json_decref(pj);
  return row;
}

int trace_bundles_build(const struct tr_proc *procs, size_t nprocs, const struct trace_run *run,
                        struct trace_bundle_set *out, struct dkb_err *err) {
  memset(out, 0, sizeof *out);
  struct ctx c = {.run = run};
  trace_loaded_hash(&c.loaded, procs, nprocs);
  for (size_t i = 0; i < run->ndump_dirs; i++) trace_dumps_find(&c.dumps, run->dump_dirs[i]);
  json_t *rows = json_array(), *plist = json_array();
  size_t cap = 0;
  int rc = 0;
  for (size_t k = 0; k < nprocs && !rc; k++) {
    const struct tr_proc *p = &procs[k];
    json_array_append_new(plist, proc_summary(run, p));
    struct proc_ctx x;
    proc_ctx_build(&x, p, run);
    for (size_t r = 0; r < p->nranges && !rc; r++) {
      if (x.owner[r] != r) continue;
      int first = 1; /* one bundle per name: its first instance makes it */
      for (size_t q = 0; q < r && first; q++)
        if (x.owner[q] == q && ((!p->ranges[q].name && !p->ranges[r].name) ||
                                (p->ranges[q].name && p->ranges[r].name && !strcmp(p->ranges[q].name, p->ranges[r].name))))
          first = 0;
      if (!first) continue;
      json_t *row = NULL;
      json_t *doc = bundle_doc(&c, &x, p->ranges[r].name, &row);
      out->incomplete |= proc_incomplete(p);
      struct trace_grade g;
      trace_grade_init(&g);
      if (trace_ladder_evaluate(doc, "(the bundle being written)", NULL, &g, err)) {
        /* the writer's own document must grade: anything else is dkb's bug */
        err->code = DKB_INTERNAL;
        json_decref(doc);
        json_decref(row);
        trace_grade_release(&g);
        rc = -1;
        break;
      }
      json_object_set_new(doc, "findings", trace_grade_json(&g));
      json_object_set_new(doc, "claims", trace_grade_claims(&g));
      json_t *held = json_object();
      for (int f = 0; f < TF_COUNT; f++) json_object_set_new(held, trace_finding_names[f], json_boolean(g.holds[f]));
      json_object_set_new(row, "findings", held);
      trace_grade_release(&g);
      if (out->n == cap) {
        cap = cap ? 2 * cap : 8;
        out->docs = DKB_REALLOC(out->docs, cap * sizeof *out->docs);
        out->names = DKB_REALLOC(out->names, cap * sizeof *out->names);
      }
      const char *sha = json_string_value(json_object_get(row, "call_key_sha256"));
      char fname[128];
      snprintf(fname, sizeof fname, "%zu-%ld-%.12s.json", out->n + 1, p->pid, sha ? sha : "undeclared");
      json_object_set_new(row, "bundle", json_pack("s+", "calls/", fname));
      out->docs[out->n] = doc;
      out->names[out->n] = DKB_STRDUP(fname);
      out->n++;
      json_array_append_new(rows, row);
    }
    proc_ctx_free(&x);
  }
  json_t *dumps = trace_dumps_json(&c.dumps);
  out->dump_malformed = c.dumps.malformed;
  out->dump_failed = c.dumps.failed;
  trace_dumps_release(&c.dumps);
  trace_loaded_release(&c.loaded);
  out->summary = json_pack("{s:s,s:O,s:O,s:O,s:o,s:o,s:o}", "schema", "dkb.trace-summary/v1", "meta", run->meta, "argv",
                           run->argv, "exit", run->child_exit ? run->child_exit : json_null(), "processes", plist, "calls",
                           rows, "dumps", dumps);
  if (rc) trace_bundle_set_release(out);
  return rc;
}

void trace_bundle_set_release(struct trace_bundle_set *s) {
  for (size_t i = 0; i < s->n; i++) { json_decref(s->docs[i]); free(s->names[i]); }
  free(s->docs);
  free(s->names);
  json_decref(s->summary);
  memset(s, 0, sizeof *s);
}
