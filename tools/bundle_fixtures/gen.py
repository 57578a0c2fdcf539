"""The fixture writer, dkb's canonical digests, and the stand-in source tree the level-1 entries hash."""
import hashlib
import json
import math
import os
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repository
DKB = os.path.join(ROOT, "build", "dkb")
SOURCE_ROOT_OPT = ["--source-root", "fixtures/bundles/source-tree"]

COMMIT = hashlib.sha1(b"dkb synthetic bundle fixtures").hexdigest()
OTHER_COMMIT = hashlib.sha1(b"another commit").hexdigest()


def dkb_digest(obj, canonical=False):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(obj, f)
        name = f.name
    try:
        args = [DKB, "digest", name] + (["--canonical"] if canonical else [])
        out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    finally:
        os.unlink(name)
    return out if canonical else out.strip()


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def stats(xs):
    """Independent implementation of oracles/stats.h (numpy 'linear' quantiles, n - 1 stdev)."""
    s = sorted(xs)
    n = len(s)

    def q(p):
        pos = (n - 1) * p
        lo = math.floor(pos)
        hi = min(lo + 1, n - 1)
        return s[lo] + (s[hi] - s[lo]) * (pos - lo)

    total = 0.0
    for x in s:
        total += x
    mean = total / n
    ss = 0.0
    for x in s:
        ss += (x - mean) * (x - mean)
    stdev = math.sqrt(ss / (n - 1)) if n > 1 else 0.0
    return {"count": n, "min": s[0], "median": q(0.5), "p95": q(0.95), "max": s[-1], "mean": mean,
            "stdev": stdev, "rel_stdev": stdev / mean if mean else 0.0}


# --------------------------------------------------------------------------------------------------
# The stand-in source tree: (path, [(symbol, role, text)]) with a header comment.

HEADER = "/* {name} - synthetic stand-in used by fixtures/bundles (schema-test bundles); not dkb's real source. */\n"
SOURCES = [
    ("cmd/run.c", [("cmd_run", "entry: loads the fixture, plans, admits, launches, grades the bundle",
                    "int cmd_run(int argc, char **argv) {\n  struct plan p;\n  plan_build(&p);\n"
                    "  registry_select(&p);\n  return decode_launch(&p);\n}\n")]),
    ("harness/plan.c", [("plan_build", "split bounds per request and workspace bytes of the (m, l, u) ABI",
                         "int plan_build(struct plan *p) {\n  p->splits = 4;\n  p->workspace_bytes = 200064;\n"
                         "  return 0;\n}\n")]),
    ("harness/registry.c", [("registry_select", "admission of every backend, forced fails closed, auto = first eligible",
                             "int registry_select(struct plan *p) {\n  for (int b = 0; b < NBACKENDS; b++)\n"
                             "    admit(&backends[b], p);\n  return first_eligible(p);\n}\n")]),
    ("harness/launch.c", [("decode_launch", "launches the producer grid, then the combine grid when splits > 1",
                           "int decode_launch(const struct plan *p) {\n  launch_decode_split_kv_producer(p);\n"
                           "  if (p->splits > 1) launch_decode_split_kv_combine(p);\n  return 0;\n}\n")]),
    ("kernels/decode_split_kv.cu", [
        ("decode_split_kv_producer", "split-KV producer: one (m, l, u) partial state per split",
         "template <int D>\n__global__ void decode_split_kv_producer(const __half *q, const __half *k, const __half *v,\n"
         "                                         float *m, float *l, float *u, int n) {\n  /* partial softmax */\n}\n"),
        ("decode_split_kv_combine", "exact LSE merge of the split states into O",
         "template <int D>\n__global__ void decode_split_kv_combine(const float *m, const float *lu, __half *o, int n) {\n"
         "  /* merge */\n}\n"),
        ("decode_split_kv_fused", "the producer whose last CTA per (request, K/V head) merges the split states",
         "template <int D>\n__global__ void decode_split_kv_fused(const __half *q, const __half *k, const __half *v,\n"
         "                                      float *u, int *arrivals, __half *o, int n) {\n"
         "  /* partial softmax; the last CTA to arrive merges */\n}\n")]),
]


FIXTURE_PATH = "fixtures/decode/gqa-paged.json"
FIXTURE_TEXT = json.dumps({"schema": "dkb.decode/v1", "name": "gqa-paged",
                           "description": "synthetic stand-in used by fixtures/bundles; not one of dkb's fixtures",
                           "phase": "decode", "requests": [{"kv_len": 9}, {"kv_len": 257}, {"kv_len": 1000}], "q_len": 1,
                           "heads": {"H_q": 32, "H_kv": 8, "d_qk": 128, "d_v": 128}, "dtype": "fp16",
                           "cache": {"layout": "paged_nhd", "page_size": 16}, "mask": {"kind": "causal"},
                           "split": {"policy": "fixed", "splits": 4}, "seed": 1,
                           "tolerance": {"atol": 0.002, "rtol": 0.002}}, indent=2) + "\n"


def write_stand_in(out, path, symbols, under="", body=""):
    """Writes one stand-in file (its symbols' bodies, or `body` for a file that defines none) under
    source-tree/`under`; returns its /source/files entry and its size."""
    text = HEADER.format(name=os.path.basename(path)) + body
    syms = []
    for name, role, code in symbols:
        text += "\n"
        first = text.count("\n") + 1
        text += code
        last = text.count("\n")
        syms.append({"name": name, "role": role, "lines": [first, last]})
    full = os.path.join(out, "source-tree", under, path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w") as f:
        f.write(text)
    return {"path": path, "sha256": sha256(text.encode()), "symbols": syms}, len(text.encode())


def write_source_tree(out):
    full = os.path.join(out, "source-tree", FIXTURE_PATH)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w") as f:
        f.write(FIXTURE_TEXT)
    return [write_stand_in(out, path, symbols)[0] for path, symbols in SOURCES]


# --------------------------------------------------------------------------------------------------
# The writer: content-addressed artifacts, the bundles and the manifest.

class Gen:
    def __init__(self, out):
        self.out = out
        self.manifest = []

    def artifact_bytes(self, stem, data, ext="json"):
        """Writes bytes as a content-addressed artifact; returns its /artifacts entry."""
        name = f"{stem}.{sha256(data)[:16]}.{ext}"
        with open(os.path.join(self.out, name), "wb") as f:
            f.write(data)
        return {"name": name, "sha256": sha256(data), "bytes": len(data)}

    def artifact(self, stem, doc):
        return self.artifact_bytes(stem, dkb_digest(doc, canonical=True).encode())

    def write(self, name, bundle, computed, findings, description, article="", options=None):
        path = os.path.join(self.out, name)
        with open(path, "w") as f:
            f.write(json.dumps(bundle, indent=2, sort_keys=True) + "\n")
        self.manifest.append({
            "file": name, "description": description, "article": article, "options": options or [],
            "computed_level": computed, "claimed_level": bundle["claimed_level"],
            "findings": [{"level": lv, "reason": r, "pointer": p} for lv, r, p in findings]})

    def write_malformed(self, name, text, error, description):
        path = os.path.join(self.out, "malformed", name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
        self.manifest.append({"file": "malformed/" + name, "description": description, "malformed": error})
