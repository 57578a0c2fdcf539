"""Documents that are not bundles (dkb validate exits 3)."""
import copy
import json


def malformed(g, base):
    def text(b):
        return json.dumps(b, indent=2, sort_keys=True) + "\n"

    def case(name, mutate, error, description):
        b = copy.deepcopy(base)
        mutate(b)
        g.write_malformed(name, text(b), error, description)

    g.write_malformed("not-json.json", '{"schema": "dkb.bundle/v1",\n  "meta": }\n', "2:11: unexpected token near '}'", "not JSON")
    case("schema-v2.json", lambda b: b.update(schema="dkb.bundle/v2"), "/schema: must be 'dkb.bundle/v1' (got 'dkb.bundle/v2')", "another schema id")
    case("oracle-report.json", lambda b: b.clear() or b.update({"schema": "dkb.oracle-report/v1", "fixtures": []}),
         "/schema: must be 'dkb.bundle/v1' (got 'dkb.oracle-report/v1')", "another dkb document")
    case("unknown-key.json", lambda b: b.update(colour="blue"), "/colour: unknown key", "an unknown top-level key")
    case("claimed-level-string.json", lambda b: b.update(claimed_level="6"), "/claimed_level: must be an integer (got string)", "a wrong type")
    case("claimed-level-7.json", lambda b: b.update(claimed_level=7), "/claimed_level: must be <= 6 (got 7)", "a level the ladder does not have")
    case("sample-string.json", lambda b: b["measurement"]["timing"]["samples_us"].__setitem__(3, "12.5"),
         "/measurement/timing/samples_us/3: must be a number (got string)", "a raw sample written as text")
    case("meta-commit.json", lambda b: b["meta"].update(commit="main"),
         "/meta/commit: must be 40 lower-case hex digits (got 'main')", "meta is written by dkb: its commit is always 40 hex")
    case("artifact-name.json", lambda b: b["artifacts"][0].update(name="../loader-map.json"),
         "/artifacts/0/name: must be a plain file name of letters, digits, '.', '_' and '-' not starting with '.' (got '../loader-map.json')",
         "an artifact outside the bundle folder")
    case("device-unknown-key.json", lambda b: b["loaded"]["device"].update(clock_mhz=1980), "/loaded/device/clock_mhz: unknown key",
         "an unknown key inside a section")
    case("object-role.json", lambda b: b["loaded"]["objects"][2].update(role="driver"),
         "/loaded/objects/2/role: must be one of: dkb, cudart, cupti, cuda, nvperf, nvml, plugin, other (got 'driver')", "an unknown role")
    case("terminal.json", lambda b: b["status"].update(terminal="finished"),
         "/status/terminal: must be one of: complete, cuda_runtime_unavailable, no_gpu, profiler_unavailable, backend_rejected, "
         "no_eligible_backend, launch_failed, correctness_failed, internal_error, timing_unavailable, output_not_reproduced (got 'finished')", "an unknown terminal state")
    case("missing-meta.json", lambda b: b.pop("meta"), "/: missing required key 'meta'", "no meta")
    case("ledger-list.json", lambda b: b["ledgers"].update(unique_kv_bytes=[1, 2]),
         "/ledgers/unique_kv_bytes: must be an integer or a string (got array)", "a ledger that is not a byte count")
    case("plan-string.json", lambda b: b["dispatch"].update(plan="fixed"), "/dispatch/plan: must be an object (got string)",
         "a plan record that is not a record")
    case("lse-atol-string.json", lambda b: b["measurement"]["correctness"].update(lse_atol="2e-3"),
         "/measurement/correctness/lse_atol: must be a number (got string)", "a tolerance written as text")
