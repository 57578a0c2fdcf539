"""A plugin backend (include/dkb/backend.h): the bundle dkb writes when a plugin's kernels run the call,
and one fixture per requirement only a plugin's bundle can break."""
import copy
import os

from .gen import COMMIT, FIXTURE_PATH, sha256, write_stand_in
from .base import (NO_MERGE, OBJECTS, OTHER_OBJECTS, admission_of, launched_bytes, mapped, obj, over, ref, refresh,
                   replace_artifact, required_of, retrace)

PLUGIN_BACKEND = "synth_split_kv"
PLUGIN_LIB = ("/opt/dkb/build/plugins/libdkb_synth.so", 1843200)
# a closed-source library the plugin links (requirement.source_binary_not_loaded: its planner's call into it
# as a binary node, like cuDNN's engines)
BINARY_LIB = ("/opt/synth/lib/libsynth_rt.so.2", 5263360)
BINARY_NODE = {"id": "synth_rt_chunk_size", "layer": "plan", "path": os.path.basename(BINARY_LIB[0]), "symbol": "synth_rt_chunk_size",
               "root": "binary"}
UPSTREAM = {"package": "synth-attention", "version": "0.4.2", "archive": "synth_attention-0.4.2-py3-none-any.whl",
            "archive_sha256": sha256(b"synthetic synth_attention-0.4.2 wheel")}
UPSTREAM_DIR = "upstream/synth-attention"  # repository-relative: where the wheel was unpacked
UP_HEADER = "synth_attention/include/synth/decode.cuh"
P_PRODUCER = "_ZN5synth17SplitDecodeKernelILi128EEEvPK6__halfS3_S3_PfS4_i"
P_COMBINE = "_ZN5synth17MergeStatesKernelILi128EEEvPKfS2_P6__halfi"
P_KERNELS = [
    {"symbol": P_PRODUCER, "demangled": "void synth::SplitDecodeKernel<128>(__half const*, __half const*, __half const*, "
     "float*, float*, int)", "launches": 1, "grid": [7, 8, 1], "block": [32, 4, 1], "registers": 64, "shared_bytes": 16384},
    {"symbol": P_COMBINE, "demangled": "void synth::MergeStatesKernel<128>(float const*, float const*, __half*, int)",
     "launches": 1, "grid": [132, 1, 1], "block": [32, 4, 1], "registers": 48, "shared_bytes": 2048}]

# dkb's files above the backend boundary: what the bundle keeps of dkb's chain for a plugin's call
DKB_RUNNER = [
    ("harness/runner.c", [
        ("runner_execute", "function", "int runner_execute(struct runner *r) {\n  if (stage_dispatch(r)) return -1;\n"
                                       "  return stage_capture(r);\n}\n"),
        ("stage_dispatch", "function", "static int stage_dispatch(struct runner *r) {\n  backends_admit(r->backends, r->call);\n"
                                       "  return r->sel->plan(r->sel, r->call, &r->plan, &r->state);\n}\n"),
        ("stage_capture", "function", "static int stage_capture(struct runner *r) {\n  r->sel->setup(r->state, r->call, r->ws, 0);\n"
                                      "  return launch_selected(r);\n}\n"),
        ("launch_selected", "function", "static int launch_selected(struct runner *r) {\n"
                                        "  return r->sel->launch(r->state, r->call, r->ws, r->stream);\n}\n")]),
    ("harness/backends.c", [
        ("backends_admit", "function", "int backends_admit(struct backends *bs, const struct dkb_call *c) {\n"
                                       "  for (size_t i = 0; i < bs->n; i++) bs->v[i].admit(&bs->v[i], c, &bs->why[i]);\n"
                                       "  return first_eligible(bs);\n}\n")])]
DKB_RUNNER_EDGES = [["cmd_run", "runner_execute"], ["runner_execute", "stage_dispatch"], ["stage_dispatch", "backends_admit"],
                    ["runner_execute", "stage_capture"], ["stage_capture", "launch_selected"]]
# dkb's chain nodes that are not its own backends' (scope builtin), in tools/chain.json's order
DKB_RUNNER_NODES = [("cmd_run", "cmd"), ("runner_execute", "runner"), ("stage_dispatch", "runner"), ("backends_admit", "admission"),
                    ("stage_capture", "runner"), ("launch_selected", "launch")]
ADAPTER = ("plugins/synth/adapter.cu", [
    ("synth_admit", "function", "static int synth_admit(const struct dkb_backend *self, const struct dkb_call *c, char *why) {\n"
                                "  return c->head_dim_qk == 128 ? DKB_ADMIT_OK : DKB_ADMIT_NO;\n}\n"),
    ("synth_plan", "function", "static int synth_plan(const struct dkb_backend *self, const struct dkb_call *c, struct dkb_plan *p,\n"
                               "                      void **state) {\n  p->splits = synth_chunks(c);\n"
                               "  p->lse_base = DKB_LSE_BASE2;\n  return 0;\n}\n"),
    ("synth_setup", "function", "static int synth_setup(void *state, const struct dkb_call *c, void *const *ws, void *stream) {\n"
                                "  return synth_upload_tables(state, ws[0], stream);\n}\n"),
    ("synth_launch", "function", "static int synth_launch(void *state, const struct dkb_call *c, void *const *ws, void *stream) {\n"
                                 "  return synth::SplitDecodeDispatched<128>(params_of(state, c, ws), stream);\n}\n")])
UPSTREAM_SOURCES = (UP_HEADER, [
    ("SplitDecodeKernel", "kernel", "template <int D>\n__global__ void SplitDecodeKernel(const __half *q, const __half *k, const __half *v,\n"
                                    "                                  float *tmp_v, float *tmp_s, int n) {\n"
                                    "  /* one chunk's partial state; its LSE in base 2 */\n}\n"),
    ("MergeStatesKernel", "kernel", "template <int D>\n__global__ void MergeStatesKernel(const float *tmp_v, const float *tmp_s, __half *o, int n) {\n"
                                    "  /* merge the chunks of every request that split */\n}\n"),
    ("SplitDecodeDispatched", "function", "template <int D>\ncudaError_t SplitDecodeDispatched(const Params &p, cudaStream_t s) {\n"
                                          "  SplitDecodeKernel<D><<<p.grid, p.block, 0, s>>>(p.q, p.k, p.v, p.tmp_v, p.tmp_s, p.n);\n"
                                          "  if (p.split_kv) MergeStatesKernel<D><<<p.merge_grid, p.block, 0, s>>>(p.tmp_v, p.tmp_s, p.o, p.n);\n"
                                          "  return cudaGetLastError();\n}\n")])
INCLUDED_REPO = ("include/dkb/backend.h", "\nstruct dkb_plan;  /* the plugin ABI: what a plan declares */\n")
INCLUDED_UPSTREAM = ("synth_attention/include/synth/vec.cuh", "\ntemplate <int N> struct vec_t { float v[N]; };\n")
# the plugin's chain spec: its table functions are the roots dkb's runner calls
PLUGIN_NODES = [("synth_admit", "admission", ADAPTER[0], None), ("synth_plan", "plan", ADAPTER[0], None),
                ("synth_setup", "setup", ADAPTER[0], None), ("synth_launch", "launch", ADAPTER[0], None),
                ("SplitDecodeDispatched", "launch", UP_HEADER, "upstream"),
                ("SplitDecodeKernel", "producer", UP_HEADER, "upstream"), ("MergeStatesKernel", "combine", UP_HEADER, "upstream")]
PLUGIN_EDGES = [["synth_launch", "SplitDecodeDispatched"],
                ["SplitDecodeDispatched", "SplitDecodeKernel"], ["SplitDecodeDispatched", "MergeStatesKernel"]]
# harness/run_evidence_source.c's BRIDGES: where dkb hands the call to a backend's chain roots of these layers
BRIDGES = {"admission": "backends_admit", "plan": "stage_dispatch", "setup": "stage_capture", "launch": "launch_selected"}


def write_plugin_tree(out):
    """The stand-ins of a plugin's call: dkb's runner files, the plugin's adapter, an ABI header it includes,
    its upstream package's header (symbols) and one it includes, under the unpacked wheel's folder. Returns
    (dkb's files, the plugin's source manifest)."""
    dkb = [write_stand_in(out, path, syms)[0] for path, syms in DKB_RUNNER]
    adapter, a_size = write_stand_in(out, *ADAPTER)
    inc, i_size = write_stand_in(out, INCLUDED_REPO[0], [], body=INCLUDED_REPO[1])
    up, u_size = write_stand_in(out, *UPSTREAM_SOURCES, under=UPSTREAM_DIR)
    upi, ui_size = write_stand_in(out, INCLUDED_UPSTREAM[0], [], under=UPSTREAM_DIR, body=INCLUDED_UPSTREAM[1])
    files = [dict(path=f["path"], root="repo", sha256=f["sha256"], size=n, matches_commit=True)
             for f, n in ((adapter, a_size), (inc, i_size))]
    files += [dict(path=f["path"], root="upstream", sha256=f["sha256"], size=n, record_sha256=f["sha256"])
              for f, n in ((up, u_size), (upi, ui_size))]
    symbols = [{"symbol": s["name"], "path": f["path"], "kind": s["role"], "span": s["lines"]}
               for f in (adapter, up) for s in f["symbols"]]
    nodes = [dict({"symbol": sym, "layer": layer, "path": path}, **({"root": root} if root else {}))
             for sym, layer, path, root in PLUGIN_NODES]
    manifest = {"schema": "dkb.source-manifest/v1", "spec": "plugins/synth/chain.json", "commit": COMMIT, "dirty": False,
                "files": files, "symbols": sorted(symbols, key=lambda s: [n[0] for n in PLUGIN_NODES].index(s["symbol"])),
                "chain": {"nodes": nodes, "edges": [{"from": a, "to": z} for a, z in PLUGIN_EDGES]},
                "upstream": dict(UPSTREAM, dir=UPSTREAM_DIR)}
    return dkb, manifest


def merged_source(dkb_files, manifest):
    """/source/files and /chain as harness/run_evidence_source.c merges them: dkb's files and nodes above the
    backend boundary (cmd/run.c, the runner, the admission of every backend), then the plugin manifest's
    files (root, record_sha256, included when a file defines no chain symbol) and nodes, its roots hung under
    the runner's stages."""
    files = list(dkb_files)
    for f in manifest["files"]:
        syms = [{"name": s["symbol"], "role": s["kind"], **({"lines": s["span"]} if "span" in s else {})}
                for s in manifest["symbols"] if s["path"] == f["path"]]
        e = {"path": f["path"], "sha256": f["sha256"], "symbols": syms}
        if not syms:
            e["included"] = True
        if f["root"] != "repo":
            e["root"] = f["root"]
        if "record_sha256" in f:
            e["record_sha256"] = f["record_sha256"]
        files.append(e)
    path_of = {s["name"]: f["path"] for f in dkb_files for s in f["symbols"]}
    nodes = [{"id": sym, "layer": layer, "path": path_of[sym], "symbol": sym} for sym, layer in DKB_RUNNER_NODES]
    for n in manifest["chain"]["nodes"]:
        nodes.append(dict({"id": n["symbol"], "layer": n["layer"], "path": n["path"], "symbol": n["symbol"]},
                          **({"root": n["root"]} if "root" in n else {})))
    edges = [list(e) for e in DKB_RUNNER_EDGES] + [[e["from"], e["to"]] for e in manifest["chain"]["edges"]]
    targets = {e["to"] for e in manifest["chain"]["edges"]}
    edges += [[BRIDGES[n["layer"]], n["symbol"]] for n in manifest["chain"]["nodes"]
              if n["symbol"] not in targets and n["layer"] in BRIDGES]
    return files, {"nodes": nodes, "edges": edges, "required_layers": ["cmd", "plan", "admission", "launch", "producer", "combine"]}


# the conversion dkb records for a backend whose conventions are not its own (harness/run_evidence.c)
CONVERSION_RULE = ("a base-2 LSE is multiplied by ln 2; where the oracle's row has no visible key, the backend's empty-row value is "
                   "replaced by O = 0, LSE = -inf (0x02C); the raw outputs are what the repeat check compares")


def plugin_bundle(g, base, base_files, arts):
    """The base call forced to a plugin's backend: FlashInfer-like, a split-KV producer and a merge of the
    chunks of every request that split, both declared by function name, the merge not required (it runs
    only when a request splits: a split plan's merge is required by its role, 0x0AC), an LSE in base 2 that
    dkb converts before comparing."""
    dkb_files, manifest = write_plugin_tree(g.out)
    b = copy.deepcopy(base)
    b["meta"]["argv"] = ["dkb", "run", FIXTURE_PATH, "--plugin", "build/plugins/libdkb_synth.so", "--backend", PLUGIN_BACKEND,
                         "-o", "out/"]
    # cmd/run.c and the runner: dkb's files above the backend boundary
    files, chain = merged_source([base_files[0]] + dkb_files, manifest)
    b["source"] = {"commit": COMMIT, "dirty": False, "files": files,
                   "plugin": {"commit": manifest["commit"], "dirty": manifest["dirty"], "upstream": manifest["upstream"]}}
    b["chain"] = chain
    # level 3: the plugin's library and the closed-source one it calls are mapped (the loader map's roles
    # are its own; the bundle's objects name the plugin's)
    loader_map = g.artifact("loader-map", {"schema": "dkb.loader-map/v1", "objects": [
        mapped(*o) for o in OBJECTS + [(PLUGIN_LIB[0], "other", PLUGIN_LIB[1]), (BINARY_LIB[0], "other", BINARY_LIB[1])] +
        OTHER_OBJECTS]})
    plugin_manifest = g.artifact("plugin-manifest", manifest)
    plugin_report = g.artifact("plugin-build-report", {
        "schema": "dkb.build-report/v1", "dkb_version": "plugin", "commit": COMMIT, "dirty": False, "build_host": "synthetic",
        "compilers": {"plugin": {"command": "nvcc", "path": "/usr/local/cuda-13.0/bin/nvcc",
                                 "version": "Cuda compilation tools, release 13.0, V13.0.88"}},
        "flags": "-O3 -std=c++17 -shared -Xcompiler -fPIC", "upstream": UPSTREAM})
    lib = obj(PLUGIN_LIB[0], "plugin", PLUGIN_LIB[1])
    ld = b["loaded"]
    ld["loader_map"] = ref(loader_map)
    ld["objects"].append(lib)
    del ld["kernel_binaries"]  # dkb reads the binary versions of its own kernels only
    ld["plugin"] = {"path": lib["path"], "sha256": lib["sha256"], "bytes": lib["bytes"], "name": "synth", "version": "1.0.0",
                    "abi_version": 1, "source_manifest": ref(plugin_manifest), "build_report": ref(plugin_report)}
    # level 4: forced to the plugin's backend; its plan document is its own
    d = b["dispatch"]
    d["call_key"]["backend_request"] = d["request"] = d["selected"] = PLUGIN_BACKEND
    d["candidates"].append({"backend": PLUGIN_BACKEND, "priority": 70, "in_domain": True, "eligible": True, "reasons": []})
    chunks = [1, 2, 4]  # 256-token chunks of the 9, 257 and 1000 keys
    pages = sum(-(-n // 16) for n in d["call_key"]["S_k_per_request"])
    workspaces = [{"name": "synth_int_workspace", "bytes": 8192, "kind": "persistent"},
                  {"name": "synth_float_workspace", "bytes": sum(chunks) * d["call_key"]["H_q"] * (d["call_key"]["d_v"] + 1) * 4,
                   "kind": "scratch"},
                  {"name": "synth_page_table", "bytes": (pages + 4) * 4, "kind": "persistent"}]
    d["backend"] = {"name": PLUGIN_BACKEND, "version": "1.0.0", "source": "plugin", "work_items": sum(chunks),
                    "workspaces": workspaces,
                    "kernels": [{"name": "synth::SplitDecodeKernel", "role": "producer", "match": "function", "required": True},
                                {"name": "synth::MergeStatesKernel", "role": "combine", "match": "function", "required": False}],
                    "conventions": {"lse_base": "base2", "empty_row": "zero_neginf"}, "launch_flags": [],
                    "plugin": {"name": "synth", "version": "1.0.0", "sha256": lib["sha256"], "abi_version": 1}}
    d["required_kernels"] = required_of(d["backend"])
    d["split_count"] = max(chunks)
    d["workspace_bytes"] = launched_bytes(workspaces)
    d["plan"] = {"backend": PLUGIN_BACKEND, "synth_attention": UPSTREAM["version"], "split_kv": True, "work_items": sum(chunks),
                 "kv_chunk_size_tokens": 256, "chunks_per_request": chunks, "grid": [sum(chunks), 8, 1]}
    d["plan_key"].update(backend=PLUGIN_BACKEND, split_count=d["split_count"], workspace_bytes=d["workspace_bytes"])
    diag = g.artifact("admission", admission_of(b))
    d["diagnostic"] = ref(diag)
    # levels 5 and 6: the plugin's kernels ran; its base-2 LSE was converted before the comparison
    b["execution"]["kernels"] = copy.deepcopy(P_KERNELS)
    rows = d["call_key"]["B"] * d["call_key"]["S_q"] * d["call_key"]["H_q"]
    b["measurement"]["correctness"]["conversion"] = {"lse_base": "base2", "empty_row": "zero_neginf", "lse_rows_rescaled": rows,
                                                     "empty_rows_replaced": 0, "rule": CONVERSION_RULE}
    # the artifacts in the order dkb writes them: admission, trace, then the loaded closure
    b["artifacts"] = [diag, arts["trace"], loader_map, arts["build_report"], plugin_manifest, plugin_report]
    refresh(b, g)
    return b


def plugin_requirements(g, base, pbase):
    """One fixture per reason id of a backend's bundle: the plugin's level-6 bundle (or dkb's) with exactly
    that requirement broken."""
    R = []  # (name, bundle it mutates, mutate, computed, findings, description)

    def req(name, computed, findings, description, of=pbase):
        def deco(f):
            R.append((name, of, f, computed, findings + over(computed), description))
            return f
        return deco

    up = next(i for i, f in enumerate(pbase["source"]["files"]) if f["path"] == UP_HEADER)
    adapter = next(i for i, f in enumerate(pbase["source"]["files"]) if f["path"] == ADAPTER[0])

    # level 1
    @req("source_file_record_mismatch", 0, [(1, "source_file_record_mismatch", f"/source/files/{up}/record_sha256")],
         "the upstream header is not the one its package's RECORD lists")
    def _(b):
        b["source"]["files"][up]["record_sha256"] = sha256(b"the RECORD entry of another synth-attention release")

    # level 3
    @req("source_binary_not_loaded", 2, [(3, "source_binary_not_loaded", f"/source/files/{len(pbase['source']['files'])}")],
         "a binary node (the plugin's planner calls a closed-source library, as cuDNN's engines): the source lists "
         "another build of libsynth_rt.so.2 than the one the loader map holds")
    def _(b):
        b["source"]["files"].append({"path": BINARY_NODE["path"], "root": "binary", "sha256": sha256(b"another build of libsynth_rt.so.2"),
                                     "symbols": [{"name": BINARY_NODE["symbol"], "role": "binary"}]})
        b["chain"]["nodes"].append(dict(BINARY_NODE))
        b["chain"]["edges"].append(["synth_plan", BINARY_NODE["id"]])

    @req("plugin_missing", 2, [(3, "plugin_missing", "/loaded/plugin")], "a plugin's backend ran, and /loaded/plugin is absent")
    def _(b):
        del b["loaded"]["plugin"]

    @req("plugin_not_in_loader_map", 2, [(3, "plugin_not_in_loader_map", "/loaded/plugin")],
         "the plugin record names the library by a path the loader did not map (a link, not its real path)")
    def _(b):
        b["loaded"]["plugin"]["path"] = "/opt/dkb/plugins/libdkb_synth.so"

    @req("plugin_manifest_mismatch", 2, [(3, "plugin_manifest_mismatch", "/source/plugin/upstream")],
         "the bundle names upstream version 0.4.3, the plugin's manifest 0.4.2")
    def _(b):
        b["source"]["plugin"]["upstream"]["version"] = "0.4.3"

    @req("plugin_manifest_mismatch.file", 2, [(3, "plugin_manifest_mismatch", "/source/files")],
         "the bundle's adapter.cu is not the one the plugin's manifest hashed when it was built")
    def _(b):
        b["source"]["files"][adapter]["sha256"] = sha256(b"adapter.cu edited after the plugin was built")

    other_report = g.artifact("plugin-build-report-other", {
        "schema": "dkb.build-report/v1", "dkb_version": "plugin", "commit": COMMIT, "dirty": False,
        "upstream": dict(UPSTREAM, version="0.4.1", archive="synth_attention-0.4.1-py3-none-any.whl")})

    @req("plugin_build_report_mismatch", 2, [(3, "plugin_build_report_mismatch", "/loaded/plugin/build_report")],
         "the plugin was built against upstream 0.4.1, its manifest names 0.4.2")
    def _(b):
        replace_artifact(b, b["loaded"]["plugin"]["build_report"]["artifact"], other_report)
        b["loaded"]["plugin"]["build_report"] = ref(other_report)

    # level 4
    @req("backend_missing", 3, [(4, "backend_missing", "/dispatch/backend")],
         "a selected backend the bundle has no record of: no source, workspaces, kernels or conventions")
    def _(b):
        del b["dispatch"]["backend"]

    @req("backend_contradicts_dispatch", 3, [(4, "backend_contradicts_dispatch", "/dispatch/backend/name")],
         "the backend record is another backend's than the selected one")
    def _(b):
        b["dispatch"]["backend"]["name"] = "synth_split_kv_tc"

    @req("backend_contradicts_dispatch.workspaces", 3, [(4, "backend_contradicts_dispatch", "/dispatch/workspace_bytes")],
         "the backend's scratch workspace is 4096 bytes larger than workspace_bytes")
    def _(b):
        b["dispatch"]["backend"]["workspaces"][1]["bytes"] += 4096

    @req("backend_contradicts_dispatch.required_kernels", 3, [(4, "backend_contradicts_dispatch", "/dispatch/required_kernels")],
         "the dispatch record requires another kernel than the one the backend declares required")
    def _(b):
        b["dispatch"]["required_kernels"] = ["synth::SplitDecodeKernelV2"]

    @req("backend_contradicts_dispatch.plugin", 3, [(4, "backend_contradicts_dispatch", "/dispatch/backend/plugin/sha256")],
         "the backend's plugin record names another library than the loaded one")
    def _(b):
        b["dispatch"]["backend"]["plugin"]["sha256"] = sha256(b"another build of libdkb_synth.so")

    @req("backend_contradicts_dispatch.source", 3, [(4, "backend_contradicts_dispatch", "/dispatch/backend/source")],
         "a backend that says it is dkb's own (builtin) and carries a plugin record")
    def _(b):
        b["dispatch"]["backend"]["source"] = "builtin"

    # level 5
    @req("kernel_not_declared", 4, [(5, "kernel_not_declared", "/execution/kernels/2")],
         "a third kernel ran in the call's range, one the backend's plan does not declare")
    def _(b):
        b["execution"]["kernels"].append({"symbol": "_ZN5synth14ZeroFillKernelEPfi", "demangled": "void synth::ZeroFillKernel(float*, int)",
                                          "launches": 1, "grid": [64, 1, 1], "block": [256, 1, 1], "registers": 16, "shared_bytes": 0})
        retrace(g, b)

    @req("required_kernel_not_observed.function", 4, [(5, "required_kernel_not_observed", "/dispatch/backend/kernels/2")],
         "the plan declares and requires a third kernel by function name, synth::FinalizeKernel, which did not run")
    def _(b):
        d = b["dispatch"]
        d["backend"]["kernels"].append({"name": "synth::FinalizeKernel", "role": "other", "match": "function", "required": True})
        d["required_kernels"] = required_of(d["backend"])

    @req("combine_kernel_not_observed.plugin", 4, NO_MERGE,
         "a split plugin plan (4 chunks) whose declared merge, synth::MergeStatesKernel, did not run")
    def _(b):
        b["execution"]["kernels"].pop(1)
        retrace(g, b)

    # level 6
    @req("conversion_missing", 5, [(6, "conversion_missing", "/measurement/correctness/conversion")],
         "a base-2 LSE compared with no record of its conversion")
    def _(b):
        del b["measurement"]["correctness"]["conversion"]

    @req("conversion_contradicts_conventions", 5, [(6, "conversion_contradicts_conventions", "/measurement/correctness/conversion")],
         "the recorded conversion is from a natural LSE, the backend declares base 2")
    def _(b):
        b["measurement"]["correctness"]["conversion"]["lse_base"] = "natural"

    @req("conversion_contradicts_conventions.builtin", 5,
         [(6, "conversion_contradicts_conventions", "/measurement/correctness/conversion")],
         "dkb's own backend (natural LSE, zero / -inf empty rows) with a conversion recorded: nothing to convert", of=base)
    def _(b):
        b["measurement"]["correctness"]["conversion"] = {"lse_base": "natural", "empty_row": "zero_neginf", "lse_rows_rescaled": 0,
                                                         "empty_rows_replaced": 0, "rule": CONVERSION_RULE}

    for name, of, mutate, computed, findings, description in R:
        b = copy.deepcopy(of)
        mutate(b)
        g.write(f"requirement.{name}.bundle.json", b, computed, findings, description)
