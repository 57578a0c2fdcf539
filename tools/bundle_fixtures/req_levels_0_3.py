"""Requirement fixtures of levels 0-3: the bundle's own consistency, its artifacts, the source chain, the
loaded objects."""
import copy
import os

from .gen import COMMIT, OTHER_COMMIT, SOURCE_ROOT_OPT, dkb_digest, sha256
from .base import ABOVE, OBJECTS, mapped, ref, trim


def register(req, g, base, arts):
    def L2b(b):
        trim(b, 2)
        b["claimed_level"] = 2
        b["status"] = {"terminal": "cuda_runtime_unavailable", "reasons": [{"id": "cuda_runtime_unavailable", "detail": "no driver"}]}

    # level 0
    @req("claimed_level_exceeds_computed", 2, ABOVE[2] + [(0, "claimed_level_exceeds_computed", "/claimed_level")],
         "an honest level-2 bundle that claims level 3", extra_over=False)
    def _(b):
        L2b(b)
        b["claimed_level"] = 3

    @req("status_contradicts_evidence", 6, [(0, "status_contradicts_evidence", "/status/terminal")],
         "terminal cuda_runtime_unavailable (ceiling 2) with level-6 evidence", extra_over=False)
    def _(b):
        b["status"] = {"terminal": "cuda_runtime_unavailable", "reasons": [{"id": "cuda_runtime_unavailable", "detail": "x"}]}

    @req("status_contradicts_evidence.not-reproduced", 6, [(0, "status_contradicts_evidence", "/status/terminal"),
                                                            (0, "status_contradicts_evidence", "/status/terminal")],
         "terminal output_not_reproduced (ceiling 5) over a repeat check that reproduced the output", extra_over=False)
    def _(b):
        b["status"] = {"terminal": "output_not_reproduced", "reasons": [{"id": "timing_output_not_reproduced", "detail": "x"}]}

    @req("status_reasons_missing", 2, ABOVE[2] + [(0, "status_reasons_missing", "/status/reasons")],
         "a level-2 bundle stopped by cuda_runtime_unavailable without a reason", extra_over=False)
    def _(b):
        L2b(b)
        b["status"]["reasons"] = []

    @req("artifact_duplicate", 6, [(0, "artifact_duplicate", "/artifacts/4/name")], "the trace is listed twice", extra_over=False)
    def _(b):
        b["artifacts"].append(dict(b["artifacts"][3]))

    # artifacts, reported at the referencing level
    @req("artifact_not_listed", 4, [(5, "artifact_not_listed", "/execution/trace/artifact")], "the trace reference names an unlisted file")
    def _(b):
        b["execution"]["trace"]["artifact"] = "trace.unlisted.json"

    @req("artifact_sha256_invalid", 3, [(4, "artifact_sha256_invalid", "/dispatch/diagnostic/sha256")], "the diagnostic reference's sha256 is not hex")
    def _(b):
        b["dispatch"]["diagnostic"]["sha256"] = "abc"

    @req("artifact_sha256_mismatch", 2, [(3, "artifact_sha256_mismatch", "/loaded/build_report/sha256")],
         "the build-report reference's sha256 differs from its /artifacts entry")
    def _(b):
        b["loaded"]["build_report"]["sha256"] = sha256(b"another build report")

    # a listed artifact whose file was altered after it was hashed
    data = dkb_digest({"schema": "dkb.loader-map/v1", "objects": [mapped(*o) for o in OBJECTS]}, canonical=True).encode()
    tampered = g.artifact_bytes("loader-map-tampered", data)
    with open(os.path.join(g.out, tampered["name"]), "ab") as f:
        f.write(b" ")

    @req("artifact_sha256_mismatch.file", 2, [(3, "artifact_sha256_mismatch", "/artifacts/4/sha256")],
         "the loader map file beside the bundle no longer hashes to its entry")
    def _(b):
        entry = dict(tampered, bytes=tampered["bytes"] + 1)
        b["artifacts"].append(entry)
        b["loaded"]["loader_map"] = ref(entry)

    @req("artifact_file_missing", 4, [(5, "artifact_file_missing", "/artifacts/4/name")], "the trace file is not beside the bundle")
    def _(b):
        entry = {"name": "trace.absent.json", "sha256": sha256(b"absent"), "bytes": 6}
        b["artifacts"].append(entry)
        b["execution"]["trace"] = ref(entry)

    @req("artifact_file_missing.unreferenced", 6, [(0, "artifact_file_missing", "/artifacts/4/name")],
         "an extra listed artifact is missing: a bundle-wide inconsistency", extra_over=False)
    def _(b):
        b["artifacts"].append({"name": "notes.absent.txt", "sha256": sha256(b"notes"), "bytes": 5})

    @req("artifact_bytes_mismatch", 4, [(5, "artifact_bytes_mismatch", "/artifacts/3/bytes")], "the trace entry states a wrong size")
    def _(b):
        b["artifacts"][3]["bytes"] += 1

    # a link beside the bundle to the trace file: the right bytes, but not the folder's own
    link = "trace-link." + base["execution"]["trace"]["sha256"][:16] + ".jsonl"
    os.symlink(base["execution"]["trace"]["artifact"], os.path.join(g.out, link))

    @req("artifact_not_a_file", 4, [(5, "artifact_not_a_file", "/artifacts/3/name")],
         "the trace entry names a symbolic link to a file with the right hash")
    def _(b):
        b["artifacts"][3]["name"] = b["execution"]["trace"]["artifact"] = link

    # level 1
    unsourced = [(2, "chain_node_unsourced", f"/chain/nodes/{i}") for i in range(6)]

    @req("source_missing", 0, [(1, "source_missing", "/source")] + unsourced, "no source section")
    def _(b):
        del b["source"]

    @req("source_commit_missing", 0, [(1, "source_commit_missing", "/source/commit")], "no source commit")
    def _(b):
        del b["source"]["commit"]

    @req("source_commit_not_pinned", 0, [(1, "source_commit_not_pinned", "/source/commit")], "a 7-hex short commit floats")
    def _(b):
        b["source"]["commit"] = COMMIT[:7]

    @req("source_commit_not_pinned.null", 0, [(1, "source_commit_not_pinned", "/source/commit")],
         "the null commit of a build outside a checkout")
    def _(b):
        b["source"]["commit"] = b["meta"]["commit"] = "0" * 40

    @req("source_dirty_missing", 0, [(1, "source_dirty_missing", "/source/dirty")], "no dirty flag")
    def _(b):
        del b["source"]["dirty"]

    @req("source_differs_from_meta", 0, [(1, "source_differs_from_meta", "/source/commit")], "the source commit is not the commit dkb was built from")
    def _(b):
        b["source"]["commit"] = OTHER_COMMIT

    @req("source_differs_from_meta.dirty", 0, [(1, "source_differs_from_meta", "/source/dirty")], "the source says dirty, the build was clean")
    def _(b):
        b["source"]["dirty"] = True

    @req("source_files_missing", 0, [(1, "source_files_missing", "/source/files")] + unsourced, "an empty file list")
    def _(b):
        b["source"]["files"] = []

    extra_file = {"path": "kernels/extra.cu", "sha256": sha256(b"extra"),
                  "symbols": [{"name": "extra_kernel", "role": "unused", "lines": [1, 2]}]}

    @req("source_file_path_invalid", 0, [(1, "source_file_path_invalid", "/source/files/5/path")], "a path that leaves the repository")
    def _(b):
        b["source"]["files"].append(dict(extra_file, path="../outside/extra.cu"))

    @req("source_file_duplicate", 0, [(1, "source_file_duplicate", "/source/files/5/path")], "a file listed twice")
    def _(b):
        b["source"]["files"].append(copy.deepcopy(b["source"]["files"][0]))

    @req("source_file_sha256_missing", 0, [(1, "source_file_sha256_missing", "/source/files/0/sha256")], "a file without its hash")
    def _(b):
        del b["source"]["files"][0]["sha256"]

    @req("source_file_sha256_invalid", 0, [(1, "source_file_sha256_invalid", "/source/files/0/sha256")], "a hash that is not hex")
    def _(b):
        b["source"]["files"][0]["sha256"] = "not-a-hash"

    @req("source_symbols_missing", 0, [(1, "source_symbols_missing", "/source/files/5/symbols")], "a file naming no symbol")
    def _(b):
        b["source"]["files"].append({"path": "kernels/extra.cu", "sha256": sha256(b"extra")})

    @req("source_symbol_duplicate", 0, [(1, "source_symbol_duplicate", "/source/files/4/symbols/3/name")], "a symbol listed twice")
    def _(b):
        syms = b["source"]["files"][4]["symbols"]
        syms.append(copy.deepcopy(syms[0]))

    @req("source_symbol_role_missing", 0, [(1, "source_symbol_role_missing", "/source/files/0/symbols/0/role")], "a symbol without role")
    def _(b):
        del b["source"]["files"][0]["symbols"][0]["role"]

    @req("source_symbol_lines_missing", 0, [(1, "source_symbol_lines_missing", "/source/files/0/symbols/0/lines")], "a symbol without span")
    def _(b):
        del b["source"]["files"][0]["symbols"][0]["lines"]

    @req("source_symbol_lines_invalid", 0, [(1, "source_symbol_lines_invalid", "/source/files/0/symbols/0/lines")], "a span with last < first")
    def _(b):
        b["source"]["files"][0]["symbols"][0]["lines"] = [7, 3]

    @req("source_file_unreadable", 0, [(1, "source_file_unreadable", "/source/files/5/path")],
         "--source-root: a listed file that is not in the checkout", SOURCE_ROOT_OPT)
    def _(b):
        b["source"]["files"].append(copy.deepcopy(extra_file))

    @req("source_file_sha256_mismatch", 0, [(1, "source_file_sha256_mismatch", "/source/files/0/sha256")],
         "--source-root: the checkout's file differs from the recorded hash", SOURCE_ROOT_OPT)
    def _(b):
        b["source"]["files"][0]["sha256"] = sha256(b"an older version of cmd/run.c")

    @req("source_symbol_lines_outside_file", 0, [(1, "source_symbol_lines_outside_file", "/source/files/0/symbols/0/lines")],
         "--source-root: a span past the end of the file", SOURCE_ROOT_OPT)
    def _(b):
        b["source"]["files"][0]["symbols"][0]["lines"] = [3, 400]

    @req("source_symbol_not_in_span", 0, [(1, "source_symbol_not_in_span", "/source/files/0/symbols/0/name")],
         "--source-root: the span is the header comment, not the function", SOURCE_ROOT_OPT)
    def _(b):
        b["source"]["files"][0]["symbols"][0]["lines"] = [1, 1]

    # level 2
    @req("chain_missing", 1, [(2, "chain_missing", "/chain")], "no chain")
    def _(b):
        del b["chain"]

    @req("chain_nodes_missing", 1, [(2, "chain_nodes_missing", "/chain/nodes")], "a chain without nodes")
    def _(b):
        b["chain"]["nodes"] = []
        b["chain"]["edges"] = []

    @req("chain_node_duplicate", 1, [(2, "chain_node_duplicate", "/chain/nodes/6/id")], "two nodes share an id")
    def _(b):
        b["chain"]["nodes"].append(copy.deepcopy(b["chain"]["nodes"][0]))

    @req("chain_node_unsourced", 1, [(2, "chain_node_unsourced", "/chain/nodes/1")], "a node whose symbol is not in the source")
    def _(b):
        b["chain"]["nodes"][1]["symbol"] = "plan_build_v2"

    @req("chain_edge_unknown_node", 1, [(2, "chain_edge_unknown_node", "/chain/edges/5")], "an edge to a node that does not exist")
    def _(b):
        b["chain"]["edges"].append(["decode_launch", "decode_split_kv_finalize"])

    @req("chain_cycle", 1, [(2, "chain_cycle", "/chain/edges/5")], "combine calls back into cmd")
    def _(b):
        b["chain"]["edges"].append(["decode_split_kv_combine", "cmd_run"])

    @req("chain_required_layers_weakened", 1, [(2, "chain_required_layers_weakened", "/chain/required_layers")],
         "required_layers drops combine")
    def _(b):
        b["chain"]["required_layers"].remove("combine")

    @req("chain_layer_missing", 1, [(2, "chain_layer_missing", "/chain/nodes")], "no plan-layer node")
    def _(b):
        b["chain"]["nodes"].pop(1)
        b["chain"]["edges"].remove(["cmd_run", "plan_build"])

    @req("chain_node_unreachable", 1, [(2, "chain_node_unreachable", "/chain/nodes/5")], "the combine node has no incoming edge")
    def _(b):
        b["chain"]["edges"].remove(["decode_launch", "decode_split_kv_combine"])

    # level 3
    @req("loaded_missing", 2, [(3, "loaded_missing", "/loaded")], "no loaded section")
    def _(b):
        del b["loaded"]

    @req("loader_map_missing", 2, [(3, "loader_map_missing", "/loaded/loader_map")], "no loader map")
    def _(b):
        del b["loaded"]["loader_map"]

    not_a_map = g.artifact("loader-map-not-a-map", {"schema": "dkb.loader-map/v1", "mapped": 7})

    @req("loader_map_unreadable", 2, [(3, "loader_map_unreadable", "/loaded/loader_map")], "the loader map artifact has no objects list")
    def _(b):
        b["artifacts"].append(not_a_map)
        b["loaded"]["loader_map"] = ref(not_a_map)

    @req("loaded_objects_missing", 2, [(3, "loaded_objects_missing", "/loaded/objects"),
                                       (5, "profiler_library_not_loaded", "/loaded/objects")], "an empty object list")
    def _(b):
        b["loaded"]["objects"] = []

    @req("loaded_object_path_not_absolute", 2, [(3, "loaded_object_path_not_absolute", "/loaded/objects/0/path"),
                                                (3, "loaded_object_not_in_loader_map", "/loaded/objects/0")],
         "a relative path (not a realpath of the mapped file)")
    def _(b):
        b["loaded"]["objects"][0]["path"] = "build/dkb"

    @req("loaded_object_duplicate", 2, [(3, "loaded_object_duplicate", "/loaded/objects/5/path")], "an object listed twice")
    def _(b):
        b["loaded"]["objects"].append(copy.deepcopy(b["loaded"]["objects"][1]))

    @req("loaded_object_sha256_missing", 2, [(3, "loaded_object_sha256_missing", "/loaded/objects/1/sha256")], "libcudart without a hash")
    def _(b):
        del b["loaded"]["objects"][1]["sha256"]

    @req("loaded_object_sha256_invalid", 2, [(3, "loaded_object_sha256_invalid", "/loaded/objects/1/sha256")], "a hash that is not hex")
    def _(b):
        b["loaded"]["objects"][1]["sha256"] = "0xdeadbeef"

    @req("loaded_object_bytes_missing", 2, [(3, "loaded_object_bytes_missing", "/loaded/objects/1/bytes")], "an object without size")
    def _(b):
        del b["loaded"]["objects"][1]["bytes"]

    @req("loaded_object_not_in_loader_map", 2, [(3, "loaded_object_not_in_loader_map", "/loaded/objects/0")],
         "the executable's hash is not the one in the loader map")
    def _(b):
        b["loaded"]["objects"][0]["sha256"] = sha256(b"a rebuilt dkb")

    for role, reason, what in (("dkb", "loaded_executable_missing", "the executable"), ("cudart", "loaded_cudart_missing", "libcudart"),
                               ("cuda", "loaded_driver_missing", "libcuda")):
        @req(reason, 2, [(3, reason, "/loaded/objects")], f"{what} is not among the loaded objects")
        def _(b, role=role):
            b["loaded"]["objects"] = [o for o in b["loaded"]["objects"] if o["role"] != role]

    @req("build_report_missing", 2, [(3, "build_report_missing", "/loaded/build_report")], "no build report")
    def _(b):
        del b["loaded"]["build_report"]

    not_json = g.artifact_bytes("build-report-text", b"built with gcc 12 and nvcc 13.0\n", "txt")

    @req("build_report_unreadable", 2, [(3, "build_report_unreadable", "/loaded/build_report")], "a build report that is free text")
    def _(b):
        b["artifacts"].append(not_json)
        b["loaded"]["build_report"] = ref(not_json)

    other_build = g.artifact("build-report-other", {"schema": "dkb.build-report/v1", "commit": OTHER_COMMIT, "dirty": False})

    @req("build_report_commit_mismatch", 2, [(3, "build_report_commit_mismatch", "/loaded/build_report")],
         "the binary was built from another commit than the source")
    def _(b):
        b["artifacts"].append(other_build)
        b["loaded"]["build_report"] = ref(other_build)

    @req("device_missing", 2, [(3, "device_missing", "/loaded/device")], "no device")
    def _(b):
        del b["loaded"]["device"]

    @req("device_field_missing", 2, [(3, "device_field_missing", "/loaded/device/pci_bus_id")], "no PCI bus id")
    def _(b):
        del b["loaded"]["device"]["pci_bus_id"]

    @req("device_field_invalid", 2, [(3, "device_field_invalid", "/loaded/device/compute_capability")], "compute capability 'sm_90'")
    def _(b):
        b["loaded"]["device"]["compute_capability"] = "sm_90"

    @req("device_contradicts_admission", 2, [(3, "device_contradicts_admission", "/loaded/device/compute_capability")],
         "the bundle names a compute capability 8.0 device, the admission was computed for 9.0")
    def _(b):
        b["loaded"]["device"].update(name="NVIDIA A100-SXM4-80GB", compute_capability="8.0", sm_count=108)
