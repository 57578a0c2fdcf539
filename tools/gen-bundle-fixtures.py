#!/usr/bin/python3
"""Generates fixtures/bundles: synthetic evidence bundles (schema dkb.bundle/v1) that test the ladder.

usage: tools/gen-bundle-fixtures.py [OUT]      (default fixtures/bundles; needs build/dkb)

Every canonical digest (call key, plan key) and every JSON artifact's bytes come from dkb's own canonical
writer (`build/dkb digest`, `build/dkb digest --canonical`); file hashes are SHA-256 of those bytes.
The expectations in manifest.json are written here from what each fixture is built to break (the
requirement it removes or contradicts), not read back from the validator; tests/test_validate.c runs
every fixture through `dkb validate` and the independent schema validator and compares.

Fixtures:
  synthetic.levelN.bundle.json    complete, honest bundles of levels 2-6 ("synthetic": true) of dkb's own
                                  backend; synthetic.level6.plugin.bundle.json of a plugin's backend
  promotion.NAME.bundle.json      the invalid promotions of article 0x0BI (and 0x0AI/0x0AC), each
                                  claiming a level it cannot prove
  requirement.REASON[.k].bundle.json   one per reason id of evidence/ladder.c: a level-6 claim with
                                  exactly that requirement broken (the plugin's bundle for a backend's)
  malformed/NAME.json             documents that are not bundles (dkb validate exits 3)
  source-tree/                    the stand-in sources the level-1 entries hash (--source-root)
The sources and hashes of the loaded objects are synthetic stand-ins, not dkb's real code or binaries.
The fixtures are built by tools/bundle_fixtures/, one module per kind (requirements: one per level group)."""
import copy
import json
import os
import shutil
import sys

sys.dont_write_bytecode = True  # tests run this from the source tree; leave no __pycache__ in it
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # tools/, for tools/bundle_fixtures
from bundle_fixtures.gen import Gen, ROOT, write_source_tree
from bundle_fixtures.base import base_bundle, declare_nondeterministic
from bundle_fixtures.levels import promotions, synthetic_levels
from bundle_fixtures.malformed import malformed
from bundle_fixtures.plugin import plugin_bundle, plugin_requirements
from bundle_fixtures.requirements import requirements


def main():
    out = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "fixtures", "bundles"))
    if os.path.exists(out):
        if not os.path.exists(os.path.join(out, "manifest.json")):
            sys.exit(f"{out}: exists and has no manifest.json; refusing to replace it")
        shutil.rmtree(out)
    os.makedirs(out)
    g = Gen(out)
    files = write_source_tree(out)
    base, arts = base_bundle(g, files)
    synthetic_levels(g, base)
    promotions(g, base)
    requirements(g, base, arts)
    plugin = plugin_bundle(g, base, files, arts)
    g.write("synthetic.level6.plugin.bundle.json", plugin, 6, [],
            "complete level-6 bundle of a plugin's backend: its library loaded and identified, its upstream files those "
            "of its package's RECORD, its declared kernels matched by function name, its base-2 LSE converted", "0x0BI")
    nondet = copy.deepcopy(plugin)
    declare_nondeterministic(nondet, True)
    g.write("synthetic.level6.plugin-nondeterministic.bundle.json", nondet, 6, [],
            "complete level-6 bundle of a plugin's backend that declares a nondeterministic reduction order: its repeat "
            "call's bits differ from the checked call's, its output is within the oracle's tolerance", "0x07G")
    plugin_requirements(g, base, plugin)
    malformed(g, base)
    with open(os.path.join(out, "manifest.json"), "w") as f:
        f.write(json.dumps({"schema": "dkb.bundle-fixtures/v1", "generator": "tools/gen-bundle-fixtures.py",
                            "source_root": "fixtures/bundles/source-tree", "fixtures": g.manifest},
                           indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
