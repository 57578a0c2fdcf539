/* gpucheck.c - turning a failed CUDA/CUPTI/NVML status into a reason (see gpucheck.h). */
#include "harness/gpucheck.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include <cuda_runtime_api.h>
#include <cupti.h>

int dkb_gpucheck_fail(struct dkb_err *err, int code, const char *name, const char *text, const char *call,
                      const char *file, int line) {
  /* The function name is the call text up to its argument list. */
  size_t fn = strcspn(call, "(");
  while (fn > 0 && isspace((unsigned char)call[fn - 1])) fn--;
  /* CUPTI's messages end in blanks and a newline. */
  size_t tn = strlen(text);
  while (tn > 0 && isspace((unsigned char)text[tn - 1])) tn--;
  if (!strcmp(name, text))
    return dkb_err_set(err, code, NULL, NULL, "%.*s: %.*s (%s at %s:%d)", (int)fn, call, (int)tn, text, call, file,
                       line);
  return dkb_err_set(err, code, NULL, NULL, "%.*s: %.*s (%s; %s at %s:%d)", (int)fn, call, (int)tn, text, name, call,
                     file, line);
}

/* Errors that a kernel (the thing under test) causes, as opposed to what the machine lacks. */
static int cuda_exit_code(cudaError_t e) {
  switch (e) {
  case cudaErrorIllegalAddress:
  case cudaErrorLaunchFailure:
  case cudaErrorMisalignedAddress:
  case cudaErrorIllegalInstruction:
  case cudaErrorInvalidPc:
  case cudaErrorHardwareStackError:
  case cudaErrorAssert:
  case cudaErrorLaunchTimeout:
  case cudaErrorLaunchOutOfResources:
  case cudaErrorInvalidConfiguration:
    return DKB_FAIL;
  default:
    return DKB_ENV;
  }
}

int dkb_gpucheck_cuda_code(int status) { return cuda_exit_code((cudaError_t)status); }

int dkb_gpucheck_cuda(struct dkb_err *err, int status, const char *call, const char *file, int line) {
  cudaError_t e = (cudaError_t)status;
  (void)cudaGetLastError();
  return dkb_gpucheck_fail(err, cuda_exit_code(e), cudaGetErrorName(e), cudaGetErrorString(e), call, file, line);
}

int dkb_gpucheck_cupti(struct dkb_err *err, int status, const char *call, const char *file, int line) {
  const char *name = NULL, *text = NULL;
  if (cuptiGetResultString((CUptiResult)status, &name) != CUPTI_SUCCESS || !name) name = "CUPTI_ERROR_?";
  if (cuptiGetErrorMessage((CUptiResult)status, &text) != CUPTI_SUCCESS || !text) text = name;
  return dkb_gpucheck_fail(err, DKB_ENV, name, text, call, file, line);
}
