/* util.h - helpers shared by the test files: running dkb and python, temp files, registration. */
#ifndef DKB_TEST_UTIL_H
#define DKB_TEST_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <math.h>

/* |a - b| <= tol on doubles, with both values in the failure message (cmocka's float assert casts to float). */
#define assert_near(a, b, tol)                                                                          \
  do {                                                                                                  \
    double a_ = (a), b_ = (b), t_ = (tol);                                                              \
    if (!(fabs(a_ - b_) <= t_)) fail_msg("%s = %.17g, want %.17g (tol %.3g)", #a, a_, b_, t_);          \
  } while (0)

/* Each test file defines `const struct CMUnitTest *tests_NAME(size_t *n)`; tests/main.c lists them. */
#define DKB_TEST_GROUP(name, ...)                                         \
  const struct CMUnitTest *tests_##name(size_t *n) {                      \
    static const struct CMUnitTest t[] = {__VA_ARGS__};                   \
    *n = sizeof t / sizeof t[0];                                          \
    return t;                                                             \
  }

struct run_result {
  int rc;     /* exit status, or -1 if it did not exit normally */
  char *out;  /* captured stdout (malloc'ed, NUL-terminated) */
  char *err;  /* captured stderr */
};
/* Runs `sh -c cmdline` from the repository root; captures both streams. */
void run_sh(struct run_result *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void run_result_release(struct run_result *r);

/* Writes text to a fresh file under the test temp dir; returns its path (static storage per call). */
const char *tmp_file(const char *name, const char *text);
/* The per-run temp dir (created once). */
const char *tmp_dir(void);
/* At the end of the run: removes the temp dir (up to a GB of dumps, bundles and bench outputs), or keeps
 * it and says where when a test failed or DKB_TEST_KEEP is set. */
void tmp_dir_release(int failed);
/* Whole file into a malloc'ed string (NULL if unreadable). */
char *slurp(const char *path);

/* The integer member `key` of JSON object `obj` equals `want` (a missing or non-integer member reads 0); a
 * macro so that a failure names the caller's line. */
#define assert_json_int(obj, key, want) assert_int_equal(json_integer_value(json_object_get((obj), (key))), (want))

/* Writes `fixture` to a temp file `name`, runs `dkb oracle` on it and asserts exit 3 with exactly
 * "dkb: error: PATH: " + `error` + "\n" on stderr (error is "/json/pointer: reason"). */
void assert_oracle_malformed(const char *name, const char *fixture, const char *error);

struct decode_call;
struct decode_inputs;
struct decode_plan;
/* Plans the fixture at path as the runner does on 132 SMs with `resident` producer CTAs per SM (0: as
 * many as the producer is built for and fit, a plan made without a device), failing the test on error. */
void plan_fixture_resident(const char *path, int resident, struct decode_call *c, struct decode_inputs *in,
                           struct decode_plan *pl);
/* The same with room for `three_room` page ids in the producer built for three CTAs an SM (0: none; negative:
 * the build's, dkb_decode_three_room) on a device of that peak DRAM rate (0: none asked). */
void plan_fixture_room(const char *path, int resident, int three_room, double dram_bytes_per_s, struct decode_call *c,
                       struct decode_inputs *in, struct decode_plan *pl);
/* The same at 2 CTAs per SM resident (the d = 128 producers on the H200). */
void plan_fixture(const char *path, struct decode_call *c, struct decode_inputs *in, struct decode_plan *pl);
/* Releases a planned fixture: its plan, inputs and call. */
void release_planned(struct decode_call *c, struct decode_inputs *in, struct decode_plan *pl);

/* 1 when /usr/bin/python3 can import jsonschema (tests/schema_check.py): `make test` installs it; a GPU
 * machine that only received the binaries may lack it, and its GPU tests then say so and check the rest. */
int have_jsonschema(void);

/* 1 when a CUDA device is usable; reason gets why not. GPU tests skip with that reason printed. */
int have_gpu(char *reason, size_t n);
#define SKIP_WITHOUT_GPU()                                                \
  do {                                                                    \
    char why_[256];                                                       \
    if (!have_gpu(why_, sizeof why_)) {                                   \
      print_message("[  SKIP    ] no GPU: %s\n", why_);                 \
      skip();                                                             \
    }                                                                     \
  } while (0)

#endif
