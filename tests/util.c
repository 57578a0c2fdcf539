/* util.c - test helpers (see util.h). */
#include "tests/util.h"
#include "harness/builtin.h"
#include "harness/decode_call.h"
#include "harness/inputs.h"
#include "harness/plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 4096, n = 0, k;
  char *s = malloc(cap);
  while ((k = fread(s + n, 1, cap - n - 1, f)) > 0) {
    n += k;
    if (n + 1 == cap) s = realloc(s, cap *= 2);
  }
  fclose(f);
  s[n] = '\0';
  return s;
}

static char tmp_dir_path[256];

const char *tmp_dir(void) {
  if (!tmp_dir_path[0]) {
    snprintf(tmp_dir_path, sizeof tmp_dir_path, "/tmp/dkb-tests-XXXXXX");
    if (!mkdtemp(tmp_dir_path)) abort();
  }
  return tmp_dir_path;
}

static const char *tmp_dir_created(void) { return tmp_dir_path[0] ? tmp_dir_path : NULL; }

void tmp_dir_release(int failed) {
  const char *dir = tmp_dir_created();
  if (!dir) return;
  if (failed || getenv("DKB_TEST_KEEP")) {
    fprintf(stderr, "dkb_tests: the tests' files are kept in %s\n", dir);
    return;
  }
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "dkb_tests: could not remove %s\n", dir);
}

const char *tmp_file(const char *name, const char *text) {
  static char path[8][512];
  static int slot;
  char *p = path[slot++ % 8];
  snprintf(p, 512, "%s/%s", tmp_dir(), name);
  FILE *f = fopen(p, "wb");
  if (!f) abort();
  fputs(text, f);
  fclose(f);
  return p;
}

void run_sh(struct run_result *r, const char *fmt, ...) {
  char cmd[8192], full[9400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cmd, sizeof cmd, fmt, ap);
  va_end(ap);
  char out[512], err[512];
  snprintf(out, sizeof out, "%s/stdout.txt", tmp_dir());
  snprintf(err, sizeof err, "%s/stderr.txt", tmp_dir());
  snprintf(full, sizeof full, "( %s ) >'%s' 2>'%s'", cmd, out, err);
  int st = system(full);
  r->rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r->out = slurp(out);
  r->err = slurp(err);
}

void run_result_release(struct run_result *r) {
  free(r->out);
  free(r->err);
  memset(r, 0, sizeof *r);
}

void assert_oracle_malformed(const char *name, const char *fixture, const char *error) {
  const char *path = tmp_file(name, fixture);
  char want[2048];
  snprintf(want, sizeof want, "dkb: error: %s: %s\n", path, error);
  struct run_result r;
  run_sh(&r, "build/dkb oracle %s", path);
  if (r.rc != 3) fail_msg("%s: exit %d, want 3 (%s)", name, r.rc, r.err);
  assert_string_equal(r.err, want);
  run_result_release(&r);
}

int have_jsonschema(void) {
  static int have = -1;
  if (have < 0) {
    struct run_result r;
    run_sh(&r, "/usr/bin/python3 -c 'import jsonschema'");
    have = r.rc == 0;
    run_result_release(&r);
  }
  return have;
}

int have_gpu(char *reason, size_t n) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    snprintf(reason, n, "cudaGetDeviceCount: %s", cudaGetErrorString(e));
    return 0;
  }
  if (count == 0) {
    snprintf(reason, n, "no CUDA device");
    return 0;
  }
  return 1;
}

/* Releases a planned fixture: its plan, inputs and call. */
void release_planned(struct decode_call *c, struct decode_inputs *in, struct decode_plan *pl) {
  plan_release(pl);
  inputs_release(in);
  decode_call_release(c);
}

/* Plans the fixture at path as the runner does on 132 SMs with `resident` producer CTAs per SM and, unless
 * three_room is negative, that room in the producer built for three CTAs an SM. */
void plan_fixture_room(const char *path, int resident, int three_room, double dram_bytes_per_s, struct decode_call *c,
                       struct decode_inputs *in, struct decode_plan *pl) {
  struct dkb_err e;
  if (decode_call_load(path, c, &e)) fail_msg("%s: %s", path, e.msg);
  struct plan_opts po = builtin_plan_opts(c, 132, -1);
  assert_true(po.tile_tokens > 0);
  po.ctas_per_sm = resident;
  if (three_room >= 0) po.three_room = three_room;
  po.dram_bytes_per_s = dram_bytes_per_s;
  if (inputs_build(c, po.tile_tokens, in, &e)) fail_msg("%s: %s", path, e.msg);
  if (plan_build(c, in, &po, pl, &e)) fail_msg("%s: %s", path, e.msg);
}

void plan_fixture_resident(const char *path, int resident, struct decode_call *c, struct decode_inputs *in,
                           struct decode_plan *pl) {
  plan_fixture_room(path, resident, -1, 0, c, in, pl);
}

/* Plans the fixture at path as the runner does (132 SMs, 2 CTAs per SM resident). */
void plan_fixture(const char *path, struct decode_call *c, struct decode_inputs *in, struct decode_plan *pl) {
  plan_fixture_resident(path, 2, c, in, pl);
}
