/* inject_selftest.c - the injection library's module and loader-map records without a GPU, for
 * tests/test_trace.c: linked with its objects, it writes to $DKB_TRACE_DIR the record of a module loaded
 * from the bytes of FILE (a cubin), of the same bytes inside a fatbin container, of bytes that are
 * neither, and a loader map. usage: inject_selftest CUBIN */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inject/inject.h"

int main(int argc, char **argv) {
  if (argc < 2 || !out_open("cuda")) return 2;
  FILE *f = fopen(argv[1], "rb");
  if (!f) return 2;
  static unsigned char buf[1 << 22];
  size_t n = fread(buf, 1, sizeof buf - 64, f);
  fclose(f);
  map_module_loaded(1, buf, n);
  /* a fatbin: its 16-byte header, then the ELF image at an 8-byte aligned offset */
  static unsigned char fat[(1 << 22) + 64];
  const unsigned char magic[4] = {0x50, 0xED, 0x55, 0xBA};
  memcpy(fat, magic, 4);
  memcpy(fat + 64, buf, n);
  map_module_loaded(2, fat, n + 64);
  map_module_loaded(3, "not a module", 12);
  map_snapshot(5);
  map_snapshot(6); /* nothing mapped since: unchanged */
  return 0;
}
