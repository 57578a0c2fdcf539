#!/usr/bin/python3
"""Does `dkb validate` call exactly the documents the bundle schema rejects "not a bundle"?

usage: schema_agreement.py BUNDLE TMPDIR [STEP]

Writes mutants of BUNDLE into TMPDIR (every value replaced by values of other types, deleted, or given
an unknown key; every STEP-th mutant is kept), runs `build/dkb validate --json` on all of them at once
and compares each verdict (malformed = exit-3 row) with python3-jsonschema's. Exit 0 when they agree
on every mutant; otherwise prints the disagreements."""
import copy
import json
import os
import subprocess
import sys

from jsonschema import Draft202012Validator

REPLACEMENTS = ["s", 5, None, [], {}, True, -3, 1.5, [1, 2], {"a": 1}, "", "DELETE", "EXTRA_KEY"]


def paths(x, p=()):
    yield p
    if isinstance(x, dict):
        for k, v in x.items():
            yield from paths(v, p + (k,))
    elif isinstance(x, list):
        for i, v in enumerate(x[:2]):
            yield from paths(v, p + (i,))


def mutants(base):
    for p in paths(base):
        if not p:
            continue
        for r in REPLACEMENTS:
            b = copy.deepcopy(base)
            node = b
            for k in p[:-1]:
                node = node[k]
            if r == "DELETE":
                if isinstance(node, list):
                    continue
                del node[p[-1]]
            elif r == "EXTRA_KEY":
                if not isinstance(node[p[-1]], dict):
                    continue
                node[p[-1]]["zz_unknown"] = 1
            else:
                node[p[-1]] = r
            yield "/" + "/".join(map(str, p)), r, b


def main():
    bundle, tmp = sys.argv[1], sys.argv[2]
    step = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    base = json.load(open(bundle))
    validator = Draft202012Validator(json.load(open("schemas/bundle.schema.json")))
    os.makedirs(tmp, exist_ok=True)
    files, cases = [], {}
    for i, (ptr, r, doc) in enumerate(mutants(base)):
        if i % step:
            continue
        f = os.path.join(tmp, f"m{i:05d}.json")
        with open(f, "w") as out:
            json.dump(doc, out)
        files.append(f)
        cases[f] = (ptr, r, any(True for _ in validator.iter_errors(doc)))
    run = subprocess.run(["build/dkb", "validate", "--json"] + files, capture_output=True, text=True)
    rows = json.loads(run.stdout)["bundles"]
    disagree = 0
    for row in rows:
        ptr, r, schema_rejects = cases[row["file"]]
        if schema_rejects != (row["status"] == "malformed"):
            disagree += 1
            print(f"{ptr} := {r!r}: dkb {row['status']} {row.get('error', '')}; schema {'rejects' if schema_rejects else 'accepts'}")
    print(f"{len(rows)} mutants of {bundle}: {disagree} disagreements")
    return 1 if disagree or len(rows) != len(files) else 0


if __name__ == "__main__":
    sys.exit(main())
