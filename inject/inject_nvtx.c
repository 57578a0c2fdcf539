/* inject_nvtx.c - the NVTX tool: InitializeInjectionNvtx2 fills NVTX's function slots with the handlers
 * below, which keep a per-thread stack of open ranges and write a push or pop record for each. A launch
 * is attributed to the innermost range open on its thread (inject.c asks nvtx_current_range). Every
 * library that embeds NVTX3 initializes its own copy of NVTX, so the init runs once per copy; the
 * slots it does not fill stay NVTX's no-ops (naming calls included: CUPTI 13.0.0 crashed in
 * nvtxNameOsThreadA, NVIDIA/NVTX#125; dkb does not route NVTX through CUPTI at all). */
#include "inject/inject.h"

/* the types only: this library is the NVTX tool, not a user of NVTX */
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>
#include <fnmatch.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

enum { STACK_MAX = 128, NAME_MAX_BYTES = 4 << 20 };

struct rstack {
  uint64_t id[STACK_MAX];
  const void *domain[STACK_MAX];  /* NULL: the default domain */
  unsigned char call[STACK_MAX];   /* a dkb/call/ range */
  unsigned char launched[STACK_MAX]; /* a launch inside it has been seen (the loader map was taken) */
  int depth;                       /* may exceed STACK_MAX: deeper entries are counted, not kept */
};
static __thread struct rstack tls;
static atomic_uint_fast64_t next_id = 1;
static atomic_int_fast64_t open_ranges;

/* Registered strings and domains live as long as the program: NVTX hands their handles back to us. */
struct reg { struct reg *next; uint64_t index; char s[]; };
static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static struct reg *regs;
static uint64_t nregs;

static struct reg *reg_add(const char *s) {
  size_t n = strnlen(s, NAME_MAX_BYTES);
  struct reg *r = malloc(sizeof *r + n + 1);
  if (!r) return NULL;
  memcpy(r->s, s, n);
  r->s[n] = '\0';
  pthread_mutex_lock(&reg_mu);
  r->index = ++nregs;
  r->next = regs;
  regs = r;
  pthread_mutex_unlock(&reg_mu);
  return r;
}

uint64_t nvtx_current_range(int *call_first) {
  *call_first = 0;
  int top = tls.depth < STACK_MAX ? tls.depth : STACK_MAX;
  if (top == 0) return 0;
  for (int i = top - 1; i >= 0; i--)
    if (tls.call[i]) {
      if (!tls.launched[i]) { tls.launched[i] = 1; *call_first = 1; }
      break;
    }
  return tls.id[top - 1];
}

int64_t nvtx_open_ranges(void) { return atomic_load(&open_ranges); }

void nvtx_after_fork_child(void) { pthread_mutex_init(&reg_mu, NULL); }

/* The ranges whose first launch takes a loader map: dkb/call/ ones, or those matching the fnmatch patterns
 * `dkb trace --range` passes in DKB_TRACE_PATTERNS (one per line). Read once, at the first push. */
static pthread_once_t patterns_once = PTHREAD_ONCE_INIT;
static char *patterns_text;
static char *patterns[32];
static int npatterns;

static void read_patterns(void) {
  const char *env = getenv("DKB_TRACE_PATTERNS");
  if (!env || !*env || !(patterns_text = strdup(env))) return;
  for (char *p = patterns_text, *nl; p && *p && npatterns < 32; p = nl) {
    nl = strchr(p, '\n');
    if (nl) *nl++ = '\0';
    if (*p) patterns[npatterns++] = p;
  }
}

static int is_call(const char *name, size_t n) {
  if (!name) return 0;
  pthread_once(&patterns_once, read_patterns);
  if (!npatterns) return n >= sizeof INJECT_CALL_PREFIX - 1 && !memcmp(name, INJECT_CALL_PREFIX, sizeof INJECT_CALL_PREFIX - 1);
  for (int i = 0; i < npatterns; i++)
    if (!fnmatch(patterns[i], name, 0)) return 1;
  return 0;
}

static int push(const void *domain, const char *name, size_t n, const char *message_type) {
  if (!out_enabled()) return tls.depth;
  uint64_t id = atomic_fetch_add(&next_id, 1);
  int top = tls.depth < STACK_MAX ? tls.depth : STACK_MAX;
  uint64_t parent = top ? tls.id[top - 1] : 0;
  if (tls.depth < STACK_MAX) {
    tls.id[tls.depth] = id;
    tls.domain[tls.depth] = domain;
    tls.call[tls.depth] = (unsigned char)is_call(name, n); /* name is NUL-terminated at n */
    tls.launched[tls.depth] = 0;
  }
  int level = tls.depth++;
  atomic_fetch_add(&open_ranges, 1);
  struct jl j;
  jl_begin(&j, "push");
  jl_u64(&j, "id", id);
  jl_u64(&j, "parent", parent);
  jl_i64(&j, "tid", out_tid());
  jl_i64(&j, "depth", level);
  jl_u64(&j, "t", out_mono_ns());
  if (domain) jl_u64(&j, "domain", ((const struct reg *)domain)->index);
  if (message_type) jl_str(&j, "message", message_type);
  if (level >= STACK_MAX) jl_bool(&j, "untracked", 1); /* too deep: launches go to the deepest kept range */
  if (name) jl_strn(&j, "name", name, n);
  else jl_str(&j, "name", NULL);
  jl_commit(&j);
  return level;
}

static int pop(const void *domain) {
  if (!out_enabled()) return tls.depth > 0 ? --tls.depth : -1;
  struct jl j;
  jl_begin(&j, "pop");
  /* the innermost range of this domain: each NVTX domain has its own stack */
  int top = tls.depth < STACK_MAX ? tls.depth : STACK_MAX, at = top - 1;
  if (tls.depth <= STACK_MAX)
    while (at >= 0 && tls.domain[at] != domain) at--;
  if (tls.depth == 0 || at < 0) { /* nothing of this domain open here: pushed before dkb was the tool */
    jl_u64(&j, "id", 0);
    jl_i64(&j, "tid", out_tid());
    jl_u64(&j, "t", out_mono_ns());
    jl_bool(&j, "unmatched", 1);
    jl_commit(&j);
    return -1;
  }
  int call = 0;
  uint64_t id = 0;
  if (tls.depth <= STACK_MAX) {
    id = tls.id[at];
    call = tls.call[at];
    for (int i = at; i < top - 1; i++) {
      tls.id[i] = tls.id[i + 1];
      tls.domain[i] = tls.domain[i + 1];
      tls.call[i] = tls.call[i + 1];
      tls.launched[i] = tls.launched[i + 1];
    }
  }
  int level = --tls.depth;
  atomic_fetch_sub(&open_ranges, 1);
  jl_u64(&j, "id", id); /* 0 for an untracked (too deep) range */
  jl_i64(&j, "tid", out_tid());
  jl_u64(&j, "t", out_mono_ns());
  jl_commit(&j);
  if (call) cuda_flush_soon();
  return level;
}

/* The UTF-32 of a wide message as UTF-8 (wchar_t is 32 bits on Linux). malloc'ed, NULL if it cannot. */
static char *wide_to_utf8(const wchar_t *w, size_t *n) {
  size_t len = wcsnlen(w, NAME_MAX_BYTES / 4);
  char *o = malloc(4 * len + 1);
  if (!o) return NULL;
  size_t k = 0;
  for (size_t i = 0; i < len; i++) {
    uint32_t c = (uint32_t)w[i];
    if (c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) c = 0xFFFD;
    if (c < 0x80) o[k++] = (char)c;
    else if (c < 0x800) { o[k++] = (char)(0xC0 | c >> 6); o[k++] = (char)(0x80 | (c & 63)); }
    else if (c < 0x10000) { o[k++] = (char)(0xE0 | c >> 12); o[k++] = (char)(0x80 | ((c >> 6) & 63)); o[k++] = (char)(0x80 | (c & 63)); }
    else { o[k++] = (char)(0xF0 | c >> 18); o[k++] = (char)(0x80 | ((c >> 12) & 63)); o[k++] = (char)(0x80 | ((c >> 6) & 63)); o[k++] = (char)(0x80 | (c & 63)); }
  }
  o[k] = '\0';
  *n = k;
  return o;
}

static int push_attr(const void *domain, const nvtxEventAttributes_t *a) {
  if (!a) return push(domain, NULL, 0, "none");
  switch (a->messageType) {
  case NVTX_MESSAGE_TYPE_ASCII:
    return a->message.ascii ? push(domain, a->message.ascii, strnlen(a->message.ascii, NAME_MAX_BYTES), NULL)
                            : push(domain, NULL, 0, "none");
  case NVTX_MESSAGE_TYPE_UNICODE: {
    size_t n = 0;
    char *s = a->message.unicode ? wide_to_utf8(a->message.unicode, &n) : NULL;
    int level = push(domain, s, n, "unicode");
    free(s);
    return level;
  }
  case NVTX_MESSAGE_TYPE_REGISTERED: {
    const struct reg *r = (const struct reg *)a->message.registered;
    return r ? push(domain, r->s, strlen(r->s), "registered") : push(domain, NULL, 0, "none");
  }
  default:
    return push(domain, NULL, 0, "none");
  }
}

static int NVTX_API h_push_a(const char *m) { return m ? push(NULL, m, strnlen(m, NAME_MAX_BYTES), NULL) : push(NULL, NULL, 0, "none"); }
static int NVTX_API h_push_w(const wchar_t *m) {
  size_t n = 0;
  char *s = m ? wide_to_utf8(m, &n) : NULL;
  int level = push(NULL, s, n, "unicode");
  free(s);
  return level;
}
static int NVTX_API h_push_ex(const nvtxEventAttributes_t *a) { return push_attr(NULL, a); }
static int NVTX_API h_pop(void) { return pop(NULL); }
static int NVTX_API h_domain_push_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a) { return push_attr(d, a); }
static int NVTX_API h_domain_pop(nvtxDomainHandle_t d) { return pop(d); }
static nvtxDomainHandle_t NVTX_API h_domain_create_a(const char *name) {
  struct reg *r = reg_add(name ? name : "");
  if (r && out_enabled()) {
    struct jl j;
    jl_begin(&j, "domain");
    jl_u64(&j, "index", r->index);
    jl_str(&j, "name", r->s);
    jl_commit(&j);
  }
  return (nvtxDomainHandle_t)r;
}
static nvtxStringHandle_t NVTX_API h_register_string_a(nvtxDomainHandle_t d, const char *s) {
  (void)d;
  return (nvtxStringHandle_t)reg_add(s ? s : "");
}

static void fill(NvtxFunctionTable t, unsigned int size, unsigned int id, NvtxFunctionPointer fn) {
  if (t && id <= size && t[id]) *t[id] = fn;
}

INJECT_EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_table);
int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_table) {
  if (!get_table || !out_open("nvtx")) return 0; /* inert: NVTX makes every call a no-op */
  const NvtxExportTableCallbacks *cb = get_table(NVTX_ETID_CALLBACKS);
  if (!cb || cb->struct_size < sizeof *cb || !cb->GetModuleFunctionTable) return 0;
  NvtxFunctionTable t = NULL;
  unsigned int n = 0;
  if (cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &t, &n)) {
    fill(t, n, NVTX_CBID_CORE_RangePushA, (NvtxFunctionPointer)h_push_a);
    fill(t, n, NVTX_CBID_CORE_RangePushW, (NvtxFunctionPointer)h_push_w);
    fill(t, n, NVTX_CBID_CORE_RangePushEx, (NvtxFunctionPointer)h_push_ex);
    fill(t, n, NVTX_CBID_CORE_RangePop, (NvtxFunctionPointer)h_pop);
  }
  t = NULL;
  n = 0;
  if (cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &t, &n)) {
    fill(t, n, NVTX_CBID_CORE2_DomainRangePushEx, (NvtxFunctionPointer)h_domain_push_ex);
    fill(t, n, NVTX_CBID_CORE2_DomainRangePop, (NvtxFunctionPointer)h_domain_pop);
    fill(t, n, NVTX_CBID_CORE2_DomainCreateA, (NvtxFunctionPointer)h_domain_create_a);
    fill(t, n, NVTX_CBID_CORE2_DomainRegisterStringA, (NvtxFunctionPointer)h_register_string_a);
  }
  return 1;
}
