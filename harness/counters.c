/* counters.c - CUPTI range profiler, one user range (see counters.h). Uses the CUDA 13 range-profiler
 * API (cupti_range_profiler.h + cupti_profiler_host.h); the older profiler session API is deprecated.
 * cupti_profiler_host.h includes <string>: the Makefile compiles this file with -Itools/cupti_c_shim,
 * whose empty `string` lets the header compile as C. */
#include "harness/counters.h"
#include "harness/device.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h> /* CUcontext and CUresult types only: never linked against -lcuda */
#include <cuda_runtime_api.h>
#include <cupti.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>

static const char *const METRICS[DKB_COUNTERS_N] = {"dram__bytes_read.sum", "dram__bytes_write.sum",
                                                    "gpu__time_duration.sum"};

static const char SCOPE[] = "one CUPTI user range around every kernel the workload callback launches (all streams "
                            "of the context, whole device), user replay";

static void define_metrics(struct dkb_counters *c) {
  static const struct { const char *unit, *numerator; } DEF[DKB_COUNTERS_N] = {
      {"byte", "bytes read from device memory (DRAM/HBM) by the memory partitions, summed over all of them"},
      {"byte", "bytes written to device memory (DRAM/HBM) by the memory partitions, summed over all of them"},
      {"nsecond", "GPU time from the start to the end of the range's work"},
  };
  for (int i = 0; i < DKB_COUNTERS_N; i++) {
    c->v[i].name = METRICS[i];
    c->v[i].unit = DEF[i].unit;
    c->v[i].numerator = DEF[i].numerator;
    c->v[i].denominator = "none: a total over the range, not a rate or ratio";
    c->v[i].scope = SCOPE;
  }
}

void dkb_counters_unavailable(struct dkb_counters *out, const char *range_name, const struct dkb_err *why) {
  memset(out, 0, sizeof *out);
  define_metrics(out);
  snprintf(out->range_name, sizeof out->range_name, "%s", range_name ? range_name : "");
  if (why) dkb_err_format(why, out->reason, sizeof out->reason);
}

int dkb_counters_collect(int device, const char *range_name, dkb_launch_fn workload, void *arg, void *stream,
                         dkb_launch_fn before, void *before_arg, struct dkb_counters *out, struct dkb_err *err) {
  int rc = -1, initialized = 0;
  CUpti_RangeProfiler_Object *rp = NULL;
  CUpti_Profiler_Host_Object *host = NULL;
  uint8_t *config = NULL, *counter_data = NULL, *avail = NULL;
  CUresult (*ctx_get_current)(CUcontext *) = NULL;
  CUcontext ctx = NULL;
  enum cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
  double values[DKB_COUNTERS_N] = {0};

  dkb_counters_unavailable(out, range_name, NULL);
  /* libnvperf_host crashes (SIGSEGV in NVPW_CUDA_Profiler_DecodeCounters) decoding a user range with a
   * long name: 73 characters did on the H200 (CUDA 13.0, driver 580.159), 11 and 17 did not. */
  if (!range_name || !range_name[0] || strlen(range_name) > DKB_COUNTERS_RANGE_MAX) {
    dkb_err_set(err, DKB_INTERNAL, NULL, NULL, "counters range name must have 1..%d characters, got %zu",
                DKB_COUNTERS_RANGE_MAX, range_name ? strlen(range_name) : (size_t)0);
    goto cleanup;
  }
  DKB_CUPTI_CHECK(err, cuptiGetVersion(&out->cupti_version));
  if (dkb_device_require(device, err)) goto cleanup;
  DKB_CUDA_CHECK(err, cudaSetDevice(device));
  DKB_CUDA_CHECK(err, cudaFree(0));
  DKB_CUDA_CHECK(err, cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", (void **)&ctx_get_current, 12000,
                                                       cudaEnableDefault, &q));
  if (q != cudaDriverEntryPointSuccess || !ctx_get_current) {
    dkb_err_set(err, DKB_ENV, NULL, NULL, "cudaGetDriverEntryPointByVersion: cuCtxGetCurrent not found (query result %d)",
                (int)q);
    goto cleanup;
  }
  if (ctx_get_current(&ctx) != CUDA_SUCCESS || !ctx) {
    dkb_err_set(err, DKB_ENV, NULL, NULL, "cuCtxGetCurrent: no current CUDA context");
    goto cleanup;
  }

  CUpti_Profiler_Initialize_Params ip = {.structSize = CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
  DKB_CUPTI_CHECK(err, cuptiProfilerInitialize(&ip));
  initialized = 1;
  CUpti_Profiler_DeviceSupported_Params sp = {.structSize = CUpti_Profiler_DeviceSupported_Params_STRUCT_SIZE};
  sp.cuDevice = device;
  sp.api = CUPTI_PROFILER_RANGE_PROFILING;
  DKB_CUPTI_CHECK(err, cuptiProfilerDeviceSupported(&sp));
  if (sp.isSupported != CUPTI_PROFILER_CONFIGURATION_SUPPORTED) {
    dkb_err_set(err, DKB_ENV, NULL, NULL,
                "cuptiProfilerDeviceSupported: range profiling unsupported (architecture %d, vGPU %d, confidential "
                "compute %d)",
                (int)sp.architecture, (int)sp.vGpu, (int)sp.confidentialCompute);
    goto cleanup;
  }
  CUpti_Device_GetChipName_Params cn = {.structSize = CUpti_Device_GetChipName_Params_STRUCT_SIZE};
  cn.deviceIndex = (size_t)device;
  DKB_CUPTI_CHECK(err, cuptiDeviceGetChipName(&cn));
  snprintf(out->chip, sizeof out->chip, "%s", cn.pChipName);

  CUpti_RangeProfiler_Enable_Params ep = {.structSize = CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE};
  ep.ctx = ctx;
  DKB_CUPTI_CHECK(err, cuptiRangeProfilerEnable(&ep));
  rp = ep.pRangeProfilerObject;

  /* Counter availability first asks for its size, then fills the image. */
  CUpti_Profiler_GetCounterAvailability_Params ga = {.structSize = CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE};
  ga.ctx = ctx;
  DKB_CUPTI_CHECK(err, cuptiProfilerGetCounterAvailability(&ga));
  avail = DKB_MALLOC(ga.counterAvailabilityImageSize);
  ga.pCounterAvailabilityImage = avail;
  DKB_CUPTI_CHECK(err, cuptiProfilerGetCounterAvailability(&ga));

  /* Host side: the configuration image that schedules the metrics on this chip. */
  CUpti_Profiler_Host_Initialize_Params hi = {.structSize = CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE};
  hi.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
  hi.pChipName = cn.pChipName;
  hi.pCounterAvailabilityImage = avail;
  DKB_CUPTI_CHECK(err, cuptiProfilerHostInitialize(&hi));
  host = hi.pHostObject;
  for (int i = 0; i < DKB_COUNTERS_N; i++) { /* CUPTI's own words for the record; optional */
    CUpti_Profiler_Host_GetMetricProperties_Params mp = {
        .structSize = CUpti_Profiler_Host_GetMetricProperties_Params_STRUCT_SIZE};
    mp.pHostObject = host;
    mp.pMetricName = METRICS[i];
    if (cuptiProfilerHostGetMetricProperties(&mp) == CUPTI_SUCCESS) {
      snprintf(out->v[i].cupti_description, sizeof out->v[i].cupti_description, "%s",
               mp.pDescription ? mp.pDescription : "");
      snprintf(out->v[i].cupti_unit, sizeof out->v[i].cupti_unit, "%s", mp.pDimUnit ? mp.pDimUnit : "");
    }
  }
  CUpti_Profiler_Host_ConfigAddMetrics_Params am = {.structSize = CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE};
  am.pHostObject = host;
  am.ppMetricNames = (const char **)METRICS;
  am.numMetrics = DKB_COUNTERS_N;
  DKB_CUPTI_CHECK(err, cuptiProfilerHostConfigAddMetrics(&am));
  CUpti_Profiler_Host_GetConfigImageSize_Params cs = {.structSize = CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE};
  cs.pHostObject = host;
  DKB_CUPTI_CHECK(err, cuptiProfilerHostGetConfigImageSize(&cs));
  config = DKB_MALLOC(cs.configImageSize);
  CUpti_Profiler_Host_GetConfigImage_Params gc = {.structSize = CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE};
  gc.pHostObject = host;
  gc.configImageSize = cs.configImageSize;
  gc.pConfigImage = config;
  DKB_CUPTI_CHECK(err, cuptiProfilerHostGetConfigImage(&gc));

  /* Target side: a counter-data image for one range. */
  CUpti_RangeProfiler_GetCounterDataSize_Params ds = {.structSize = CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE};
  ds.pRangeProfilerObject = rp;
  ds.pMetricNames = (const char **)METRICS;
  ds.numMetrics = DKB_COUNTERS_N;
  ds.maxNumOfRanges = 1;
  ds.maxNumRangeTreeNodes = 1;
  DKB_CUPTI_CHECK(err, cuptiRangeProfilerGetCounterDataSize(&ds));
  counter_data = DKB_MALLOC(ds.counterDataSize);
  CUpti_RangeProfiler_CounterDataImage_Initialize_Params ci = {
      .structSize = CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE};
  ci.pRangeProfilerObject = rp;
  ci.counterDataSize = ds.counterDataSize;
  ci.pCounterData = counter_data;
  DKB_CUPTI_CHECK(err, cuptiRangeProfilerCounterDataImageInitialize(&ci));

  CUpti_RangeProfiler_SetConfig_Params sc = {.structSize = CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE};
  sc.pRangeProfilerObject = rp;
  sc.configSize = cs.configImageSize;
  sc.pConfig = config;
  sc.counterDataImageSize = ds.counterDataSize;
  sc.pCounterDataImage = counter_data;
  sc.range = CUPTI_UserRange;
  sc.replayMode = CUPTI_UserReplay;
  sc.maxRangesPerPass = 1;
  sc.numNestingLevels = 1;
  sc.minNestingLevel = 1;
  sc.passIndex = 0;
  sc.targetNestingLevel = 1;
  DKB_CUPTI_CHECK(err, cuptiRangeProfilerSetConfig(&sc));

  /* User replay: rerun the workload until CUPTI has every pass it scheduled. */
  for (int done = 0; !done;) {
    if (out->passes == 16) {
      dkb_err_set(err, DKB_INTERNAL, NULL, NULL, "range profiler still wants passes after 16 replays");
      goto cleanup;
    }
    if (before) { /* outside the range, and finished before it starts */
      DKB_CUDA_CHECK(err, before(before_arg, stream));
      DKB_CUDA_CHECK(err, cudaDeviceSynchronize());
    }
    CUpti_RangeProfiler_Start_Params st = {.structSize = CUpti_RangeProfiler_Start_Params_STRUCT_SIZE};
    st.pRangeProfilerObject = rp;
    DKB_CUPTI_CHECK(err, cuptiRangeProfilerStart(&st));
    CUpti_RangeProfiler_PushRange_Params pu = {.structSize = CUpti_RangeProfiler_PushRange_Params_STRUCT_SIZE};
    pu.pRangeProfilerObject = rp;
    pu.pRangeName = range_name;
    DKB_CUPTI_CHECK(err, cuptiRangeProfilerPushRange(&pu));
    DKB_CUDA_CHECK(err, workload(arg, stream));
    CUpti_RangeProfiler_PopRange_Params po = {.structSize = CUpti_RangeProfiler_PopRange_Params_STRUCT_SIZE};
    po.pRangeProfilerObject = rp;
    DKB_CUPTI_CHECK(err, cuptiRangeProfilerPopRange(&po));
    CUpti_RangeProfiler_Stop_Params so = {.structSize = CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
    so.pRangeProfilerObject = rp;
    DKB_CUPTI_CHECK(err, cuptiRangeProfilerStop(&so));
    out->passes++;
    done = so.isAllPassSubmitted;
  }
  CUpti_RangeProfiler_DecodeData_Params dd = {.structSize = CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE};
  dd.pRangeProfilerObject = rp;
  DKB_CUPTI_CHECK(err, cuptiRangeProfilerDecodeData(&dd)); /* synchronizes the context */
  CUpti_RangeProfiler_GetCounterDataInfo_Params gi = {.structSize = CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE};
  gi.pCounterDataImage = counter_data;
  gi.counterDataImageSize = ds.counterDataSize;
  DKB_CUPTI_CHECK(err, cuptiRangeProfilerGetCounterDataInfo(&gi));
  if (gi.numTotalRanges < 1 || dd.numOfRangeDropped) {
    dkb_err_set(err, DKB_ENV, NULL, NULL, "range profiler decoded %zu ranges (%zu dropped)", (size_t)gi.numTotalRanges,
                (size_t)dd.numOfRangeDropped);
    goto cleanup;
  }
  CUpti_Profiler_Host_EvaluateToGpuValues_Params ev = {
      .structSize = CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE};
  ev.pHostObject = host;
  ev.pCounterDataImage = counter_data;
  ev.counterDataImageSize = ds.counterDataSize;
  ev.rangeIndex = 0;
  ev.ppMetricNames = (const char **)METRICS;
  ev.numMetrics = DKB_COUNTERS_N;
  ev.pMetricValues = values;
  DKB_CUPTI_CHECK(err, cuptiProfilerHostEvaluateToGpuValues(&ev));
  for (int i = 0; i < DKB_COUNTERS_N; i++) out->v[i].value = values[i];
  out->available = 1;
  rc = 0;
cleanup:
  if (rp) {
    CUpti_RangeProfiler_Disable_Params dp = {.structSize = CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE};
    dp.pRangeProfilerObject = rp;
    cuptiRangeProfilerDisable(&dp);
  }
  if (host) {
    CUpti_Profiler_Host_Deinitialize_Params hd = {.structSize = CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE};
    hd.pHostObject = host;
    cuptiProfilerHostDeinitialize(&hd);
  }
  if (initialized) {
    CUpti_Profiler_DeInitialize_Params di = {.structSize = CUpti_Profiler_DeInitialize_Params_STRUCT_SIZE};
    cuptiProfilerDeInitialize(&di);
  }
  free(config);
  free(counter_data);
  free(avail);
  if (rc) dkb_err_format(err, out->reason, sizeof out->reason);
  return rc;
}

json_t *dkb_counters_json(const struct dkb_counters *c) {
  json_t *metrics = json_array();
  for (int i = 0; i < DKB_COUNTERS_N; i++) {
    const struct dkb_counter *m = &c->v[i];
    json_t *j = json_pack("{s:s, s:s, s:s, s:s, s:s}", "name", m->name, "unit", m->unit, "numerator", m->numerator,
                          "denominator", m->denominator, "scope", m->scope);
    if (c->available) json_object_set_new(j, "value", json_real(m->value));
    if (m->cupti_description[0]) json_object_set_new(j, "cupti_description", json_string(m->cupti_description));
    if (m->cupti_unit[0]) json_object_set_new(j, "cupti_unit", json_string(m->cupti_unit));
    json_array_append_new(metrics, j);
  }
  json_t *j = json_pack("{s:s, s:s, s:s, s:s, s:i, s:i, s:o}", "status", c->available ? "measured" : "unavailable",
                        "profiler", "CUPTI range profiler (cupti_range_profiler.h)", "replay_mode", "user replay, user range",
                        "range", c->range_name, "cupti_version", (int)c->cupti_version, "passes", c->passes, "metrics",
                        metrics);
  if (c->chip[0]) json_object_set_new(j, "chip", json_string(c->chip));
  if (!c->available) json_object_set_new(j, "reason", json_string(c->reason));
  return j;
}
