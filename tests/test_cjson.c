/* test_cjson.c - the canonical writer is byte-identical to Python's json.dumps(sort_keys=True,
 * separators=(",", ":")) (and to indent=2 for the pretty form), floats and non-ASCII text included. */
#include "tests/util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/cjson.h"
#include "lib/jread.h"
#include "oracles/rng.h"

#define PY_COMPACT_SRC                                                                                \
  "/usr/bin/python3 -c 'import json,sys; sys.stdout.write(json.dumps(json.load(open(sys.argv[1])), "             \
  "sort_keys=True, separators=(\",\", \":\")))' '%s'"
static const char *PY_COMPACT = PY_COMPACT_SRC;
static const char *PY_INDENT =
    "/usr/bin/python3 -c 'import json,sys; sys.stdout.write(json.dumps(json.load(open(sys.argv[1])), "
    "sort_keys=True, indent=2))' '%s'";

static char *ours(const char *path, int indent) {
  struct dkb_err err;
  json_t *doc = jr_load_file(path, &err);
  assert_non_null(doc);
  struct dkb_buf b;
  dkb_buf_init(&b);
  assert_int_equal(cjson_write(doc, indent, &b, &err), 0);
  json_decref(doc);
  return b.p;
}

static void same_as_python(const char *path) {
  for (int indent = 0; indent <= 2; indent += 2) {
    struct run_result r;
    run_sh(&r, indent ? PY_INDENT : PY_COMPACT, path);
    assert_int_equal(r.rc, 0);
    char *mine = ours(path, indent);
    if (strcmp(mine, r.out)) fail_msg("%s (indent %d):\n  dkb:    %.400s\n  python: %.400s", path, indent, mine, r.out);
    free(mine);
    run_result_release(&r);
  }
}

static void canonical_floats_match_python(void **s) { (void)s; same_as_python("tests/data/canonical/floats.json"); }
static void canonical_strings_match_python(void **s) { (void)s; same_as_python("tests/data/canonical/strings.json"); }
static void canonical_nesting_and_ints_match_python(void **s) { (void)s; same_as_python("tests/data/canonical/nested.json"); }
static void canonical_call_key_matches_python(void **s) { (void)s; same_as_python("tests/data/canonical/call_key.json"); }

/* The exact forms docs/DESIGN.md names. */
static void canonical_float_forms_are_python_repr(void **s) {
  (void)s;
  struct { double v; const char *want; } cases[] = {
      {0.0, "0.0"}, {-0.0, "-0.0"}, {0.1, "0.1"}, {1e-05, "1e-05"}, {1e16, "1e+16"}, {5e-324, "5e-324"},
      {1.7976931348623157e308, "1.7976931348623157e+308"}, {1e15, "1000000000000000.0"}, {0.0001, "0.0001"},
      {123456789012345678.0, "1.2345678901234568e+17"}, {100.0, "100.0"}, {-2.5, "-2.5"},
      /* powers of two whose 16 shortest digits are the rounded 16 plus one in the last place (the
       * round-trip interval is asymmetric there): 17 digits if only the rounded candidate is tried */
      {0x1p-1017, "7.120236347223045e-307"}, {0x1p-957, "8.209073602596753e-289"}, {0x1p-705, "5.940911144672375e-213"}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char buf[32];
    cjson_format_double(cases[i].v, buf);
    assert_string_equal(buf, cases[i].want);
  }
}

/* 20000 doubles from random bit patterns, powers of two and their neighbours, through both writers. */
static void canonical_random_doubles_match_python(void **s) {
  (void)s;
  struct dkb_rng g;
  dkb_rng_seed(&g, 42);
  json_t *a = json_array();
  for (int i = 0; i < 20000; i++) {
    double v;
    if (i % 4 == 0) v = ldexp(1.0, (int)dkb_rng_below(&g, 2098) - 1074);
    else if (i % 4 == 1) v = nextafter(ldexp(1.0, (int)dkb_rng_below(&g, 2000) - 1000), (i & 8) ? INFINITY : 0);
    else if (i % 4 == 2) v = dkb_rng_uniform(&g, -1e6, 1e6);
    else {
      uint64_t bits = dkb_rng_u64(&g);
      memcpy(&v, &bits, sizeof v);
      if (!isfinite(v)) v = 1.0;
    }
    json_array_append_new(a, json_real(v));
  }
  /* jansson's %.17g is exact enough for python to read back the same doubles. */
  char *text = json_dumps(a, JSON_COMPACT);
  const char *path = tmp_file("random_doubles.json", text);
  free(text);
  json_decref(a);
  same_as_python(path);
}

static void digest_is_sha256_of_canonical_bytes(void **s) {
  (void)s;
  struct run_result r;
  run_sh(&r, "build/dkb digest tests/data/canonical/call_key.json");
  assert_int_equal(r.rc, 0);
  struct run_result p;
  run_sh(&p, PY_COMPACT_SRC " | sha256sum | cut -c1-64", "tests/data/canonical/call_key.json");
  assert_int_equal(p.rc, 0);
  assert_string_equal(r.out, p.out);
  run_result_release(&r);
  run_result_release(&p);
}

static void digest_of_pointer_is_digest_of_subdocument(void **s) {
  (void)s;
  struct run_result r, p;
  run_sh(&r, "build/dkb digest tests/data/canonical/call_key.json --pointer /mask");
  run_sh(&p, "echo '{\"window\": 1024, \"kind\": \"sliding_window\"}' > %s/mask.json && build/dkb digest %s/mask.json",
         tmp_dir(), tmp_dir());
  assert_int_equal(r.rc, 0);
  assert_int_equal(p.rc, 0);
  assert_string_equal(r.out, p.out);
  run_result_release(&r);
  run_result_release(&p);
  run_sh(&r, "build/dkb digest tests/data/canonical/call_key.json --pointer /nope");
  assert_int_equal(r.rc, 3);
  assert_string_equal(r.err, "dkb: error: tests/data/canonical/call_key.json: /nope: names nothing in the document\n");
  run_result_release(&r);
}

DKB_TEST_GROUP(cjson, cmocka_unit_test(canonical_float_forms_are_python_repr),
               cmocka_unit_test(canonical_floats_match_python), cmocka_unit_test(canonical_strings_match_python),
               cmocka_unit_test(canonical_nesting_and_ints_match_python),
               cmocka_unit_test(canonical_call_key_matches_python),
               cmocka_unit_test(canonical_random_doubles_match_python),
               cmocka_unit_test(digest_is_sha256_of_canonical_bytes),
               cmocka_unit_test(digest_of_pointer_is_digest_of_subdocument))
