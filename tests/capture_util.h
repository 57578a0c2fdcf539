/* capture_util.h - what the capture tests (test_capture.c) and the measurement tests (test_measure.c)
 * share: the no-driver reason and its check, the capture schema, and a read kernel to trace, time and
 * count on a GPU. */
#ifndef DKB_TEST_CAPTURE_UTIL_H
#define DKB_TEST_CAPTURE_UTIL_H

#include <stddef.h>

#include <cuda_runtime_api.h>
#include <jansson.h>

#include "tests/util.h"

/* The degrade tests assert the no-driver reason; with a driver installed they have nothing to prove. */
#define SKIP_WITH_DRIVER()                                                                               \
  do {                                                                                                   \
    int n_ = 0;                                                                                          \
    cudaError_t e_ = cudaGetDeviceCount(&n_);                                                            \
    (void)cudaGetLastError();                                                                            \
    if (e_ != cudaErrorInsufficientDriver) {                                                             \
      print_message("[  SKIP    ] a CUDA driver is present: the no-driver reason is not exercised here\n"); \
      skip();                                                                                            \
    }                                                                                                    \
  } while (0)

/* The runtime's reason on a machine without a driver, as harness/device.c reports it. */
extern const char NO_DRIVER[];

/* msg == prefix + " at " + file + ":" + line + ")" with any line number. */
void assert_reason(const char *msg, const char *prefix, const char *file);

/* Validates {"KEY": doc} against schemas/capture.schema.json (steals doc). `make test` installs
 * python3-jsonschema; a GPU machine that only received the binary may lack it, and says so. */
void assert_capture_schema(const char *key, json_t *doc);

/* dkb's roofline read over a device buffer, `times` launches a call (a dkb_launch_fn). */
struct roofline_call {
  void *src;
  size_t n16;
  float *sink;
  int times; /* launches per call */
};
int roofline_launch(void *arg, void *stream);
/* Allocates and zeroes `bytes` to read (the test fails where the device cannot). */
void roofline_setup(struct roofline_call *c, size_t bytes, int times);
void roofline_teardown(struct roofline_call *c);

#endif
