/* inject.c - the CUDA side of dkb's injection library (see inject.h). At cuInit the driver calls
 * InitializeInjection: one CUPTI subscriber (the only one a process may have: under nsys, ncu,
 * compute-sanitizer or the PyTorch profiler cuptiSubscribe fails, and that failure is the record),
 * API callbacks on the launch, graph-launch, memcpy, memset and stream-capture calls only (the EXIT site
 * of each launch made inside an NVTX range writes correlation id -> innermost range), resource callbacks
 * for modules, and activity records for kernels, memcpys and memsets. Records are joined to ranges by
 * correlation id in `dkb trace`, never by timestamps.
 *
 * Flushing: a thread of ours calls cuptiActivityFlushAll(0) every FLUSH_PERIOD_MS and soon after a
 * dkb/call/ range ends (the documented pattern for a default flush); the exit handler asks it for a
 * forced flush and waits at most FINAL_FLUSH_S, so an exit from inside a CUDA callback cannot hang the
 * program on us. What a SIGKILL or os._exit leaves unflushed is missing, and the file then has no end
 * record: `dkb trace` says incomplete. */
#include "inject/inject.h"

#include <cupti.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { BUFFER_BYTES = 2 << 20, FLUSH_PERIOD_MS = 250, RANGE_END_DELAY_MS = 20, FINAL_FLUSH_S = 10, CHUNK = 64 << 10 };
enum { ST_NONE, ST_SUBSCRIBED, ST_REFUSED, ST_FORKED };
/* What an API callback id is, from its name (CUPTI's cbid tables differ between versions). */
enum { K_NONE = 0, K_KERNEL = 'K', K_GRAPH = 'G', K_MEMCPY = 'C', K_MEMSET = 'S', K_CAPTURE_BEGIN = 'B', K_CAPTURE_END = 'E' };

static struct {
  pthread_once_t once;
  int state;
  CUpti_SubscriberHandle sub;
  unsigned char rt_kind[CUPTI_RUNTIME_TRACE_CBID_SIZE], drv_kind[CUPTI_DRIVER_TRACE_CBID_SIZE];
  pthread_mutex_t mu;  /* the flusher's state below */
  pthread_cond_t cv;
  pthread_t flusher;
  int flusher_running, flush_wanted, final_wanted, final_done, exit_done;
  CUptiResult final_code;
} c = {.once = PTHREAD_ONCE_INIT, .mu = PTHREAD_MUTEX_INITIALIZER};

/* Per thread: the runtime launch call a driver callback is nested in, and open stream captures. */
static __thread int tls_rt_depth, tls_capturing;
static __thread uint32_t tls_rt_corr;

static void cupti_record(const char *api, CUptiResult r) {
  const char *text = NULL;
  if (cuptiGetResultString(r, &text) != CUPTI_SUCCESS) text = NULL;
  struct jl j;
  jl_begin(&j, "cupti");
  jl_str(&j, "api", api);
  jl_u64(&j, "code", (uint64_t)r);
  jl_str(&j, "text", text);
  jl_commit(&j);
}

static unsigned char kind_of(const char *name, int driver) {
  if (!name) return K_NONE;
#define PFX(p) (!strncmp(name, p, sizeof p - 1))
  if (driver) {
    if (PFX("cuLaunchHostFunc")) return K_NONE;
    if (PFX("cuLaunch")) return K_KERNEL;
    if (PFX("cuGraphLaunch")) return K_GRAPH;
    if (PFX("cuMemcpy")) return K_MEMCPY;
    if (PFX("cuMemset")) return K_MEMSET;
    if (PFX("cuStreamBeginCapture")) return K_CAPTURE_BEGIN;
    if (PFX("cuStreamEndCapture")) return K_CAPTURE_END;
  } else {
    if (PFX("cudaLaunchHostFunc")) return K_NONE;
    if (PFX("cudaLaunch")) return K_KERNEL;
    if (PFX("cudaGraphLaunch")) return K_GRAPH;
    if (PFX("cudaMemcpy")) return K_MEMCPY;
    if (PFX("cudaMemset")) return K_MEMSET;
    if (PFX("cudaStreamBeginCapture")) return K_CAPTURE_BEGIN;
    if (PFX("cudaStreamEndCapture")) return K_CAPTURE_END;
  }
#undef PFX
  return K_NONE;
}

static void on_api(CUpti_CallbackDomain dom, CUpti_CallbackId cbid, const CUpti_CallbackData *cd) {
  int driver = dom == CUPTI_CB_DOMAIN_DRIVER_API;
  unsigned char kind = driver ? (cbid < CUPTI_DRIVER_TRACE_CBID_SIZE ? c.drv_kind[cbid] : 0)
                              : (cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE ? c.rt_kind[cbid] : 0);
  if (!kind) return;
  if (cd->callbackSite == CUPTI_API_ENTER) {
    if (!driver && tls_rt_depth++ == 0) tls_rt_corr = cd->correlationId;
    return;
  }
  uint32_t outer = 0;
  if (!driver) { if (tls_rt_depth > 0) tls_rt_depth--; }
  else if (tls_rt_depth > 0) outer = tls_rt_corr; /* the runtime call this driver call is made by */
  int rc = cd->functionReturnValue ? *(const int *)cd->functionReturnValue : -1;
  if (!outer) {
    if (kind == K_CAPTURE_BEGIN && rc == 0) tls_capturing++;
    if (kind == K_CAPTURE_END && tls_capturing > 0) tls_capturing--;
  }
  if (kind == K_CAPTURE_BEGIN || kind == K_CAPTURE_END) return;
  int first = 0;
  uint64_t range = nvtx_current_range(&first);
  if (!range) return; /* outside every range: its kernels are counted, not attributed */
  if (first) map_snapshot(range);
  char k[2] = {(char)kind, 0};
  struct jl j;
  jl_begin(&j, "launch");
  jl_u64(&j, "corr", cd->correlationId);
  jl_str(&j, "dom", driver ? "drv" : "rt");
  jl_str(&j, "api", cd->functionName);
  jl_str(&j, "kind", k);
  jl_i64(&j, "tid", out_tid());
  jl_u64(&j, "range", range);
  jl_i64(&j, "rc", rc);
  if (outer) jl_u64(&j, "outer", outer);
  if (tls_capturing) jl_bool(&j, "capturing", 1); /* enqueued into a graph being captured: not executed here */
  jl_commit(&j);
}

static void CUPTIAPI on_callback(void *user, CUpti_CallbackDomain dom, CUpti_CallbackId cbid, const void *data) {
  (void)user;
  if (!out_enabled() || c.state != ST_SUBSCRIBED) return;
  if (dom == CUPTI_CB_DOMAIN_RUNTIME_API || dom == CUPTI_CB_DOMAIN_DRIVER_API) {
    on_api(dom, cbid, data);
  } else if (dom == CUPTI_CB_DOMAIN_RESOURCE) {
    const CUpti_ResourceData *rd = data;
    const CUpti_ModuleResourceData *m = rd ? rd->resourceDescriptor : NULL;
    if (!m) return;
    if (cbid == CUPTI_CBID_RESOURCE_MODULE_LOADED) map_module_loaded(m->moduleId, m->pCubin, m->cubinSize);
    else if (cbid == CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING) map_module_unloaded(m->moduleId);
  }
}

/* ---- activity buffers ---- */

static void CUPTIAPI buffer_requested(uint8_t **buf, size_t *size, size_t *max_records) {
  *max_records = 0;
  *buf = aligned_alloc(8, BUFFER_BYTES);
  *size = *buf ? BUFFER_BYTES : 0; /* no buffer: CUPTI drops records and counts them */
}

static const char *copy_kind(unsigned k) {
  static const char *const N[] = {"unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA", "AtoD", "DtoA", "DtoD", "HtoH", "PtoP"};
  return k < sizeof N / sizeof N[0] ? N[k] : "unknown";
}

static void node_id(struct jl *j, uint64_t v) { /* u64: may not fit a JSON reader's integer */
  jl_key(j, "graph_node");
  jl_raw(j, "\"", 1);
  jl_num(j, v);
  jl_raw(j, "\"", 1);
}

/* When and where a copy or set ran: the same fields of three CUPTI record types. */
#define JL_WHERE(j, m)                                                         \
  do {                                                                         \
    jl_u64(j, "start", (m)->start);                                            \
    jl_u64(j, "end", (m)->end);                                                \
    jl_u64(j, "dev", (m)->deviceId);                                           \
    jl_u64(j, "ctx", (m)->contextId);                                          \
    jl_u64(j, "stream", (m)->streamId);                                        \
    jl_u64(j, "graph", (m)->graphId);                                          \
  } while (0)

/* One activity record as a line in j; 0 for kinds dkb does not record. */
static int format_record(struct jl *j, const CUpti_Activity *r) {
  switch (r->kind) {
  case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
  case CUPTI_ACTIVITY_KIND_KERNEL: {
    const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)r;
    jl_begin(j, "kernel");
    jl_u64(j, "corr", k->correlationId);
    jl_str(j, "name", k->name ? k->name : "?");
    jl_dim3(j, "grid", k->gridX, k->gridY, k->gridZ);
    jl_dim3(j, "block", k->blockX, k->blockY, k->blockZ);
    jl_dim3(j, "cluster", k->clusterX, k->clusterY, k->clusterZ);
    jl_u64(j, "regs", k->registersPerThread);
    jl_i64(j, "smem_static", k->staticSharedMemory);
    jl_i64(j, "smem_dynamic", k->dynamicSharedMemory);
    jl_u64(j, "start", k->start);
    jl_u64(j, "end", k->end);
    jl_u64(j, "dev", k->deviceId);
    jl_u64(j, "ctx", k->contextId);
    jl_u64(j, "stream", k->streamId);
    jl_u64(j, "graph", k->graphId);
    node_id(j, k->graphNodeId);
    jl_u64(j, "launch_type", k->launchType);
    if (k->isDeviceLaunched) jl_bool(j, "device_launched", 1);
    return 1;
  }
  case CUPTI_ACTIVITY_KIND_MEMCPY: {
    const CUpti_ActivityMemcpy6 *m = (const CUpti_ActivityMemcpy6 *)r;
    jl_begin(j, "memcpy");
    jl_u64(j, "corr", m->correlationId);
    jl_u64(j, "rt_corr", m->runtimeCorrelationId);
    jl_str(j, "copy", copy_kind(m->copyKind));
    jl_u64(j, "bytes", m->bytes);
    JL_WHERE(j, m);
    return 1;
  }
  case CUPTI_ACTIVITY_KIND_MEMCPY2: {
    const CUpti_ActivityMemcpyPtoP4 *m = (const CUpti_ActivityMemcpyPtoP4 *)r;
    jl_begin(j, "memcpy");
    jl_u64(j, "corr", m->correlationId);
    jl_str(j, "copy", copy_kind(m->copyKind));
    jl_u64(j, "bytes", m->bytes);
    JL_WHERE(j, m);
    jl_u64(j, "src_dev", m->srcDeviceId);
    jl_u64(j, "dst_dev", m->dstDeviceId);
    return 1;
  }
  case CUPTI_ACTIVITY_KIND_MEMSET: {
    const CUpti_ActivityMemset4 *m = (const CUpti_ActivityMemset4 *)r;
    jl_begin(j, "memset");
    jl_u64(j, "corr", m->correlationId);
    jl_u64(j, "bytes", m->bytes);
    jl_u64(j, "value", m->value);
    JL_WHERE(j, m);
    return 1;
  }
  default:
    return 0;
  }
}

/* Lines are batched into CHUNK-sized writes: a buffer holds thousands of records. */
static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size, size_t valid) {
  (void)size;
  char *chunk = malloc(CHUNK);
  size_t used = 0;
  unsigned lines = 0;
  CUpti_Activity *r = NULL;
  while (cuptiActivityGetNextRecord(buf, valid, &r) == CUPTI_SUCCESS) {
    struct jl j;
    if (!format_record(&j, r)) continue;
    if (jl_close(&j)) {
      if (chunk && used + j.n > CHUNK) { out_write(chunk, used, lines); used = 0; lines = 0; }
      if (chunk && j.n <= CHUNK) { memcpy(chunk + used, j.p, j.n); used += j.n; lines++; }
      else out_write(j.p, j.n, 1);
    }
    jl_release(&j);
  }
  if (chunk && used) out_write(chunk, used, lines);
  free(chunk);
  size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped) {
    struct jl j;
    jl_begin(&j, "dropped");
    jl_u64(&j, "n", dropped);
    jl_commit(&j);
  }
  free(buf);
}

/* ---- flushing ---- */

static void deadline(struct timespec *t, long ms) {
  clock_gettime(CLOCK_MONOTONIC, t);
  t->tv_sec += ms / 1000;
  t->tv_nsec += (ms % 1000) * 1000000L;
  if (t->tv_nsec >= 1000000000L) { t->tv_sec++; t->tv_nsec -= 1000000000L; }
}

static void flush_record(const char *why, CUptiResult code, const char *outcome) {
  struct jl j;
  jl_begin(&j, "flush");
  jl_str(&j, "why", why);
  jl_u64(&j, "code", (uint64_t)code);
  jl_str(&j, "outcome", outcome);
  jl_commit(&j);
}

static void *flusher_main(void *arg) {
  (void)arg;
  pthread_mutex_lock(&c.mu);
  for (;;) {
    struct timespec t;
    deadline(&t, c.flush_wanted ? RANGE_END_DELAY_MS : FLUSH_PERIOD_MS);
    if (!c.final_wanted) pthread_cond_timedwait(&c.cv, &c.mu, &t);
    if (c.final_wanted) {
      pthread_mutex_unlock(&c.mu);
      CUptiResult r = cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
      pthread_mutex_lock(&c.mu);
      c.final_code = r;
      c.final_done = 1;
      pthread_cond_broadcast(&c.cv);
      break;
    }
    int range_end = c.flush_wanted;
    c.flush_wanted = 0;
    pthread_mutex_unlock(&c.mu);
    CUptiResult r = cuptiActivityFlushAll(0);
    if (range_end) flush_record("range_end", r, r == CUPTI_SUCCESS ? "done" : "failed");
    pthread_mutex_lock(&c.mu);
  }
  pthread_mutex_unlock(&c.mu);
  return NULL;
}

void cuda_flush_soon(void) {
  if (c.state != ST_SUBSCRIBED) return;
  pthread_mutex_lock(&c.mu);
  c.flush_wanted = 1;
  pthread_cond_signal(&c.cv);
  pthread_mutex_unlock(&c.mu);
}

void cuda_at_exit(void) {
  if (c.state != ST_SUBSCRIBED) return;
  pthread_mutex_lock(&c.mu);
  if (c.exit_done) { pthread_mutex_unlock(&c.mu); return; }
  c.exit_done = 1;
  if (!c.flusher_running) {
    pthread_mutex_unlock(&c.mu);
    CUptiResult r = cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    flush_record("exit", r, r == CUPTI_SUCCESS ? "done" : "failed");
    return;
  }
  c.final_wanted = 1;
  pthread_cond_broadcast(&c.cv);
  struct timespec t;
  deadline(&t, FINAL_FLUSH_S * 1000L);
  while (!c.final_done)
    if (pthread_cond_timedwait(&c.cv, &c.mu, &t) == ETIMEDOUT) break;
  int done = c.final_done;
  CUptiResult r = c.final_code;
  pthread_mutex_unlock(&c.mu);
  if (done) flush_record("exit", r, r == CUPTI_SUCCESS ? "done" : "failed");
  else flush_record("exit", CUPTI_SUCCESS, "timed_out");
}

void cuda_after_fork_child(void) {
  if (c.state == ST_NONE) return;
  c.state = ST_FORKED;
  c.flusher_running = 0;
  pthread_mutex_init(&c.mu, NULL);
  pthread_condattr_t a;
  pthread_condattr_init(&a);
  pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
  pthread_cond_init(&c.cv, &a);
  pthread_condattr_destroy(&a);
}

/* ---- setup ---- */

static void enable_api(CUpti_CallbackDomain dom, int size, unsigned char *kinds) {
  for (int id = 1; id < size; id++) {
    const char *name = NULL;
    if (cuptiGetCallbackName(dom, (uint32_t)id, &name) != CUPTI_SUCCESS) continue;
    unsigned char k = kind_of(name, dom == CUPTI_CB_DOMAIN_DRIVER_API);
    if (k && cuptiEnableCallback(1, c.sub, dom, (CUpti_CallbackId)id) == CUPTI_SUCCESS) kinds[id] = k;
  }
}

static void cuda_init(void) {
  if (!out_open("cuda")) return; /* inert */
  pthread_condattr_t a;
  pthread_condattr_init(&a);
  pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
  pthread_cond_init(&c.cv, &a);
  pthread_condattr_destroy(&a);
  uint32_t version = 0;
  cuptiGetVersion(&version);
  struct jl j;
  jl_begin(&j, "cupti");
  jl_str(&j, "api", "cuptiGetVersion");
  jl_u64(&j, "code", 0);
  jl_u64(&j, "version", version);
  jl_commit(&j);
  CUptiResult r = cuptiSubscribe(&c.sub, (CUpti_CallbackFunc)on_callback, NULL);
  cupti_record("cuptiSubscribe", r);
  if (r != CUPTI_SUCCESS) { c.state = ST_REFUSED; return; }
  c.state = ST_SUBSCRIBED;
  cupti_record("cuptiEnableCallback(MODULE_LOADED)",
               cuptiEnableCallback(1, c.sub, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_MODULE_LOADED));
  cupti_record("cuptiEnableCallback(MODULE_UNLOAD_STARTING)",
               cuptiEnableCallback(1, c.sub, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING));
  enable_api(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE, c.rt_kind);
  enable_api(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE, c.drv_kind);
  cupti_record("cuptiActivityRegisterCallbacks", cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed));
  cupti_record("cuptiActivityEnable(CONCURRENT_KERNEL)", cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  cupti_record("cuptiActivityEnable(MEMCPY)", cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY));
  cupti_record("cuptiActivityEnable(MEMCPY2)", cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY2));
  cupti_record("cuptiActivityEnable(MEMSET)", cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET));
  c.flusher_running = pthread_create(&c.flusher, NULL, flusher_main, NULL) == 0;
  if (c.flusher_running) pthread_detach(c.flusher);
}

/* Called by the driver at cuInit with CUDA_INJECTION64_PATH naming this library; idempotent. */
INJECT_EXPORT int InitializeInjection(void);
int InitializeInjection(void) {
  pthread_once(&c.once, cuda_init);
  return 1;
}
