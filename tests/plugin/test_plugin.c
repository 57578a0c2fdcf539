/* test_plugin.c - a backend plugin of dkb's own tests (include/dkb/backend.h), built once per
 * TEST_PLUGIN_VARIANT (Makefile): ok (admits contiguous and ragged calls of one query row, plans a
 * scratch and a persistent workspace, launches nothing: its launch reports an error), and variants that
 * each break one rule: abi2, noentry, dupname, admitfail, planfail, badws, badlse, badjson, badkernel;
 * merge declares an optional merge kernel at one split, unreported one its engine may run at a split it
 * does not report (as cuDNN's does).
 * It has no kernel, so a bundle selecting it never reaches level 5. */
#include <stdio.h>
#include <string.h>

#include "include/dkb/backend.h"

#define V_OK 0
#define V_ABI2 1
#define V_NOENTRY 2
#define V_DUPNAME 3
#define V_ADMITFAIL 4
#define V_PLANFAIL 5
#define V_BADWS 6
#define V_BADLSE 7
#define V_BADJSON 8
#define V_BADKERNEL 9
#define V_MERGE 10  /* a valid plan that declares an optional merge kernel at one split */
#define V_UNREPORTED 11  /* the same with its split unreported (DKB_SPLITS_UNREPORTED) */
#ifndef TEST_PLUGIN_VARIANT
#define TEST_PLUGIN_VARIANT V_OK
#endif

static _Thread_local char g_error[256];
static const char *last_error(void *state) { return state ? (const char *)state : g_error; }

static int admit(const struct dkb_backend *self, const struct dkb_call *call, struct dkb_reason *r, int cap, int *n) {
  (void)self;
  *n = 0;
  if (TEST_PLUGIN_VARIANT == V_ADMITFAIL) {
    snprintf(g_error, sizeof g_error, "the test plugin's admit fails on purpose");
    return DKB_BACKEND_ERROR;
  }
  if (call->kv_len || call->q) {  /* admission sees scalars only */
    snprintf(g_error, sizeof g_error, "admit was shown arrays");
    return DKB_BACKEND_ERROR;
  }
  if (call->q_len != 1) dkb_reason_add(r, cap, n, 'Q', "q_len=%d unsupported", (int)call->q_len);
  if (call->layout >= DKB_ABI_PAGED_NHD)
    dkb_reason_add(r, cap, n, 'L', "layout=%s unsupported", call->layout == DKB_ABI_PAGED_NHD ? "paged_nhd" : "paged_hnd");
  if (call->split_policy != DKB_ABI_SPLIT_AUTO) dkb_reason_add(r, cap, n, 'C', "split_policy other than auto unsupported");
  return 0;
}

static char g_state[256] = "the test plugin has no kernel";
static const char PLAN_JSON[] = "{\"test\":true,\"splits\":1}";

static int plan(const struct dkb_backend *self, const struct dkb_call *call, struct dkb_plan *p, void **state) {
  (void)self;
  if (TEST_PLUGIN_VARIANT == V_PLANFAIL) {
    snprintf(g_error, sizeof g_error, "the test plugin's plan fails on purpose");
    return DKB_BACKEND_ERROR;
  }
  if (!call->kv_len) {  /* plan sees the host arrays */
    snprintf(g_error, sizeof g_error, "plan was not shown the host arrays");
    return DKB_BACKEND_ERROR;
  }
  p->splits = TEST_PLUGIN_VARIANT == V_UNREPORTED ? DKB_SPLITS_UNREPORTED : 1;
  p->work_items = call->B * call->H_kv;
  p->n_workspaces = 2;
  snprintf(p->ws[0].name, sizeof p->ws[0].name, "scratch");
  p->ws[0].bytes = 1024;
  p->ws[0].kind = TEST_PLUGIN_VARIANT == V_BADWS ? 7 : DKB_WS_SCRATCH;
  snprintf(p->ws[1].name, sizeof p->ws[1].name, "plan_data");
  p->ws[1].bytes = 64;
  p->ws[1].kind = DKB_WS_PERSISTENT;
  p->n_kernels = 1;
  snprintf(p->kernels[0].name, sizeof p->kernels[0].name, "test_plugin_kernel");
  p->kernels[0].role = DKB_KERNEL_FUSED;
  p->kernels[0].match = TEST_PLUGIN_VARIANT == V_BADKERNEL ? 5 : DKB_MATCH_SYMBOL;
  p->kernels[0].required = 1;
  if (TEST_PLUGIN_VARIANT == V_MERGE || TEST_PLUGIN_VARIANT == V_UNREPORTED) {  /* a merge that may run, as cuDNN's lean reduction does */
    p->n_kernels = 2;
    snprintf(p->kernels[1].name, sizeof p->kernels[1].name, "test_plugin_merge");
    p->kernels[1].role = DKB_KERNEL_COMBINE;
    p->kernels[1].match = DKB_MATCH_SYMBOL;
    p->kernels[1].required = 0;
  }
  p->lse_base = TEST_PLUGIN_VARIANT == V_BADLSE ? 9 : DKB_LSE_BASE2;
  p->empty_row = DKB_EMPTY_ZERO_NEGINF;
  p->plan_json = TEST_PLUGIN_VARIANT == V_BADJSON ? "not json" : PLAN_JSON;
  *state = g_state;
  return 0;
}

static int setup(void *state, const struct dkb_call *call, void *const *ws, void *stream) {
  (void)state, (void)call, (void)ws, (void)stream;
  return 0;
}

static int launch(void *state, const struct dkb_call *call, void *const *ws, void *stream) {
  (void)state, (void)call, (void)ws, (void)stream;
  return DKB_BACKEND_ERROR;
}

static void release(void *state) { (void)state; }

static const struct dkb_backend BACKENDS[] = {
    {TEST_PLUGIN_VARIANT == V_DUPNAME ? "dkb_split_kv" : "test_backend", "1.0", 70, "dkb's test plugin: no kernel",
     NULL, admit, plan, setup, launch, release, last_error, "contiguous and ragged calls of one query row, auto split"},
};

extern const char test_plugin_source_manifest_json[], test_plugin_build_report_json[];

static const struct dkb_plugin PLUGIN = {
    TEST_PLUGIN_VARIANT == V_ABI2 ? 2u : DKB_BACKEND_ABI_VERSION, sizeof(struct dkb_plugin), "test", "1.0", 1, BACKENDS,
    test_plugin_source_manifest_json, test_plugin_build_report_json};

#if TEST_PLUGIN_VARIANT != V_NOENTRY
__attribute__((visibility("default"))) const struct dkb_plugin *dkb_plugin_entry_v1(void) { return &PLUGIN; }
#else
__attribute__((visibility("default"))) const struct dkb_plugin *dkb_plugin_entry_v0(void) { return &PLUGIN; }
#endif
