/* test_provenance.c - the build-time evidence (levels 1-3): the build report and source manifest
 * compiled into dkb, and tools/gen_provenance.py itself (symbol spans on a sample full of traps,
 * the exact errors for a missing file or symbol, regeneration by the Makefile when a listed file
 * changes). */
#include "tests/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness/provenance.h"
#include "lib/sha256.h"

static const char GEN[] = "/usr/bin/python3 tools/gen_provenance.py";

/* Writes text to path (creating build/tests/provenance first); returns path. */
static const char *write_file(const char *path, const char *text) {
  struct run_result r;
  run_sh(&r, "mkdir -p build/tests/provenance");
  run_result_release(&r);
  FILE *f = fopen(path, "wb");
  if (!f) fail_msg("cannot write %s", path);
  fputs(text, f);
  fclose(f);
  return path;
}

static void schema_check(const char *schema, const char *doc_path) {
  struct run_result r;
  run_sh(&r, "/usr/bin/python3 tests/schema_check.py %s %s", schema, doc_path);
  if (r.rc) fail_msg("%s%s", r.out, r.err);
  run_result_release(&r);
}

/* First line of a shell command's output, without the newline (static storage). */
static const char *sh_line(const char *cmd) {
  static char line[1024];
  struct run_result r;
  run_sh(&r, "%s", cmd);
  snprintf(line, sizeof line, "%s", r.out);
  line[strcspn(line, "\n")] = '\0';
  run_result_release(&r);
  return line;
}

static void build_report_names_this_build(void **s) {
  (void)s;
  struct dkb_err err;
  char sha[65], cmd[512];
  json_t *doc = dkb_provenance_load(dkb_build_report_json, "build_report", sha, &err);
  if (!doc) fail_msg("%s", err.msg);
  schema_check("schemas/build-report.schema.json", tmp_file("build-report.json", dkb_build_report_json));
  assert_string_equal(json_string_value(json_object_get(doc, "commit")), sh_line("git rev-parse HEAD"));
  int dirty = sh_line("git status --porcelain --untracked-files=no")[0] != '\0';
  assert_int_equal(json_is_true(json_object_get(doc, "dirty")), dirty);
  json_t *cc = json_object_get(json_object_get(doc, "compilers"), "cc");
  snprintf(cmd, sizeof cmd, "%s --version", json_string_value(json_object_get(cc, "command")));
  assert_string_equal(json_string_value(json_object_get(cc, "version")), sh_line(cmd));
  json_t *nvcc = json_object_get(json_object_get(doc, "compilers"), "nvcc");
  snprintf(cmd, sizeof cmd, "%s --version | grep release", json_string_value(json_object_get(nvcc, "command")));
  assert_string_equal(json_string_value(json_object_get(nvcc, "version")), sh_line(cmd));
  /* every gencode entry is what nvcc was given */
  const char *nvflags = json_string_value(json_object_get(doc, "nvflags"));
  json_t *gencode = json_object_get(doc, "gencode");
  assert_true(json_array_size(gencode) >= 1);
  for (size_t i = 0; i < json_array_size(gencode); i++) {
    char flag[128];
    snprintf(flag, sizeof flag, "-gencode %s", json_string_value(json_array_get(gencode, i)));
    assert_non_null(strstr(nvflags, flag));
  }
  assert_string_equal(json_string_value(json_object_get(doc, "build_host")), sh_line("/usr/bin/python3 -c 'import socket; print(socket.gethostname())'"));
  json_decref(doc);
}

static void source_manifest_hashes_the_compiled_working_tree(void **s) {
  (void)s;
  struct dkb_err err;
  char sha[65], hex[65];
  json_t *doc = dkb_provenance_load(dkb_source_manifest_json, "source_manifest", sha, &err);
  if (!doc) fail_msg("%s", err.msg);
  schema_check("schemas/source-manifest.schema.json", tmp_file("source-manifest.json", dkb_source_manifest_json));
  assert_string_equal(json_string_value(json_object_get(doc, "commit")), sh_line("git rev-parse HEAD"));
  const char *spec = json_string_value(json_object_get(doc, "spec"));
  json_t *files = json_object_get(doc, "files");
  assert_true(json_array_size(files) >= 1);
  for (size_t i = 0; i < json_array_size(files); i++) {
    json_t *f = json_array_get(files, i);
    const char *path = json_string_value(json_object_get(f, "path"));
    if (dkb_sha256_file(path, hex, &err)) fail_msg("%s", err.msg);
    assert_string_equal(json_string_value(json_object_get(f, "sha256")), hex);
  }
  /* the graph is the spec's */
  json_t *sp = json_load_file(spec, 0, NULL);
  assert_non_null(sp);
  assert_true(json_equal(json_object_get(json_object_get(doc, "chain"), "nodes"), json_object_get(sp, "nodes")));
  json_decref(sp);
  json_decref(doc);
}

static void chain_specs_are_schema_valid(void **s) {
  (void)s;
  schema_check("schemas/chain-spec.schema.json",
               "tools/chain.json tests/data/provenance/chain_test.json");
}

static json_t *symbol(json_t *doc, const char *name) {
  json_t *syms = json_object_get(doc, "symbols");
  for (size_t i = 0; i < json_array_size(syms); i++)
    if (!strcmp(json_string_value(json_object_get(json_array_get(syms, i), "symbol")), name))
      return json_array_get(syms, i);
  fail_msg("no symbol %s in the manifest", name);
  return NULL;
}

static void assert_span(json_t *doc, const char *name, int first, int last, const char *kind) {
  json_t *sym = symbol(doc, name);
  json_t *span = json_object_get(sym, "span");
  if (json_integer_value(json_array_get(span, 0)) != first || json_integer_value(json_array_get(span, 1)) != last)
    fail_msg("%s: span [%lld, %lld], want [%d, %d]", name, json_integer_value(json_array_get(span, 0)),
             json_integer_value(json_array_get(span, 1)), first, last);
  assert_string_equal(json_string_value(json_object_get(sym, "kind")), kind);
}

/* Line k (1-based) of a file, without its newline (static storage). */
static const char *file_line(const char *path, long k) {
  static char line[4096];
  FILE *f = fopen(path, "r");
  if (!f) fail_msg("cannot open %s", path);
  for (long i = 0; i < k; i++)
    if (!fgets(line, sizeof line, f)) fail_msg("%s has no line %ld", path, k);
  fclose(f);
  line[strcspn(line, "\n")] = '\0';
  return line;
}

/* tests/data/provenance/scan_sample.cu hides braces in comments, strings, character literals, a
 * raw string and a #define, declares before it defines, and nests kernels in extern "C" and a
 * namespace; the expected spans were read off the file by hand. */
static void generator_finds_symbol_spans_through_the_traps(void **s) {
  (void)s;
  char json[512];
  snprintf(json, sizeof json, "%s/manifest.json", tmp_dir());
  struct run_result r;
  run_sh(&r, "%s source-manifest --spec tests/data/provenance/chain_test.json --out %s/manifest.c --json %s", GEN,
         tmp_dir(), json);
  if (r.rc) fail_msg("%s%s", r.out, r.err);
  run_result_release(&r);
  schema_check("schemas/source-manifest.schema.json", json);
  json_t *doc = json_load_file(json, 0, NULL);
  assert_non_null(doc);
  assert_span(doc, "scan_plain", 15, 21, "function");
  assert_span(doc, "scan_kernel", 23, 30, "kernel");
  assert_span(doc, "scan_extern_c_kernel", 33, 33, "kernel");
  assert_span(doc, "scan_in_namespace", 37, 43, "function");
  assert_span(doc, "scan_launcher", 46, 49, "function");
  /* real files: the span opens on the line naming the symbol and closes on a lone brace */
  const char *real[] = {"cmd_oracle", "ss_merge", "dkb_hold_stream_v1"};
  for (size_t i = 0; i < 3; i++) {
    json_t *sym = symbol(doc, real[i]);
    const char *path = json_string_value(json_object_get(sym, "path"));
    json_t *span = json_object_get(sym, "span");
    assert_non_null(strstr(file_line(path, json_integer_value(json_array_get(span, 0))), real[i]));
    assert_string_equal(file_line(path, json_integer_value(json_array_get(span, 1))), "}");
  }
  assert_string_equal(json_string_value(json_object_get(symbol(doc, "dkb_hold_stream_v1"), "kind")), "kernel");
  /* matches_commit is what git says about the working-tree bytes */
  json_t *files = json_object_get(doc, "files");
  int any_differs = 0;
  for (size_t i = 0; i < json_array_size(files); i++) {
    json_t *f = json_array_get(files, i);
    struct run_result g;
    run_sh(&g, "git ls-files --error-unmatch -- %s >/dev/null 2>&1 && git diff --quiet HEAD -- %s",
           json_string_value(json_object_get(f, "path")), json_string_value(json_object_get(f, "path")));
    assert_int_equal(json_is_true(json_object_get(f, "matches_commit")), g.rc == 0);
    any_differs |= g.rc != 0;
    run_result_release(&g);
  }
  if (any_differs) assert_true(json_is_true(json_object_get(doc, "dirty")));
  json_decref(doc);
}

static void expect_gen_error(const char *spec_text, const char *want_fmt) {
  const char *spec = write_file("build/tests/provenance/spec.json", spec_text);
  struct run_result r;
  char want[1024];
  run_sh(&r, "%s source-manifest --spec %s --out %s/bad.c", GEN, spec, tmp_dir());
  snprintf(want, sizeof want, want_fmt, spec);
  assert_int_equal(r.rc, 1);
  assert_string_equal(r.err, want);
  run_result_release(&r);
}

static void generator_fails_on_a_missing_file_or_symbol(void **s) {
  (void)s;
  expect_gen_error("{\"schema\": \"dkb.chain-spec/v1\", \"nodes\": [{\"symbol\": \"no_such_fn\", \"layer\": \"cmd\", "
                   "\"path\": \"cmd/oracle.c\"}]}",
                   "gen_provenance: error: %s: /nodes/0/symbol: no definition of 'no_such_fn' in cmd/oracle.c\n");
  expect_gen_error("{\"schema\": \"dkb.chain-spec/v1\", \"nodes\": [{\"symbol\": \"cmd_oracle\", \"layer\": \"cmd\", "
                   "\"path\": \"cmd/oracle.c\"}, {\"symbol\": \"cmd_run\", \"layer\": \"cmd\", \"path\": \"cmd/no_such.c\"}]}",
                   "gen_provenance: error: %s: /nodes/1/path: source file 'cmd/no_such.c' does not exist\n");
  /* a prototype is not a definition */
  expect_gen_error("{\"schema\": \"dkb.chain-spec/v1\", \"nodes\": [{\"symbol\": \"dkb_roofline_read\", \"layer\": "
                   "\"launch\", \"path\": \"kernels/kernels.h\"}]}",
                   "gen_provenance: error: %s: /nodes/0/symbol: no definition of 'dkb_roofline_read' in kernels/kernels.h\n");
  expect_gen_error("{\"schema\": \"dkb.chain-spec/v1\", \"nodes\": [{\"symbol\": \"cmd_oracle\", \"layer\": \"cmd\", "
                   "\"path\": \"cmd/oracle.c\"}], \"files\": [\"tools/nothing.json\"]}",
                   "gen_provenance: error: %s: /files/0: source file 'tools/nothing.json' does not exist\n");
}

static void generator_rejects_duplicates_and_bad_specs(void **s) {
  (void)s;
  write_file("build/tests/provenance/dup.c", "#if A\nint dup_fn(void) { return 0; }\n#else\nint dup_fn(void) { return 1; }\n#endif\n");
  expect_gen_error("{\"schema\": \"dkb.chain-spec/v1\", \"nodes\": [{\"symbol\": \"dup_fn\", \"layer\": \"x\", "
                   "\"path\": \"build/tests/provenance/dup.c\"}]}",
                   "gen_provenance: error: %s: /nodes/0/symbol: 'dup_fn' is defined 2 times in "
                   "build/tests/provenance/dup.c (lines 2, 4)\n");
  expect_gen_error("{\"schema\": \"dkb.chain-spec/v1\", \"nodes\": [{\"symbol\": \"cmd_oracle\", \"layer\": \"cmd\", "
                   "\"path\": \"cmd/oracle.c\"}], \"edges\": [{\"from\": \"cmd_oracle\", \"to\": \"plan_build\"}]}",
                   "gen_provenance: error: %s: /edges/0/to: names no node ('plan_build')\n");
  expect_gen_error("{\"schema\": \"dkb.chain-spec/v2\", \"nodes\": []}",
                   "gen_provenance: error: %s: /schema: must be \"dkb.chain-spec/v1\"\n");
  expect_gen_error("{\"schema\": \"dkb.chain-spec/v1\", \"nodes\": [{\"symbol\": \"cmd_oracle\", \"layer\": \"cmd\", "
                   "\"path\": \"/work/cmd/oracle.c\"}]}",
                   "gen_provenance: error: %s: /nodes/0/path: must be a repository-relative path\n");
  expect_gen_error("{\"schema\": \"dkb.chain-spec/v1\",\n \"nodes\": [}", "gen_provenance: error: %s:2:12: Expecting value\n");
}

/* A kernel defined in a file of the chain is a node that an edge launches: one left out (as
 * decode_split_kv_producer3sm_mma once was) fails the build instead of holding its bundles at level 4,
 * dkb's chain or a plugin's. A declaration, a comment or a string naming a kernel asks nothing. */
static void generator_requires_every_kernel_of_a_chain_file_launched(void **s) {
  (void)s;
  write_file("build/tests/provenance/k.cu",
             "__global__ void declared_only(int);\n"
             "// __global__ void in_a_comment(int) {}\n"
             "static const char *t = \"__global__ void in_a_string(int) {}\";\n"
             "void launch_k(void) {}\n"
             "template <int N> __global__ void first_k(int a) {}\n"
             "__global__ void __launch_bounds__(128, 3) second_k(int a) {}\n");
  const char *nodes = "{\"symbol\": \"launch_k\", \"layer\": \"launch\", \"path\": \"build/tests/provenance/k.cu\"}, "
                      "{\"symbol\": \"first_k\", \"layer\": \"producer\", \"path\": \"build/tests/provenance/k.cu\"}";
  char spec[1024];
  snprintf(spec, sizeof spec, "{\"schema\": \"dkb.chain-spec/v1\", \"nodes\": [%s], \"edges\": [{\"from\": \"launch_k\", "
           "\"to\": \"first_k\"}]}", nodes);
  expect_gen_error(spec, "gen_provenance: error: %s: /nodes: kernel 'second_k' (build/tests/provenance/k.cu:6) is no "
                         "node, so a call that launches it cannot reach level 5\n");
  /* a plugin's chain the same, over its repository files */
  write_file("build/tests/provenance/spec.json", spec);
  write_file("build/tests/provenance/none.d", "");
  struct run_result p;
  run_sh(&p, "%s plugin --spec build/tests/provenance/spec.json --deps build/tests/provenance/none.d --compiler=cc "
         "--flags= --out %s/plugin.c", GEN, tmp_dir());
  assert_int_equal(p.rc, 1);
  assert_string_equal(p.err, "gen_provenance: error: build/tests/provenance/spec.json: /nodes: kernel 'second_k' "
                             "(build/tests/provenance/k.cu:6) is no node, so a call that launches it cannot reach level 5\n");
  run_result_release(&p);
  snprintf(spec, sizeof spec, "{\"schema\": \"dkb.chain-spec/v1\", \"nodes\": [%s, {\"symbol\": \"second_k\", \"layer\": "
           "\"producer\", \"path\": \"build/tests/provenance/k.cu\"}], \"edges\": [{\"from\": \"launch_k\", \"to\": "
           "\"first_k\"}]}", nodes);
  expect_gen_error(spec, "gen_provenance: error: %s: /nodes/2/symbol: kernel 'second_k' is no edge's \"to\": nothing "
                         "launches it\n");
  snprintf(spec, sizeof spec, "{\"schema\": \"dkb.chain-spec/v1\", \"nodes\": [%s, {\"symbol\": \"second_k\", \"layer\": "
           "\"producer\", \"path\": \"build/tests/provenance/k.cu\"}], \"edges\": [{\"from\": \"launch_k\", \"to\": "
           "\"first_k\"}, {\"from\": \"launch_k\", \"to\": \"second_k\"}]}", nodes);
  write_file("build/tests/provenance/spec.json", spec);
  struct run_result r;
  run_sh(&r, "%s source-manifest --spec build/tests/provenance/spec.json --out %s/good.c", GEN, tmp_dir());
  if (r.rc) fail_msg("a chain naming and launching both kernels: rc %d: %s", r.rc, r.err);
  run_result_release(&r);
}

/* Evaluates a Python expression over d, the document a generated C file holds (static storage). */
static const char *manifest_field(const char *cfile, const char *expr) {
  const char *py = tmp_file("cdoc.py",
                            "import ast, json, re, sys\n"
                            "t = open(sys.argv[1]).read()\n"
                            "d = json.loads(''.join(ast.literal_eval('\"' + m + '\"')\n"
                            "                       for m in re.findall(r'^    \"(.*)\";?$', t, re.M)))\n"
                            "print(eval(sys.argv[2]))\n");
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s %s '%s'", py, cfile, expr);
  return sh_line(cmd);
}

static long long mtime_ns(const char *path) {
  struct stat st;
  if (stat(path, &st)) fail_msg("cannot stat %s", path);
  return (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
}

/* `make` regenerates the manifest on every build, rewriting it only when its text changes: an edit of
 * a listed file shows up, an unchanged tree leaves the file (and so the object) alone. */
static void makefile_regenerates_the_manifest_when_a_listed_file_changes(void **s) {
  (void)s;
  const char *src = write_file("build/tests/provenance/regen.c", "int regen_fn(void) { return 1; }\n");
  write_file("build/tests/provenance/regen.json",
             "{\"schema\": \"dkb.chain-spec/v1\", \"nodes\": [{\"symbol\": \"regen_fn\", \"layer\": \"cmd\", "
             "\"path\": \"build/tests/provenance/regen.c\"}]}");
  const char *out = "build/tests/regen/gen/source_manifest.c";
  const char *make = "env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS make --no-print-directory -s BUILD=build/tests/regen "
                     "CHAIN_SPEC=build/tests/provenance/regen.json build/tests/regen/gen/source_manifest.c";
  struct run_result r;
  char hex[65];
  struct dkb_err err;
  run_sh(&r, "rm -rf build/tests/regen && %s", make);
  if (r.rc) fail_msg("%s%s", r.out, r.err);
  run_result_release(&r);
  if (dkb_sha256_file(src, hex, &err)) fail_msg("%s", err.msg);
  assert_string_equal(manifest_field(out, "d[\"files\"][0][\"sha256\"]"), hex);
  /* an ignored, untracked file: its bytes are not pinned by the commit */
  assert_string_equal(manifest_field(out, "d[\"files\"][0][\"matches_commit\"], d[\"dirty\"]"), "(False, True)");
  assert_string_equal(manifest_field(out, "d[\"symbols\"][0][\"span\"]"), "[1, 1]");
  long long t0 = mtime_ns(out);
  run_sh(&r, "%s", make);
  assert_int_equal(r.rc, 0);
  run_result_release(&r);
  assert_true(mtime_ns(out) == t0);
  write_file(src, "/* edited */\nint regen_fn(void)\n{\n  return 2;\n}\n");
  run_sh(&r, "%s", make);
  assert_int_equal(r.rc, 0);
  run_result_release(&r);
  if (dkb_sha256_file(src, hex, &err)) fail_msg("%s", err.msg);
  assert_string_equal(manifest_field(out, "d[\"files\"][0][\"sha256\"]"), hex);
  assert_string_equal(manifest_field(out, "d[\"symbols\"][0][\"span\"]"), "[2, 5]");
  /* and a spec whose symbol disappears fails the build */
  write_file(src, "int renamed_fn(void) { return 2; }\n");
  run_sh(&r, "%s", make);
  assert_int_not_equal(r.rc, 0);
  assert_non_null(strstr(r.err, "gen_provenance: error: build/tests/provenance/regen.json: /nodes/0/symbol: no "
                                "definition of 'regen_fn' in build/tests/provenance/regen.c\n"));
  run_result_release(&r);
}

DKB_TEST_GROUP(provenance, cmocka_unit_test(build_report_names_this_build),
               cmocka_unit_test(source_manifest_hashes_the_compiled_working_tree),
               cmocka_unit_test(chain_specs_are_schema_valid),
               cmocka_unit_test(generator_finds_symbol_spans_through_the_traps),
               cmocka_unit_test(generator_fails_on_a_missing_file_or_symbol),
               cmocka_unit_test(generator_rejects_duplicates_and_bad_specs),
               cmocka_unit_test(generator_requires_every_kernel_of_a_chain_file_launched),
               cmocka_unit_test(makefile_regenerates_the_manifest_when_a_listed_file_changes))
