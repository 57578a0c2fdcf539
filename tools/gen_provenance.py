#!/usr/bin/python3
"""Generates dkb's build-time evidence as C sources (run by the Makefile on every build; a file is
rewritten only when its text changes, so nothing recompiles needlessly).

  gen_provenance.py build-report --out F.c --cc=CC --nvcc=NVCC --cflags=.. --nvflags=.. --gencode=.. --ldlibs=..
      dkb.build-report/v1: compilers and versions, flags, gencode list, commit, dirty flag, build host
      (article 0x0BD: the build configuration is its own content-addressed artifact).
  gen_provenance.py source-manifest --spec tools/chain.json --out F.c [--json F.json]
      dkb.source-manifest/v1: path + SHA-256 of each source file the chain spec lists, the line span
      of each chain symbol, the commit and dirty flag, and the call-chain graph (levels 1 and 2,
      article 0x0AH). A missing file or symbol fails the build.
  gen_provenance.py plugin --spec plugins/P/chain.json --deps F.d... --compiler=CC --flags=.. --out F.c
          [--upstream-root DIR --record RECORD --package NAME --package-version V --archive F.whl
           --archive-sha256 HEX] [--binary-dir DIR] [--prefix dkb_plugin]
      Both documents of a backend plugin (include/dkb/backend.h): its source manifest (the chain spec's
      repository files, every upstream file the compiler read (the .d files) with its SHA-256 checked
      against the wheel's RECORD, the chain's symbol spans in either) and its build report (compiler,
      flags, the upstream package, version and archive SHA-256). A chain node with "root": "upstream"
      names a path under the upstream root.
      A chain node with "root": "binary" names a closed-source library by its file name (no folder),
      looked up in --binary-dir DIR: the layer whose source is not shipped (cuDNN's engines). Its file
      entry carries the library's SHA-256 and size as found at build time, "root": "binary" and
      "found_at" (the real path hashed); its symbols entry has "kind": "binary" and no span, and its
      symbol is not looked for in the file: the node proves which library the build saw, not a line of
      source (dkb checks its identity against the loader map at level 3).

A chain symbol's line span is where tools/source_scan.py finds its one definition.

Each C file defines one `const char NAME[]` holding the document's canonical JSON (keys sorted, no
spaces: the bytes dkb hashes). Errors: "gen_provenance: error: FILE: /json/pointer: reason", exit 1."""
import argparse
import hashlib
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys

sys.dont_write_bytecode = True  # run on every build from the source tree; leave no __pycache__ in it
from source_scan import defined_kernels, find_definitions  # noqa: E402  (tools/, the script's folder, is on sys.path)

ZERO_COMMIT = "0" * 40


class GenError(Exception):
    pass


def canonical(doc):
    return json.dumps(doc, sort_keys=True, separators=(",", ":"))


def git(*args):
    """stdout of a git command run in the current folder, or None when git or the repo is absent."""
    try:
        r = subprocess.run(["git", *args], capture_output=True, text=True, check=False)
    except OSError:
        return None
    return r.stdout if r.returncode == 0 else None


def repo_state(paths=()):
    """(commit, dirty, {path: matches_commit}). Dirty when a tracked file differs from HEAD or a
    listed file is not the blob committed at HEAD (e.g. untracked): the commit then does not pin
    the bytes that were compiled. Without git: zero commit, dirty."""
    head = git("rev-parse", "--verify", "-q", "HEAD")
    if head is None:
        return ZERO_COMMIT, True, {p: False for p in paths}
    commit = head.strip()
    dirty = bool((git("status", "--porcelain", "--untracked-files=no") or "").strip())
    matches = {}
    if paths:
        committed = {}
        for line in (git("ls-tree", "HEAD", "--", *paths) or "").splitlines():
            meta, path = line.split("\t", 1)
            committed[path] = meta.split()[2]
        worktree = (git("hash-object", "--", *paths) or "").split()
        for p, blob in zip(paths, worktree):
            matches[p] = committed.get(p) == blob
        dirty = dirty or not all(matches.get(p, False) for p in paths)
    return commit, dirty, matches


# --- documents --------------------------------------------------------------------------------


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 16), b""):
            h.update(chunk)
    return h.hexdigest()


def load_spec(path):
    try:
        with open(path, encoding="utf-8") as f:
            spec = json.load(f)
    except OSError as e:
        raise GenError(f"{path}: cannot open: {e.strerror}")
    except json.JSONDecodeError as e:
        raise GenError(f"{path}:{e.lineno}:{e.colno}: {e.msg}")

    def need(cond, ptr, msg):
        if not cond:
            raise GenError(f"{path}: {ptr}: {msg}")

    need(isinstance(spec, dict), "/", "must be an object")
    extra = set(spec) - {"schema", "description", "nodes", "edges", "files"}
    need(not extra, "/" + (sorted(extra)[0] if extra else ""), "unknown key")
    need(spec.get("schema") == "dkb.chain-spec/v1", "/schema", "must be \"dkb.chain-spec/v1\"")
    nodes, edges = spec.get("nodes"), spec.get("edges", [])
    need(isinstance(nodes, list) and nodes, "/nodes", "must be a non-empty array")
    seen = set()
    for k, node in enumerate(nodes):
        ptr = f"/nodes/{k}"
        need(isinstance(node, dict) and {"symbol", "layer", "path"} <= set(node) <= {"symbol", "layer", "path", "root", "scope"},
             ptr, "must be an object with symbol, layer, path and optionally root and scope")
        need(node.get("scope", "builtin") == "builtin", f"{ptr}/scope", "must be \"builtin\" (a node of dkb's own backends)")
        need(node.get("root", "repo") in ("repo", "upstream", "binary"), f"{ptr}/root",
             "must be \"repo\", \"upstream\" or \"binary\"")
        for key in ("symbol", "layer", "path"):
            need(isinstance(node[key], str) and node[key], f"{ptr}/{key}", "must be a non-empty string")
        need(node.get("root") != "binary" or "/" not in node["path"], f"{ptr}/path",
             "must be a library's file name (a binary node is looked up in --binary-dir)")
        need(re.fullmatch(r"[A-Za-z_]\w*", node["symbol"]), f"{ptr}/symbol", "must be a C identifier")
        need(not os.path.isabs(node["path"]) and ".." not in node["path"].split("/"), f"{ptr}/path",
             "must be a repository-relative path")
        need(node["symbol"] not in seen, f"{ptr}/symbol", f"duplicate symbol '{node['symbol']}'")
        seen.add(node["symbol"])
    need(isinstance(edges, list), "/edges", "must be an array")
    for k, e in enumerate(edges):
        ptr = f"/edges/{k}"
        need(isinstance(e, dict) and set(e) == {"from", "to"}, ptr, "must be an object with exactly from and to")
        for key in ("from", "to"):
            need(e[key] in seen, f"{ptr}/{key}", f"names no node ('{e[key]}')")
    files = spec.get("files", [])
    need(isinstance(files, list) and all(isinstance(p, str) and p for p in files), "/files",
         "must be an array of paths")
    return spec


def repo_deps(dep_files):
    """The repository files (outside build/) that make-style .d files list, in order."""
    repo = os.path.realpath(".")
    out = []
    for f in dep_files or []:
        for d in read_deps(f):
            r = os.path.realpath(d)
            rel = os.path.relpath(r, repo)
            if r.startswith(repo + os.sep) and not rel.startswith("build" + os.sep) and rel not in out:
                out.append(rel)
    return out


def check_kernels_launched(spec_path, spec):
    """Every kernel defined in a repository file of the chain's nodes is a node, and something launches it:
    a kernel left out would run in a bundle whose chain check (level 5) cannot place it. A plugin's
    upstream headers define the library's whole kernel set, of which a chain names what it launches."""
    nodes = spec["nodes"]
    symbols = {n["symbol"] for n in nodes}
    launched = {e["to"] for e in spec.get("edges", [])}
    for path in dict.fromkeys(n["path"] for n in nodes if n.get("root", "repo") == "repo"):
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            kernels = defined_kernels(f.read())
        for name, line in kernels:
            if name not in symbols:
                raise GenError(f"{spec_path}: /nodes: kernel '{name}' ({path}:{line}) is no node, so a call that "
                               "launches it cannot reach level 5")
            if name not in launched:
                k = next(i for i, n in enumerate(nodes) if n["symbol"] == name)
                raise GenError(f"{spec_path}: /nodes/{k}/symbol: kernel '{name}' is no edge's \"to\": nothing launches it")


def source_manifest(spec_path, deps=None):
    """deps: .d files of the chain's compiled units; every repository file they list is hashed too (the
    kernels' headers): a file that defines no chain symbol is one the chain's code includes."""
    spec = load_spec(spec_path)
    nodes = spec["nodes"]
    paths = []
    for p in [n["path"] for n in nodes] + spec.get("files", []) + repo_deps(deps):
        if p not in paths:
            paths.append(p)
    for p in paths:
        if not os.path.isfile(p):
            where = next((f"/nodes/{i}/path" for i, n in enumerate(nodes) if n["path"] == p), None)
            where = where or f"/files/{spec['files'].index(p)}"
            raise GenError(f"{spec_path}: {where}: source file '{p}' does not exist")
    symbols = []
    for k, node in enumerate(nodes):
        with open(node["path"], encoding="utf-8", errors="surrogateescape") as f:
            defs = find_definitions(f.read(), node["symbol"])
        if not defs:
            raise GenError(f"{spec_path}: /nodes/{k}/symbol: no definition of '{node['symbol']}' in {node['path']}")
        if len(defs) > 1:
            lines = ", ".join(str(d[0]) for d in defs)
            raise GenError(f"{spec_path}: /nodes/{k}/symbol: '{node['symbol']}' is defined {len(defs)} times in "
                           f"{node['path']} (lines {lines})")
        first, last, kind = defs[0]
        symbols.append({"symbol": node["symbol"], "path": node["path"], "kind": kind, "span": [first, last]})
    check_kernels_launched(spec_path, spec)
    commit, dirty, matches = repo_state(paths)
    files = [{"path": p, "sha256": sha256_file(p), "size": os.path.getsize(p), "matches_commit": matches.get(p, False)}
             for p in paths]
    return {
        "schema": "dkb.source-manifest/v1",
        "spec": spec_path,
        "commit": commit,
        "dirty": dirty,
        "files": files,
        "symbols": symbols,
        "chain": {"nodes": [dict(n) for n in nodes], "edges": [dict(e) for e in spec.get("edges", [])]},
    }


def read_deps(path):
    """The prerequisites of a make-style .d file (nvcc -MD / -M output), in order, without duplicates."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read().replace("\\\n", " ")
    except OSError as e:
        raise GenError(f"{path}: cannot open: {e.strerror}")
    deps = []
    for line in text.splitlines():
        if ":" not in line:
            continue
        for d in line.split(":", 1)[1].split():
            if d not in deps:
                deps.append(d)
    return deps


def read_record(path):
    """{path: (sha256 hex, size)} of a wheel's RECORD (hashes there are urlsafe base64, no padding)."""
    import base64
    import csv
    out = {}
    try:
        with open(path, encoding="utf-8", newline="") as f:
            for row in csv.reader(f):
                if len(row) < 2 or not row[1].startswith("sha256="):
                    continue
                b64 = row[1][len("sha256="):]
                out[row[0]] = (base64.urlsafe_b64decode(b64 + "=" * (-len(b64) % 4)).hex(), int(row[2] or 0))
    except OSError as e:
        raise GenError(f"{path}: cannot open: {e.strerror}")
    return out


def plugin_manifest(a):
    """The source manifest of a plugin: repository files of its chain spec, then every upstream file the
    compiler read, each checked against RECORD."""
    spec = load_spec(a.spec)
    root = os.path.realpath(a.upstream_root) if a.upstream_root else None
    repo = os.path.realpath(".")
    record = read_record(a.record) if a.record else {}
    repo_paths, up_paths, bin_paths = [], [], []
    for n in spec["nodes"]:
        {"upstream": up_paths, "binary": bin_paths}.get(n.get("root"), repo_paths).append(n["path"])
    repo_paths += spec.get("files", [])
    for d in [dep for f in a.deps for dep in read_deps(f)]:
        r = os.path.realpath(d)
        if root and r.startswith(root + os.sep):
            up_paths.append(os.path.relpath(r, root))
        elif r.startswith(repo + os.sep) and not os.path.relpath(r, repo).startswith("build" + os.sep):
            repo_paths.append(os.path.relpath(r, repo))
    repo_paths = list(dict.fromkeys(repo_paths))
    up_paths = list(dict.fromkeys(up_paths))
    for p in repo_paths:
        if not os.path.isfile(p):
            raise GenError(f"{a.spec}: source file '{p}' does not exist")
    files = []
    commit, dirty, matches = repo_state(repo_paths)
    for p in repo_paths:
        files.append({"path": p, "root": "repo", "sha256": sha256_file(p), "size": os.path.getsize(p),
                      "matches_commit": matches.get(p, False)})
    for p in up_paths:
        full = os.path.join(root, p)
        if not os.path.isfile(full):
            raise GenError(f"{a.spec}: upstream file '{p}' does not exist under {a.upstream_root}")
        h = sha256_file(full)
        if p not in record:
            raise GenError(f"{a.record}: no RECORD entry for '{p}', which the compiler read")
        if record[p][0] != h:
            raise GenError(f"{a.record}: '{p}' has SHA-256 {h}, RECORD says {record[p][0]}")
        files.append({"path": p, "root": "upstream", "sha256": h, "size": os.path.getsize(full),
                      "record_sha256": record[p][0]})
    files += binary_files(a, list(dict.fromkeys(bin_paths)))
    symbols = []
    for k, node in enumerate(spec["nodes"]):
        if node.get("root") == "binary":
            symbols.append({"symbol": node["symbol"], "path": node["path"], "kind": "binary"})
            continue
        path = os.path.join(root, node["path"]) if node.get("root") == "upstream" else node["path"]
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            defs = find_definitions(f.read(), node["symbol"])
        if not defs:
            raise GenError(f"{a.spec}: /nodes/{k}/symbol: no definition of '{node['symbol']}' in {node['path']}")
        first, last, kind = defs[0]  # an overloaded upstream symbol: the first definition, in file order
        symbols.append({"symbol": node["symbol"], "path": node["path"], "kind": kind, "span": [first, last]})
    check_kernels_launched(a.spec, spec)
    doc = {
        "schema": "dkb.source-manifest/v1",
        "spec": a.spec,
        "commit": commit,
        "dirty": dirty,
        "files": files,
        "symbols": symbols,
        "chain": {"nodes": [dict(n) for n in spec["nodes"]], "edges": [dict(e) for e in spec.get("edges", [])]},
    }
    if root:
        doc["upstream"] = upstream(a)
        doc["upstream"]["dir"] = os.path.relpath(root, repo)
    return doc


def binary_files(a, names):
    """File entries of the binary nodes' libraries, each hashed where --binary-dir holds it."""
    files = []
    for name in names:
        if not a.binary_dir:
            raise GenError(f"{a.spec}: binary node '{name}' needs --binary-dir")
        full = os.path.realpath(os.path.join(a.binary_dir, name))
        if not os.path.isfile(full):
            raise GenError(f"{a.spec}: library '{name}' does not exist in {a.binary_dir}")
        files.append({"path": name, "root": "binary", "sha256": sha256_file(full), "size": os.path.getsize(full),
                      "found_at": full})
    return files


def upstream(a):
    """The pinned upstream package of a plugin; the archive must hash to its pin."""
    got = sha256_file(a.archive)
    if got != a.archive_sha256:
        raise GenError(f"{a.archive}: SHA-256 {got}, the pin says {a.archive_sha256}")
    return {"package": a.package, "version": a.package_version, "archive": os.path.basename(a.archive),
            "archive_sha256": a.archive_sha256}


def plugin_build_report(a):
    commit, dirty, _ = repo_state()
    path, line, text = tool_version(a.compiler, lambda l: "release" in l or "gcc" in l or "clang" in l)
    doc = {
        "schema": "dkb.build-report/v1",
        "dkb_version": "plugin",
        "commit": commit,
        "dirty": dirty,
        "build_host": socket.gethostname(),
        "compilers": {"plugin": {"command": a.compiler, "path": path, "version": line, "version_text": text}},
        "flags": a.flags,
    }
    if a.upstream_root:
        doc["upstream"] = upstream(a)
    return doc


def tool_version(cmd, pick):
    """(resolved path, picked version line, full version text) of a compiler."""
    argv = shlex.split(cmd)
    try:
        r = subprocess.run(argv + ["--version"], capture_output=True, text=True, check=False)
    except OSError as e:
        raise GenError(f"cannot run '{cmd} --version': {e.strerror}")
    if r.returncode != 0:
        raise GenError(f"'{cmd} --version' exited {r.returncode}: {r.stderr.strip()}")
    text = r.stdout.strip()
    lines = text.splitlines()
    line = next((l for l in lines if pick(l)), lines[0] if lines else "")
    return os.path.realpath(shutil.which(argv[0]) or argv[0]), line, text


def build_report(a):
    commit, dirty, _ = repo_state()
    cc_path, cc_line, cc_text = tool_version(a.cc, lambda l: True)
    nv_path, nv_line, nv_text = tool_version(a.nvcc, lambda l: "release" in l)
    gencode = [w for w in shlex.split(a.gencode) if w != "-gencode"]
    try:
        with open("VERSION", encoding="utf-8") as f:
            version = f.read().strip()
    except OSError:
        version = "unknown"
    return {
        "schema": "dkb.build-report/v1",
        "dkb_version": version,
        "commit": commit,
        "dirty": dirty,
        "build_host": socket.gethostname(),
        "compilers": {
            "cc": {"command": a.cc, "path": cc_path, "version": cc_line, "version_text": cc_text},
            "nvcc": {"command": a.nvcc, "path": nv_path, "version": nv_line, "version_text": nv_text},
        },
        "cflags": a.cflags,
        "nvflags": a.nvflags,
        "gencode": gencode,
        "ldlibs": a.ldlibs,
    }


def c_literal(symbol, doc):
    text = canonical(doc)
    assert text.isascii()
    pieces = [text[i:i + 100].replace("\\", "\\\\").replace('"', '\\"') for i in range(0, len(text), 100)]
    body = "\n".join(f'    "{c}"' for c in pieces)
    return f"const char {symbol}[] =\n{body};\n"


def c_source(symbol, doc, origin):
    return (f"/* generated by tools/gen_provenance.py {origin}; do not edit */\n"
            f'#include "harness/provenance.h"\n\n' + c_literal(symbol, doc))


def write_if_changed(path, text):
    try:
        with open(path, encoding="utf-8") as f:
            if f.read() == text:
                return
    except OSError:
        pass
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def main(argv):
    p = argparse.ArgumentParser(prog="gen_provenance.py")
    sub = p.add_subparsers(dest="what", required=True)
    b = sub.add_parser("build-report")
    b.add_argument("--out", required=True)
    for opt in ("cc", "nvcc", "cflags", "nvflags", "gencode", "ldlibs"):
        b.add_argument("--" + opt, required=True)
    s = sub.add_parser("source-manifest")
    s.add_argument("--spec", required=True)
    s.add_argument("--out", required=True)
    s.add_argument("--json", help="also write the document itself (for tests)")
    s.add_argument("--deps", nargs="*", help="the .d files of the chain's compiled units (their headers are hashed too)")
    g = sub.add_parser("plugin")
    for opt in ("spec", "compiler", "flags", "out"):
        g.add_argument("--" + opt, required=True)
    g.add_argument("--deps", required=True, nargs="+", help="the .d files of every translation unit")
    for opt in ("upstream-root", "record", "package", "package-version", "archive", "archive-sha256", "binary-dir",
                "prefix"):
        g.add_argument("--" + opt)
    a = p.parse_args(argv)
    try:
        if a.what == "plugin":
            pre = a.prefix or "dkb_plugin"
            text = (f"/* generated by tools/gen_provenance.py plugin --spec {a.spec}; do not edit */\n"
                    + c_literal(pre + "_source_manifest_json", plugin_manifest(a))
                    + c_literal(pre + "_build_report_json", plugin_build_report(a)))
            write_if_changed(a.out, text)
            return 0
        if a.what == "build-report":
            write_if_changed(a.out, c_source("dkb_build_report_json", build_report(a), "build-report"))
        else:
            doc = source_manifest(a.spec, a.deps)
            write_if_changed(a.out, c_source("dkb_source_manifest_json", doc, "source-manifest --spec " + a.spec))
            if a.json:
                write_if_changed(a.json, canonical(doc) + "\n")
    except GenError as e:
        print(f"gen_provenance: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
