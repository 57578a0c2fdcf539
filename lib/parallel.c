/* parallel.c - pthreads parallel-for (see parallel.h). */
#include "lib/parallel.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

struct job {
  int64_t n;
  atomic_llong next;
  void (*fn)(void *, int64_t);
  void *ctx;
};

static void *worker(void *arg) {
  struct job *j = arg;
  for (;;) {
    int64_t i = atomic_fetch_add(&j->next, 1);
    if (i >= j->n) return NULL;
    j->fn(j->ctx, i);
  }
}

int dkb_parallel_threads(void) {
  long k = sysconf(_SC_NPROCESSORS_ONLN);
  return k < 1 ? 1 : k > 256 ? 256 : (int)k;
}

void dkb_parallel_for(int64_t n, void (*fn)(void *ctx, int64_t i), void *ctx) {
  struct job j = {.n = n, .fn = fn, .ctx = ctx};
  atomic_init(&j.next, 0);
  int t = dkb_parallel_threads();
  if (t > n) t = (int)n;
  if (t <= 1) { worker(&j); return; }
  pthread_t th[256];
  int started = 0;
  for (int i = 1; i < t; i++)
    if (pthread_create(&th[started], NULL, worker, &j) == 0) started++;
  worker(&j);  /* the caller works too; if no thread could start it does everything */
  for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
}
