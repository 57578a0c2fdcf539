/* trace.c - CUPTI activity capture (see trace.h). CUPTI hands filled buffers to a callback on its own
 * thread, so the records go into a collector under a mutex; names are copied out before the buffer
 * is freed. The join (external ids, range, per-symbol counts) happens afterwards, in
 * dkb_trace_finalize, on plain data. */
#include "harness/trace.h"
#include "evidence/ladder.h" /* TRACE_RECORDS_SCHEMA_ID */
#include "lib/cjson.h"
#include "harness/device.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>
#include <cupti.h>
#include <nvtx3/nvToolsExt.h>

/* libstdc++ is linked; its demangler has C linkage. */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

enum { BUFFER_BYTES = 4 << 20, MAX_EXTERNAL_ID_BITS = 53 };

static struct {
  pthread_mutex_t mu;
  struct dkb_trace *t; /* where records go while a capture runs; NULL: dropped */
  int callbacks_registered;
} g = {.mu = PTHREAD_MUTEX_INITIALIZER};

static int nvtx_routed;

static void *grow(void *p, size_t n, size_t *cap, size_t elem) {
  if (n < *cap) return p;
  size_t c = *cap ? 2 * *cap : 64;
  *cap = c;
  return DKB_REALLOC(p, c * elem);
}

static char *dup_or_null(const char *s) {
  return s ? DKB_STRDUP(s) : NULL;
}

int dkb_trace_route_nvtx(struct dkb_err *err) {
  if (nvtx_routed) return 0;
  if (getenv("NVTX_INJECTION64_PATH")) { /* a profiler injected itself: keep it, it is recorded */
    nvtx_routed = 1;
    return 0;
  }
  Dl_info di;
  void *sym = dlsym(RTLD_DEFAULT, "cuptiActivityEnable");
  if (!sym || !dladdr(sym, &di) || !di.dli_fname)
    return dkb_err_set(err, DKB_ENV, NULL, NULL, "cannot locate the libcupti this process loaded (dladdr)");
  if (setenv("NVTX_INJECTION64_PATH", di.dli_fname, 1))
    return dkb_err_set(err, DKB_INTERNAL, NULL, NULL, "setenv NVTX_INJECTION64_PATH failed");
  nvtx_routed = 2;
  return 0;
}

void dkb_trace_take_record(struct dkb_trace *t, const void *record) {
  const CUpti_Activity *r = record;
  switch (r->kind) {
  case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
    const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)r;
    t->kernels = grow(t->kernels, t->nkernels, &t->cap_[0], sizeof *t->kernels);
    struct dkb_trace_kernel *o = &t->kernels[t->nkernels++];
    memset(o, 0, sizeof *o);
    o->name = dup_or_null(k->name ? k->name : "?");
    o->correlation_id = k->correlationId;
    o->grid[0] = k->gridX, o->grid[1] = k->gridY, o->grid[2] = k->gridZ;
    o->block[0] = k->blockX, o->block[1] = k->blockY, o->block[2] = k->blockZ;
    o->cluster[0] = k->clusterX, o->cluster[1] = k->clusterY, o->cluster[2] = k->clusterZ;
    o->registers = k->registersPerThread;
    o->static_smem = k->staticSharedMemory;
    o->dynamic_smem = k->dynamicSharedMemory;
    o->start_ns = k->start;
    o->end_ns = k->end;
    o->device_id = k->deviceId, o->context_id = k->contextId, o->stream_id = k->streamId;
    o->graph_id = k->graphId;
    break;
  }
  case CUPTI_ACTIVITY_KIND_MARKER: {
    const CUpti_ActivityMarker2 *m = (const CUpti_ActivityMarker2 *)r;
    if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_END) {
      /* END carries the START's id; failing that, a pop closes the innermost open push */
      struct dkb_trace_marker *open = NULL;
      for (size_t i = t->nmarkers; i-- > 0 && !(open && open->id == m->id);)
        if (!t->markers[i].end_ns && (t->markers[i].id == m->id || !open)) open = &t->markers[i];
      if (open) {
        open->end_ns = m->timestamp;
        return;
      }
    }
    if (!(m->flags & (CUPTI_ACTIVITY_FLAG_MARKER_START | CUPTI_ACTIVITY_FLAG_MARKER_END))) return; /* instant */
    t->markers = grow(t->markers, t->nmarkers, &t->cap_[1], sizeof *t->markers);
    struct dkb_trace_marker *o = &t->markers[t->nmarkers++];
    memset(o, 0, sizeof *o);
    o->id = m->id;
    if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_START) {
      o->name = dup_or_null(m->name);
      o->start_ns = m->timestamp;
    } else {
      o->end_ns = m->timestamp; /* an END whose START never arrived */
    }
    break;
  }
  case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
    const CUpti_ActivityExternalCorrelation *x = (const CUpti_ActivityExternalCorrelation *)r;
    t->extcorr = grow(t->extcorr, t->nextcorr, &t->cap_[2], sizeof *t->extcorr);
    t->extcorr[t->nextcorr++] = (struct dkb_trace_extcorr){(uint32_t)x->externalKind, x->externalId, x->correlationId};
    break;
  }
  case CUPTI_ACTIVITY_KIND_RUNTIME:
  case CUPTI_ACTIVITY_KIND_DRIVER: {
    const CUpti_ActivityAPI *a = (const CUpti_ActivityAPI *)r;
    t->apis = grow(t->apis, t->napis, &t->cap_[3], sizeof *t->apis);
    struct dkb_trace_api *o = &t->apis[t->napis++];
    o->driver = r->kind == CUPTI_ACTIVITY_KIND_DRIVER;
    o->cbid = a->cbid;
    o->name = NULL;
    if (cuptiGetCallbackName(o->driver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API, a->cbid, &o->name) !=
        CUPTI_SUCCESS)
      o->name = NULL;
    o->correlation_id = a->correlationId;
    o->thread_id = a->threadId;
    o->return_value = a->returnValue;
    o->start_ns = a->start;
    o->end_ns = a->end;
    break;
  }
  default:
    break;
  }
}

static void CUPTIAPI buffer_requested(uint8_t **buf, size_t *size, size_t *max_records) {
  *max_records = 0; /* as many as fit */
  *buf = aligned_alloc(8, BUFFER_BYTES); /* records need 8-byte alignment */
  *size = *buf ? BUFFER_BYTES : 0;       /* a NULL buffer makes CUPTI drop records, counted below */
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size, size_t valid) {
  (void)size;
  pthread_mutex_lock(&g.mu);
  CUpti_Activity *r = NULL;
  while (cuptiActivityGetNextRecord(buf, valid, &r) == CUPTI_SUCCESS)
    if (g.t) dkb_trace_take_record(g.t, r);
  size_t dropped = 0;
  if (g.t && cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS) g.t->dropped += dropped;
  pthread_mutex_unlock(&g.mu);
  free(buf);
}

/* DRIVER as well as RUNTIME: a library that launches through the driver API (cuDNN's runtime-compiled
 * SDPA kernels, cuLaunchKernelEx) gets an API record and an external correlation only when the driver
 * kind is enabled, and without them its kernels cannot be tied to the call. */
static const CUpti_ActivityKind KINDS[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MARKER,
                                           CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, CUPTI_ACTIVITY_KIND_RUNTIME,
                                           CUPTI_ACTIVITY_KIND_DRIVER};
enum { NKINDS = sizeof KINDS / sizeof KINDS[0] };

int dkb_trace_capture(int device, const char *range_name, uint64_t external_id, dkb_launch_fn launch, void *arg,
                      void *stream, struct dkb_trace *out, struct dkb_err *err) {
  int rc = -1, enabled = 0, pushed = 0, ranged = 0, collecting = 0;
  memset(out, 0, sizeof *out);
  snprintf(out->range_name, sizeof out->range_name, "%s", range_name);
  out->external_id = external_id;
  if (external_id >> MAX_EXTERNAL_ID_BITS) {
    dkb_err_set(err, DKB_INTERNAL, NULL, NULL, "external correlation id %llu does not fit 53 bits",
                (unsigned long long)external_id);
    goto cleanup;
  }
  if (dkb_trace_route_nvtx(err)) goto cleanup;
  const char *inj = getenv("NVTX_INJECTION64_PATH");
  snprintf(out->nvtx_injection, sizeof out->nvtx_injection, "%s", inj ? inj : "");
  out->nvtx_set_by_dkb = nvtx_routed == 2;
  DKB_CUPTI_CHECK(err, cuptiGetVersion(&out->cupti_version));
  if (dkb_device_require(device, err)) goto cleanup;
  DKB_CUDA_CHECK(err, cudaSetDevice(device));
  DKB_CUDA_CHECK(err, cudaFree(0)); /* create the context outside the range */

  pthread_mutex_lock(&g.mu);
  g.t = out;
  pthread_mutex_unlock(&g.mu);
  collecting = 1;
  if (!g.callbacks_registered) {
    DKB_CUPTI_CHECK(err, cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed));
    g.callbacks_registered = 1;
  }
  for (; enabled < NKINDS; enabled++) DKB_CUPTI_CHECK(err, cuptiActivityEnable(KINDS[enabled]));

  nvtxRangePushA(range_name);
  ranged = 1;
  DKB_CUPTI_CHECK(err, cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, external_id));
  pushed = 1;
  DKB_CUDA_CHECK(err, launch(arg, stream));
  pushed = 0;
  uint64_t last = 0;
  DKB_CUPTI_CHECK(err, cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last));
  ranged = 0;
  nvtxRangePop();
  DKB_CUDA_CHECK(err, cudaDeviceSynchronize());
  rc = 0;
cleanup:
  if (pushed) {
    uint64_t last = 0;
    cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last);
  }
  if (ranged) nvtxRangePop();
  if (collecting) {
    if (rc) { /* let launched work finish so its records arrive; its error is already in err */
      (void)cudaDeviceSynchronize();
      (void)cudaGetLastError();
    }
    /* flush what the kinds produced, stop them (the timed pass runs untraced), flush the rest */
    CUptiResult fr = cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    while (enabled > 0) cuptiActivityDisable(KINDS[--enabled]);
    CUptiResult fr2 = cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    if (fr == CUPTI_SUCCESS) fr = fr2;
    pthread_mutex_lock(&g.mu);
    g.t = NULL;
    pthread_mutex_unlock(&g.mu);
    if (!rc && fr != CUPTI_SUCCESS)
      rc = dkb_gpucheck_cupti(err, fr, "cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED)", __FILE__, __LINE__);
    dkb_trace_finalize(out);
  }
  return rc;
}

static const struct dkb_trace_api *api_by_corr(const struct dkb_trace *t, uint32_t corr) {
  for (size_t i = 0; i < t->napis; i++)
    if (t->apis[i].correlation_id == corr) return &t->apis[i];
  return NULL;
}

void dkb_trace_finalize(struct dkb_trace *t) {
  t->range = NULL;
  for (size_t i = 0; i < t->nmarkers; i++)
    if (t->markers[i].name && !strcmp(t->markers[i].name, t->range_name)) {
      t->range = &t->markers[i];
      break;
    }
  free(t->symbols);
  t->symbols = NULL;
  t->nsymbols = 0;
  size_t cap = 0;
  for (size_t i = 0; i < t->nkernels; i++) {
    struct dkb_trace_kernel *k = &t->kernels[i];
    if (!k->demangled) {
      int st = -1;
      char *d = __cxa_demangle(k->name, NULL, NULL, &st);
      k->demangled = st == 0 && d ? d : dup_or_null(k->name);
      if (st != 0) free(d);
    }
    k->has_external = 0;
    for (size_t x = 0; x < t->nextcorr; x++)
      if (t->extcorr[x].correlation_id == k->correlation_id) {
        k->has_external = 1;
        k->external_id = t->extcorr[x].external_id;
        break;
      }
    const struct dkb_trace_api *a = api_by_corr(t, k->correlation_id);
    k->in_range = t->range && t->range->end_ns && a && a->start_ns >= t->range->start_ns &&
                  a->start_ns <= t->range->end_ns;
    struct dkb_trace_symbol *s = NULL;
    for (size_t j = 0; j < t->nsymbols && !s; j++)
      if (!strcmp(t->symbols[j].name, k->name)) s = &t->symbols[j];
    if (!s) {
      t->symbols = grow(t->symbols, t->nsymbols, &cap, sizeof *t->symbols);
      s = &t->symbols[t->nsymbols++];
      *s = (struct dkb_trace_symbol){k->name, k->demangled, 0, 0, k};
    }
    s->launches++;
    if (k->in_range && k->has_external && k->external_id == t->external_id) s->launches_in_range++;
  }
}

void dkb_trace_release(struct dkb_trace *t) {
  for (size_t i = 0; i < t->nkernels; i++) {
    free(t->kernels[i].name);
    free(t->kernels[i].demangled);
  }
  for (size_t i = 0; i < t->nmarkers; i++) free(t->markers[i].name);
  free(t->kernels);
  free(t->markers);
  free(t->apis);
  free(t->extcorr);
  free(t->symbols);
  memset(t, 0, sizeof *t);
}

const struct dkb_trace_symbol *dkb_trace_find_symbol(const struct dkb_trace *t, const char *name) {
  for (size_t i = 0; i < t->nsymbols; i++)
    if (!strcmp(t->symbols[i].name, name)) return &t->symbols[i];
  return NULL;
}

/* Earliest non-zero timestamp: JSON times are offsets from it. */
static uint64_t origin_ns(const struct dkb_trace *t) {
  uint64_t o = UINT64_MAX;
#define TAKE(v) if ((v) && (v) < o) o = (v)
  for (size_t i = 0; i < t->nkernels; i++) TAKE(t->kernels[i].start_ns);
  for (size_t i = 0; i < t->nmarkers; i++) { TAKE(t->markers[i].start_ns); TAKE(t->markers[i].end_ns); }
  for (size_t i = 0; i < t->napis; i++) TAKE(t->apis[i].start_ns);
#undef TAKE
  return o == UINT64_MAX ? 0 : o;
}

static json_t *rel(uint64_t v, uint64_t origin) { return v ? json_integer((json_int_t)(v - origin)) : json_null(); }

static json_t *triple(const int32_t v[3]) { return json_pack("[i,i,i]", v[0], v[1], v[2]); }

static json_t *nvtx_json(const struct dkb_trace *t) {
  return json_pack("{s:s, s:s}", "path", t->nvtx_injection, "set_by", t->nvtx_set_by_dkb ? "dkb" : "environment");
}

static int add_line(json_t *rec, struct dkb_buf *out, struct dkb_err *err) {
  int rc = cjson_write(rec, 0, out, err);
  json_decref(rec);
  if (!rc) dkb_buf_addc(out, '\n');
  return rc;
}

int dkb_trace_jsonl(const struct dkb_trace *t, struct dkb_buf *out, struct dkb_err *err) {
  uint64_t o = origin_ns(t);
  char origin[24];
  snprintf(origin, sizeof origin, "%llu", (unsigned long long)o);
  size_t ndriver = 0;
  for (size_t i = 0; i < t->napis; i++) ndriver += t->apis[i].driver != 0;
  if (add_line(json_pack("{s:s, s:s, s:s, s:I, s:i, s:I, s:o, s:s, s:{s:I, s:I, s:I, s:I, s:I}}", "record", "meta", "schema",
                         TRACE_RECORDS_SCHEMA_ID, "range_name", t->range_name, "external_id", (json_int_t)t->external_id,
                         "cupti_version", (int)t->cupti_version, "dropped_records", (json_int_t)t->dropped,
                         "nvtx_injection", nvtx_json(t), "origin_ns", origin, "counts", "kernel",
                         (json_int_t)t->nkernels, "marker", (json_int_t)t->nmarkers, "external_correlation",
                         (json_int_t)t->nextcorr, "runtime", (json_int_t)(t->napis - ndriver), "driver",
                         (json_int_t)ndriver),
               out, err))
    return -1;
  for (size_t i = 0; i < t->nkernels; i++) {
    const struct dkb_trace_kernel *k = &t->kernels[i];
    json_t *r = json_pack("{s:s, s:s, s:s, s:I, s:o, s:b, s:o, s:o, s:o, s:i, s:i, s:i, s:o, s:o, s:I, s:I, s:I, s:I}",
                          "record", "kernel", "name", k->name, "demangled", k->demangled ? k->demangled : k->name,
                          "correlation_id", (json_int_t)k->correlation_id, "external_id",
                          k->has_external ? json_integer((json_int_t)k->external_id) : json_null(), "in_range",
                          k->in_range, "grid", triple(k->grid), "block", triple(k->block), "cluster", triple(k->cluster),
                          "registers_per_thread",
                          (int)k->registers, "static_shared_bytes", (int)k->static_smem, "dynamic_shared_bytes",
                          (int)k->dynamic_smem, "start_ns", rel(k->start_ns, o), "end_ns", rel(k->end_ns, o),
                          "device_id", (json_int_t)k->device_id, "context_id", (json_int_t)k->context_id,
                          "stream_id", (json_int_t)k->stream_id, "graph_id", (json_int_t)k->graph_id);
    if (add_line(r, out, err)) return -1;
  }
  for (size_t i = 0; i < t->nmarkers; i++) {
    const struct dkb_trace_marker *m = &t->markers[i];
    if (add_line(json_pack("{s:s, s:o, s:I, s:o, s:o}", "record", "marker", "name",
                           m->name ? json_string(m->name) : json_null(), "id", (json_int_t)m->id, "start_ns",
                           rel(m->start_ns, o), "end_ns", rel(m->end_ns, o)),
                 out, err))
      return -1;
  }
  for (size_t i = 0; i < t->nextcorr; i++) {
    const struct dkb_trace_extcorr *x = &t->extcorr[i];
    if (add_line(json_pack("{s:s, s:I, s:I, s:I}", "record", "external_correlation", "kind", (json_int_t)x->kind,
                           "external_id", (json_int_t)x->external_id, "correlation_id", (json_int_t)x->correlation_id),
                 out, err))
      return -1;
  }
  for (size_t i = 0; i < t->napis; i++) {
    const struct dkb_trace_api *a = &t->apis[i];
    if (add_line(json_pack("{s:s, s:I, s:o, s:I, s:I, s:I, s:o, s:o}", "record", a->driver ? "driver" : "runtime", "cbid",
                           (json_int_t)a->cbid,
                           "name", a->name ? json_string(a->name) : json_null(), "correlation_id",
                           (json_int_t)a->correlation_id, "thread_id", (json_int_t)a->thread_id, "return_value",
                           (json_int_t)a->return_value, "start_ns", rel(a->start_ns, o), "end_ns", rel(a->end_ns, o)),
                 out, err))
      return -1;
  }
  return 0;
}

json_t *dkb_trace_summary_json(const struct dkb_trace *t) {
  json_t *kernels = json_array();
  for (size_t i = 0; i < t->nsymbols; i++) {
    const struct dkb_trace_symbol *s = &t->symbols[i];
    json_array_append_new(kernels,
                          json_pack("{s:s, s:s, s:I, s:I, s:o, s:o, s:o, s:i, s:i, s:i}", "symbol", s->name, "demangled",
                                    s->demangled, "launches", (json_int_t)s->launches, "launches_in_range",
                                    (json_int_t)s->launches_in_range, "grid", triple(s->first->grid), "block",
                                    triple(s->first->block), "cluster", triple(s->first->cluster), "registers_per_thread", (int)s->first->registers,
                                    "static_shared_bytes", (int)s->first->static_smem, "dynamic_shared_bytes",
                                    (int)s->first->dynamic_smem));
  }
  json_t *range = t->range ? json_pack("{s:s, s:b, s:o}", "name", t->range_name, "closed", t->range->end_ns != 0,
                                       "duration_ns",
                                       t->range->end_ns && t->range->start_ns
                                           ? json_integer((json_int_t)(t->range->end_ns - t->range->start_ns))
                                           : json_null())
                           : json_pack("{s:s, s:b}", "name", t->range_name, "closed", 0);
  json_object_set_new(range, "found", json_boolean(t->range != NULL));
  return json_pack("{s:s, s:i, s:I, s:o, s:I, s:o, s:o, s:[s,s,s,s]}", "profiler", "CUPTI activity API",
                   "cupti_version", (int)t->cupti_version, "external_id", (json_int_t)t->external_id, "range", range,
                   "dropped_records", (json_int_t)t->dropped, "kernels", kernels, "nvtx_injection", nvtx_json(t),
                   "activity_kinds", "CONCURRENT_KERNEL", "MARKER", "EXTERNAL_CORRELATION", "RUNTIME");
}
