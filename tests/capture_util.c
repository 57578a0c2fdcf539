/* capture_util.c - see capture_util.h. */
#include "tests/capture_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"

const char NO_DRIVER[] = "cudaGetDeviceCount: CUDA driver version is insufficient for CUDA runtime version "
                         "(cudaErrorInsufficientDriver; cudaGetDeviceCount(&count)";

void assert_reason(const char *msg, const char *prefix, const char *file) {
  size_t n = strlen(prefix);
  if (strncmp(msg, prefix, n)) fail_msg("reason\n  %s\ndoes not start with\n  %s", msg, prefix);
  const char *p = msg + n;
  char at[256];
  snprintf(at, sizeof at, " at %s:", file);
  if (strncmp(p, at, strlen(at))) fail_msg("reason %s: want ' at %s:LINE)' after the prefix", msg, file);
  p += strlen(at);
  if (*p < '1' || *p > '9') fail_msg("reason %s: no line number", msg);
  while (*p >= '0' && *p <= '9') p++;
  if (strcmp(p, ")")) fail_msg("reason %s: want ')' after the line number", msg);
}

void assert_capture_schema(const char *key, json_t *doc) {
  if (!have_jsonschema()) {
    print_message("[  INFO    ] %s: schema not checked, /usr/bin/python3 has no jsonschema here\n", key);
    json_decref(doc);
    return;
  }
  json_t *wrap = json_pack("{s:o}", key, doc);
  char *text = json_dumps(wrap, 0);
  char name[64];
  snprintf(name, sizeof name, "capture-%s.json", key);
  const char *path = tmp_file(name, text);
  struct run_result r;
  run_sh(&r, "/usr/bin/python3 tests/schema_check.py schemas/capture.schema.json %s", path);
  if (r.rc != 0) fail_msg("%s: %s%s\n%s", key, r.out, r.err, text);
  run_result_release(&r);
  free(text);
  json_decref(wrap);
}

int roofline_launch(void *arg, void *stream) {
  struct roofline_call *c = arg;
  for (int i = 0; i < c->times; i++) {
    int e = dkb_roofline_read(c->src, c->n16, c->sink, 0, stream);
    if (e) return e;
  }
  return 0;
}

void roofline_setup(struct roofline_call *c, size_t bytes, int times) {
  memset(c, 0, sizeof *c);
  assert_int_equal(cudaMalloc(&c->src, bytes), cudaSuccess);
  assert_int_equal(cudaMemset(c->src, 0, bytes), cudaSuccess);
  assert_int_equal(cudaMalloc((void **)&c->sink, sizeof(float)), cudaSuccess);
  c->n16 = bytes / 16;
  c->times = times;
}

void roofline_teardown(struct roofline_call *c) {
  cudaFree(c->src);
  cudaFree(c->sink);
}
