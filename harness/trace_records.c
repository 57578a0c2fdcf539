/* trace_records.c - reading the injection library's record files (see trace_records.h). */
#include "harness/trace_records.h"
#include "lib/buf.h"
#include "lib/jread.h"
#include "lib/sha256.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GROW(p, n, capi, T)                                                    \
  do {                                                                         \
    if ((n) == p->cap_[capi]) {                                                \
      p->cap_[capi] = p->cap_[capi] ? 2 * p->cap_[capi] : 64;                  \
      (T) = DKB_REALLOC((T), p->cap_[capi] * sizeof *(T));                     \
    }                                                                          \
  } while (0)

static const long long U32 = 4294967295LL, I64 = 9223372036854775807LL;

struct line_ctx {
  struct jr r;
  char where[4200];  /* "file:line", the name errors carry */
};

static int u64v(struct line_ctx *c, const json_t *o, const char *key, int required, uint64_t *out) {
  long long v = (long long)*out;
  if (jr_int(&c->r, o, "", key, required, 0, I64, &v)) return -1;
  *out = (uint64_t)v;
  return 0;
}
static int u32v(struct line_ctx *c, const json_t *o, const char *key, int required, uint32_t *out) {
  long long v = *out;
  if (jr_int(&c->r, o, "", key, required, 0, U32, &v)) return -1;
  *out = (uint32_t)v;
  return 0;
}
static int i64v(struct line_ctx *c, const json_t *o, const char *key, int required, int64_t *out) {
  long long v = *out;
  if (jr_int(&c->r, o, "", key, required, -I64, I64, &v)) return -1;
  *out = v;
  return 0;
}
static int longv(struct line_ctx *c, const json_t *o, const char *key, int required, long *out) {
  long long v = *out;
  if (jr_int(&c->r, o, "", key, required, 0, I64, &v)) return -1;
  *out = (long)v;
  return 0;
}
/* A string member copied out; NULL stays NULL when the member is JSON null. */
static int strv(struct line_ctx *c, const json_t *o, const char *key, int required, int nullable, char **out) {
  json_t *v = json_object_get(o, key);
  if (!v) return required ? jr_fail(&c->r, "", NULL, "missing required key '%s'", key) : 0;
  if (json_is_null(v) && nullable) return 0;
  if (!json_is_string(v)) return jr_fail(&c->r, "", key, "must be a string%s (got %s)", nullable ? " or null" : "", jr_type_name(v));
  *out = DKB_STRDUP(json_string_value(v));
  return 0;
}
static int boolv(struct line_ctx *c, const json_t *o, const char *key, int *out) {
  return jr_bool(&c->r, o, "", key, 0, out);
}
static int dim3v(struct line_ctx *c, const json_t *o, const char *key, int32_t out[3]) {
  long long *v = NULL;
  size_t n = 0;
  if (jr_int_array(&c->r, o, "", key, 1, -2147483648LL, 2147483647LL, 3, &v, &n)) return -1;
  for (int i = 0; i < 3; i++) out[i] = (int32_t)v[i];
  free(v);
  return 0;
}
static int sha_or_null(struct line_ctx *c, const json_t *o, const char *key, char out[65]) {
  char *s = NULL;
  out[0] = '\0';
  if (strv(c, o, key, 1, 1, &s)) return -1;
  if (s && !dkb_is_sha256_hex(s)) {
    free(s);
    return jr_fail(&c->r, "", key, "must be 64 lower-case hex digits or null");
  }
  if (s) memcpy(out, s, 65);
  free(s);
  return 0;
}

static int rec_start(struct line_ctx *c, const json_t *o, struct tr_proc *p) {
  static const char *const req[] = {"r", "v", "pid", "ppid", "how", "time_ns", "exe", NULL};
  static const char *const opt[] = {"forked_from", "cuda_injection", "nvtx_injection", NULL};
  static const char *const HOW[] = {"nvtx", "cuda", "fork", NULL};
  long long v = 0;
  int how = 0;
  if (jr_keys(&c->r, o, "", req, opt) || jr_int(&c->r, o, "", "v", 1, 1, 1, &v) || longv(c, o, "pid", 1, &p->pid) ||
      longv(c, o, "ppid", 1, &p->ppid) || longv(c, o, "forked_from", 0, &p->forked_from) ||
      jr_enum(&c->r, o, "", "how", 1, HOW, &how) || u64v(c, o, "time_ns", 1, &p->time_ns) ||
      strv(c, o, "exe", 1, 1, &p->exe) || strv(c, o, "cuda_injection", 0, 1, &p->cuda_injection) ||
      strv(c, o, "nvtx_injection", 0, 1, &p->nvtx_injection))
    return -1;
  snprintf(p->how, sizeof p->how, "%s", HOW[how]);
  return 0;
}

static int rec_cupti(struct line_ctx *c, const json_t *o, struct tr_proc *p) {
  static const char *const req[] = {"r", "api", "code", NULL}, *const opt[] = {"text", "version", NULL};
  struct tr_cupti_call x = {0};
  if (jr_keys(&c->r, o, "", req, opt) || strv(c, o, "api", 1, 0, &x.api) || i64v(c, o, "code", 1, &x.code) ||
      strv(c, o, "text", 0, 1, &x.text) || u32v(c, o, "version", 0, &p->cupti_version)) {
    free(x.api);
    free(x.text);
    return -1;
  }
  GROW(p, p->ncupti, 0, p->cupti);
  p->cupti[p->ncupti++] = x;
  return 0;
}

static int rec_push(struct line_ctx *c, const json_t *o, struct tr_proc *p) {
  static const char *const req[] = {"r", "id", "parent", "tid", "depth", "t", "name", NULL};
  static const char *const opt[] = {"domain", "message", "untracked", NULL};
  static const char *const MSG[] = {"unicode", "registered", "none", NULL};
  struct tr_range x = {0};
  long long depth = 0;
  int msg = -1;
  if (jr_keys(&c->r, o, "", req, opt) || u64v(c, o, "id", 1, &x.id) || u64v(c, o, "parent", 1, &x.parent) ||
      longv(c, o, "tid", 1, &x.tid) || jr_int(&c->r, o, "", "depth", 1, 0, 1 << 30, &depth) ||
      u64v(c, o, "t", 1, &x.t_push) || u64v(c, o, "domain", 0, &x.domain) || boolv(c, o, "untracked", &x.untracked) ||
      jr_enum(&c->r, o, "", "message", 0, MSG, &msg) || strv(c, o, "name", 1, 1, &x.name)) {
    free(x.name);
    return -1;
  }
  if (x.id == 0) { free(x.name); return jr_fail(&c->r, "", "id", "must be >= 1 (got 0)"); }
  x.depth = (int)depth;
  snprintf(x.message, sizeof x.message, "%s", msg >= 0 ? MSG[msg] : "");
  GROW(p, p->nranges, 1, p->ranges);
  p->ranges[p->nranges++] = x;
  return 0;
}

static int rec_pop(struct line_ctx *c, const json_t *o, struct tr_proc *p) {
  static const char *const req[] = {"r", "id", "tid", "t", NULL}, *const opt[] = {"unmatched", NULL};
  uint64_t id = 0, t = 0;
  long tid = 0;
  int unmatched = 0;
  if (jr_keys(&c->r, o, "", req, opt) || u64v(c, o, "id", 1, &id) || longv(c, o, "tid", 1, &tid) ||
      u64v(c, o, "t", 1, &t) || boolv(c, o, "unmatched", &unmatched))
    return -1;
  if (id == 0) { p->unmatched_pops += unmatched; return 0; } /* untracked (too deep) or unmatched */
  for (size_t i = p->nranges; i-- > 0;)
    if (p->ranges[i].id == id) {
      if (p->ranges[i].popped) return jr_fail(&c->r, "", "id", "range %llu popped twice", (unsigned long long)id);
      p->ranges[i].popped = 1;
      p->ranges[i].t_pop = t;
      return 0;
    }
  if (p->forked_from) { p->unmatched_pops++; return 0; } /* a range the fork parent pushed */
  return jr_fail(&c->r, "", "id", "pops range %llu, which was never pushed", (unsigned long long)id);
}

static int rec_launch(struct line_ctx *c, const json_t *o, struct tr_proc *p) {
  static const char *const req[] = {"r", "corr", "dom", "api", "kind", "tid", "range", "rc", NULL};
  static const char *const opt[] = {"outer", "capturing", NULL};
  static const char *const DOM[] = {"rt", "drv", NULL}, *const KIND[] = {"K", "G", "C", "S", NULL};
  struct tr_launch x = {0};
  int dom = 0, kind = 0;
  if (jr_keys(&c->r, o, "", req, opt) || u32v(c, o, "corr", 1, &x.corr) || jr_enum(&c->r, o, "", "dom", 1, DOM, &dom) ||
      jr_enum(&c->r, o, "", "kind", 1, KIND, &kind) || longv(c, o, "tid", 1, &x.tid) || u64v(c, o, "range", 1, &x.range) ||
      i64v(c, o, "rc", 1, &x.rc) || u32v(c, o, "outer", 0, &x.outer) || boolv(c, o, "capturing", &x.capturing) ||
      strv(c, o, "api", 1, 1, &x.api)) {
    free(x.api);
    return -1;
  }
  x.driver = dom == 1;
  x.kind = KIND[kind][0];
  GROW(p, p->nlaunches, 2, p->launches);
  p->launches[p->nlaunches++] = x;
  return 0;
}

static int rec_kernel(struct line_ctx *c, const json_t *o, struct tr_proc *p) {
  static const char *const req[] = {"r", "corr", "name", "grid", "block", "cluster", "regs", "smem_static",
                                    "smem_dynamic", "start", "end", "dev", "ctx", "stream", "graph", NULL};
  static const char *const opt[] = {"graph_node", "launch_type", "device_launched", NULL};
  struct tr_kernel x = {0};
  long long ss = 0, sd = 0;
  if (jr_keys(&c->r, o, "", req, opt) || u32v(c, o, "corr", 1, &x.corr) || dim3v(c, o, "grid", x.grid) ||
      dim3v(c, o, "block", x.block) || dim3v(c, o, "cluster", x.cluster) || u32v(c, o, "regs", 1, &x.regs) ||
      jr_int(&c->r, o, "", "smem_static", 1, 0, 2147483647LL, &ss) ||
      jr_int(&c->r, o, "", "smem_dynamic", 1, 0, 2147483647LL, &sd) || u64v(c, o, "start", 1, &x.start) ||
      u64v(c, o, "end", 1, &x.end) || u32v(c, o, "dev", 1, &x.dev) || u32v(c, o, "ctx", 1, &x.ctx) ||
      u32v(c, o, "stream", 1, &x.stream) || u32v(c, o, "graph", 1, &x.graph) || strv(c, o, "name", 1, 0, &x.name)) {
    free(x.name);
    return -1;
  }
  x.smem_static = (int32_t)ss;
  x.smem_dynamic = (int32_t)sd;
  GROW(p, p->nkernels, 3, p->kernels);
  p->kernels[p->nkernels++] = x;
  return 0;
}

static int rec_copy(struct line_ctx *c, const json_t *o, struct tr_proc *p, int is_memset) {
  static const char *const mreq[] = {"r", "corr", "copy", "bytes", "start", "end", "dev", "ctx", "stream", "graph", NULL};
  static const char *const mopt[] = {"rt_corr", "src_dev", "dst_dev", NULL};
  static const char *const sreq[] = {"r", "corr", "bytes", "value", "start", "end", "dev", "ctx", "stream", "graph", NULL};
  struct tr_copy x = {0};
  x.is_memset = is_memset;
  uint32_t ignored = 0;
  char *copy = NULL;
  if (jr_keys(&c->r, o, "", is_memset ? sreq : mreq, is_memset ? NULL : mopt) || u32v(c, o, "corr", 1, &x.corr) ||
      u32v(c, o, "rt_corr", 0, &x.rt_corr) || u64v(c, o, "bytes", 1, &x.bytes) || u64v(c, o, "start", 1, &x.start) ||
      u64v(c, o, "end", 1, &x.end) || u32v(c, o, "stream", 1, &x.stream) || u32v(c, o, "graph", 1, &x.graph) ||
      u32v(c, o, "dev", 1, &ignored) || u32v(c, o, "ctx", 1, &ignored) || (is_memset && u32v(c, o, "value", 1, &ignored)) ||
      (!is_memset && strv(c, o, "copy", 1, 0, &copy)))
    return -1;
  if (copy) {
    snprintf(x.copy, sizeof x.copy, "%s", copy);
    free(copy);
  }
  GROW(p, p->ncopies, 4, p->copies);
  p->copies[p->ncopies++] = x;
  return 0;
}

static int rec_module(struct line_ctx *c, const json_t *o, struct tr_proc *p) {
  static const char *const EV[] = {"load", "unload", NULL};
  int ev = 0;
  uint32_t id = 0;
  if (jr_enum(&c->r, o, "", "ev", 1, EV, &ev) || u32v(c, o, "id", 1, &id)) return -1;
  if (ev == 1) {
    static const char *const req[] = {"r", "ev", "id", NULL};
    if (jr_keys(&c->r, o, "", req, NULL)) return -1;
    for (size_t i = 0; i < p->nmodules; i++)
      if (p->modules[i].id == id) p->modules[i].unloaded = 1;
    return 0;
  }
  static const char *const req[] = {"r", "ev", "id", "bytes", "sha256", NULL};
  static const char *const opt[] = {"format", "symbols", "in_object", NULL};
  static const char *const FMT[] = {"elf", "fatbin", "other", NULL};
  struct tr_module x = {0};
  x.id = id;
  int fmt = 2;
  if (jr_keys(&c->r, o, "", req, opt) || u64v(c, o, "bytes", 1, &x.bytes) || sha_or_null(c, o, "sha256", x.sha256) ||
      jr_enum(&c->r, o, "", "format", 0, FMT, &fmt) || strv(c, o, "in_object", 0, 1, &x.in_object))
    return -1;
  snprintf(x.format, sizeof x.format, "%s", FMT[fmt]);
  json_t *syms = jr_get(&c->r, o, "", "symbols", 0, JSON_ARRAY);
  if (!syms && json_object_get(o, "symbols")) { free(x.in_object); return -1; }
  x.nsymbols = json_array_size(syms);
  x.symbols = DKB_CALLOC(x.nsymbols ? x.nsymbols : 1, sizeof *x.symbols);
  for (size_t i = 0; i < x.nsymbols; i++) {
    const char *s = json_string_value(json_array_get(syms, i));
    if (!s) {
      char ptr[DKB_PTR_MAX];
      jr_ptr_idx(ptr, "/symbols", i);
      for (size_t k = 0; k < i; k++) free(x.symbols[k]);
      free(x.symbols);
      free(x.in_object);
      return jr_fail(&c->r, ptr, NULL, "must be a string");
    }
    x.symbols[i] = DKB_STRDUP(s);
  }
  GROW(p, p->nmodules, 5, p->modules);
  p->modules[p->nmodules++] = x;
  return 0;
}

static int rec_loadmap(struct line_ctx *c, const json_t *o, struct tr_proc *p) {
  static const char *const req[] = {"r", "range", "adds", "subs", NULL};
  static const char *const opt[] = {"objects", "unchanged", "failed", NULL};
  struct tr_loadmap x = {0};
  uint64_t ignored = 0;
  int unchanged = 0;
  if (jr_keys(&c->r, o, "", req, opt) || u64v(c, o, "range", 1, &x.range) || u64v(c, o, "adds", 1, &ignored) ||
      u64v(c, o, "subs", 1, &ignored) || boolv(c, o, "unchanged", &unchanged) || boolv(c, o, "failed", &x.failed))
    return -1;
  json_t *objs = jr_get(&c->r, o, "", "objects", !unchanged, JSON_ARRAY);
  if (!unchanged && !objs) return -1;
  if (unchanged) {
    if (objs) return jr_fail(&c->r, "", "objects", "an unchanged map lists no objects");
    size_t k = p->nmaps;
    while (k > 0 && p->maps[k - 1].same_as != k - 1) k--; /* the last full snapshot */
    if (k == 0) return jr_fail(&c->r, "", "unchanged", "no earlier loader map to be unchanged from");
    x.same_as = p->maps[k - 1].same_as;
  } else {
    x.same_as = p->nmaps;
    x.nobjects = json_array_size(objs);
    x.objects = DKB_CALLOC(x.nobjects ? x.nobjects : 1, sizeof *x.objects);
    for (size_t i = 0; i < x.nobjects; i++) {
      static const char *const oreq[] = {"path", NULL};
      static const char *const oopt[] = {"dev", "ino", "size", "mtime_ns", "missing", "main", NULL};
      const json_t *e = json_array_get(objs, i);
      char ptr[DKB_PTR_MAX];
      jr_ptr_idx(ptr, "/objects", i);
      struct tr_object *ob = &x.objects[i];
      long long v;
      const char *path = NULL;
      int bad = jr_keys(&c->r, e, ptr, oreq, oopt) || jr_str(&c->r, e, ptr, "path", 1, &path) ||
                jr_bool(&c->r, e, ptr, "missing", 0, &ob->missing) || jr_bool(&c->r, e, ptr, "main", 0, &ob->main);
      const char *const nums[] = {"dev", "ino", "size", "mtime_ns"};
      uint64_t *dst[] = {&ob->dev, &ob->ino, &ob->size, &ob->mtime_ns};
      for (int k = 0; k < 4 && !bad; k++) {
        v = 0;
        bad = jr_int(&c->r, e, ptr, nums[k], !ob->missing, 0, I64, &v);
        *dst[k] = (uint64_t)v;
      }
      if (bad) {
        for (size_t k = 0; k < i; k++) free(x.objects[k].path);
        free(x.objects);
        return -1;
      }
      ob->path = DKB_STRDUP(path);
    }
  }
  GROW(p, p->nmaps, 6, p->maps);
  p->maps[p->nmaps++] = x;
  return 0;
}

static int rec_flush(struct line_ctx *c, const json_t *o, struct tr_proc *p) {
  static const char *const req[] = {"r", "why", "code", "outcome", NULL};
  static const char *const WHY[] = {"range_end", "exit", NULL}, *const OUT[] = {"done", "failed", "timed_out", NULL};
  int why = 0, outcome = 0;
  int64_t code = 0;
  if (jr_keys(&c->r, o, "", req, NULL) || jr_enum(&c->r, o, "", "why", 1, WHY, &why) ||
      jr_enum(&c->r, o, "", "outcome", 1, OUT, &outcome) || i64v(c, o, "code", 1, &code))
    return -1;
  if (why == 0) p->range_end_flushes++;
  else {
    snprintf(p->exit_flush, sizeof p->exit_flush, "%s", OUT[outcome]);
    p->exit_flush_code = code;
  }
  return 0;
}

static int rec_end(struct line_ctx *c, const json_t *o, struct tr_proc *p) {
  static const char *const req[] = {"r", "why", "open_ranges", "lines", "lost", "write_errors", NULL};
  static const char *const WHY[] = {"exit", NULL};
  int why = 0;
  uint64_t lines = 0;
  if (p->has_end) return jr_fail(&c->r, "", "r", "a second end record");
  if (jr_keys(&c->r, o, "", req, NULL) || jr_enum(&c->r, o, "", "why", 1, WHY, &why) ||
      i64v(c, o, "open_ranges", 1, &p->end_open_ranges) || u64v(c, o, "lines", 1, &lines) ||
      u64v(c, o, "lost", 1, &p->lost) || u64v(c, o, "write_errors", 1, &p->write_errors))
    return -1;
  p->has_end = 1;
  p->end_lines = (size_t)lines;
  p->lines_at_end = p->lines + 1;
  return 0;
}

static int rec_simple(struct line_ctx *c, const json_t *o, struct tr_proc *p, const char *kind) {
  if (!strcmp(kind, "dropped")) {
    static const char *const req[] = {"r", "n", NULL};
    uint64_t n = 0;
    if (jr_keys(&c->r, o, "", req, NULL) || u64v(c, o, "n", 1, &n)) return -1;
    p->dropped += n;
    return 0;
  }
  /* "domain": its name is in the push records that use it */
  static const char *const req[] = {"r", "index", "name", NULL};
  uint64_t ix = 0;
  const char *name = NULL;
  return jr_keys(&c->r, o, "", req, NULL) || u64v(c, o, "index", 1, &ix) || jr_str(&c->r, o, "", "name", 1, &name) ? -1 : 0;
}

static int take_line(const char *path, size_t lineno, const char *text, size_t n, struct tr_proc *p, struct dkb_err *err) {
  struct line_ctx c;
  snprintf(c.where, sizeof c.where, "%s:%zu", path, lineno);
  c.r = (struct jr){.file = c.where, .err = err, .code = DKB_INPUT};
  json_error_t je;
  json_t *o = json_loadb(text, n, JSON_REJECT_DUPLICATES, &je);
  if (!o) return dkb_err_set(err, DKB_INPUT, c.where, NULL, "not a JSON record: %s", je.text);
  const char *kind = NULL;
  int rc = -1;
  if (!json_is_object(o)) { jr_fail(&c.r, "", NULL, "a record must be a JSON object"); goto done; }
  if (jr_str(&c.r, o, "", "r", 1, &kind)) goto done;
  if (lineno == 1 && strcmp(kind, "start")) { jr_fail(&c.r, "", "r", "the first record must be start (got '%s')", kind); goto done; }
  if (lineno > 1 && !strcmp(kind, "start")) { jr_fail(&c.r, "", "r", "a second start record"); goto done; }
  if (!strcmp(kind, "start")) rc = rec_start(&c, o, p);
  else if (!strcmp(kind, "cupti")) rc = rec_cupti(&c, o, p);
  else if (!strcmp(kind, "push")) rc = rec_push(&c, o, p);
  else if (!strcmp(kind, "pop")) rc = rec_pop(&c, o, p);
  else if (!strcmp(kind, "launch")) rc = rec_launch(&c, o, p);
  else if (!strcmp(kind, "kernel")) rc = rec_kernel(&c, o, p);
  else if (!strcmp(kind, "memcpy")) rc = rec_copy(&c, o, p, 0);
  else if (!strcmp(kind, "memset")) rc = rec_copy(&c, o, p, 1);
  else if (!strcmp(kind, "module")) rc = rec_module(&c, o, p);
  else if (!strcmp(kind, "loadmap")) rc = rec_loadmap(&c, o, p);
  else if (!strcmp(kind, "flush")) rc = rec_flush(&c, o, p);
  else if (!strcmp(kind, "end")) rc = rec_end(&c, o, p);
  else if (!strcmp(kind, "dropped") || !strcmp(kind, "domain")) rc = rec_simple(&c, o, p, kind);
  else jr_fail(&c.r, "", "r", "unknown record kind '%s'", kind);
done:
  json_decref(o);
  return rc;
}

int tr_proc_read(const char *path, struct tr_proc *p, struct dkb_err *err) {
  memset(p, 0, sizeof *p);
  snprintf(p->file, sizeof p->file, "%s", path);
  FILE *f = fopen(path, "rb");
  if (!f) return dkb_err_set(err, DKB_INTERNAL, path, NULL, "cannot open: %s", strerror(errno));
  struct dkb_buf b;
  dkb_buf_init(&b);
  int bad = dkb_buf_add_file(&b, f);
  fclose(f);
  if (bad) {
    dkb_buf_release(&b);
    return dkb_err_set(err, DKB_INTERNAL, path, NULL, "cannot read: %s", strerror(bad));
  }
  int rc = -1;
  if (dkb_sha256_buf(b.p ? b.p : "", b.n, p->sha256, err)) goto done;
  if (b.n == 0) { dkb_err_set(err, DKB_INPUT, path, NULL, "empty record file: no start record"); goto done; }
  for (size_t at = 0; at < b.n;) {
    char *nl = memchr(b.p + at, '\n', b.n - at);
    if (!nl) { p->truncated = 1; break; } /* the process died while writing this line */
    if (take_line(path, p->lines + 1, b.p + at, (size_t)(nl - (b.p + at)), p, err)) goto done;
    p->lines++;
    at = (size_t)(nl - b.p) + 1;
  }
  if (p->lines == 0) { dkb_err_set(err, DKB_INPUT, path, NULL, "no complete record: the first line is cut off"); goto done; }
  rc = 0;
done:
  dkb_buf_release(&b);
  if (rc) tr_proc_release(p);
  return rc;
}

void tr_proc_release(struct tr_proc *p) {
  free(p->exe); free(p->cuda_injection); free(p->nvtx_injection);
  for (size_t i = 0; i < p->ncupti; i++) { free(p->cupti[i].api); free(p->cupti[i].text); }
  for (size_t i = 0; i < p->nranges; i++) free(p->ranges[i].name);
  for (size_t i = 0; i < p->nlaunches; i++) free(p->launches[i].api);
  for (size_t i = 0; i < p->nkernels; i++) free(p->kernels[i].name);
  for (size_t i = 0; i < p->nmodules; i++) {
    for (size_t k = 0; k < p->modules[i].nsymbols; k++) free(p->modules[i].symbols[k]);
    free(p->modules[i].symbols);
    free(p->modules[i].in_object);
  }
  for (size_t i = 0; i < p->nmaps; i++) {
    for (size_t k = 0; k < p->maps[i].nobjects; k++) free(p->maps[i].objects[k].path);
    free(p->maps[i].objects);
  }
  free(p->cupti); free(p->ranges); free(p->launches); free(p->kernels); free(p->copies); free(p->modules); free(p->maps);
  memset(p, 0, sizeof *p);
}

const struct tr_range *tr_proc_range(const struct tr_proc *p, uint64_t id) {
  /* ids grow in push order within a process: binary search */
  size_t lo = 0, hi = p->nranges;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (p->ranges[mid].id < id) lo = mid + 1;
    else hi = mid;
  }
  return lo < p->nranges && p->ranges[lo].id == id ? &p->ranges[lo] : NULL;
}

const struct tr_cupti_call *tr_proc_cupti(const struct tr_proc *p, const char *api) {
  for (size_t i = 0; i < p->ncupti; i++)
    if (!strcmp(p->cupti[i].api, api)) return &p->cupti[i];
  return NULL;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int tr_read_dir(const char *dir, struct tr_proc **procs, size_t *n, struct dkb_err *err) {
  *procs = NULL;
  *n = 0;
  DIR *d = opendir(dir);
  if (!d) return dkb_err_set(err, DKB_INTERNAL, dir, NULL, "cannot open folder: %s", strerror(errno));
  char **names = NULL;
  size_t nn = 0, cap = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    size_t len = strlen(e->d_name);
    if (strncmp(e->d_name, "records.", 8) || len < 14 || strcmp(e->d_name + len - 6, ".jsonl")) continue;
    if (nn == cap) names = DKB_REALLOC(names, (cap = cap ? 2 * cap : 16) * sizeof *names);
    names[nn++] = DKB_STRDUP(e->d_name);
  }
  closedir(d);
  if (nn) qsort(names, nn, sizeof *names, cmp_str);
  int rc = 0;
  struct tr_proc *v = DKB_CALLOC(nn ? nn : 1, sizeof *v);
  size_t got = 0;
  for (size_t i = 0; i < nn && !rc; i++) {
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    rc = tr_proc_read(path, &v[got], err);
    if (!rc) got++;
  }
  for (size_t i = 0; i < nn; i++) free(names[i]);
  free(names);
  if (rc) {
    for (size_t i = 0; i < got; i++) tr_proc_release(&v[i]);
    free(v);
    return -1;
  }
  *procs = v;
  *n = got;
  return 0;
}
