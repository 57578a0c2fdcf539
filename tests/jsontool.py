#!/usr/bin/python3
"""JSON documents for the C tests: a copy with edits at JSON Pointers, and values read at them. The
tests mutate real bundles and bench results with it (one field changed, the checker must notice) and
read the documents dkb wrote, without Python in their C strings.

usage: jsontool.py edit IN OUT OP...   writes IN with the edits applied, in order, to OUT (OUT may be IN)
         set PTR JSON     the value at PTR becomes JSON (a new member of an object is added)
         add PTR NUM      the number at PTR plus NUM
         scale PTR NUM    the number at PTR times NUM
         div PTR NUM      the number at PTR over NUM
         del PTR          the member or element at PTR removed
         copy FROM TO     the value at FROM set at TO
         expect PTR JSON  exit 1 unless the value at PTR is JSON (an edit that changes nothing proves nothing)
       jsontool.py get [--json] FILE PTR...   prints the values at the pointers, separated by spaces, as
         Python's print does (None, True, a string bare), or each as canonical JSON with --json
A PTR is an RFC 6901 JSON Pointer ("" is the document); a segment "*" stands for every element of an array
or every member of an object: an edit applies to each, a get reads the list of them."""
import json
import sys


def segments(ptr):
    if ptr == "":
        return []
    if not ptr.startswith("/"):
        sys.exit(f"jsontool: '{ptr}' is not a JSON Pointer")
    return [s.replace("~1", "/").replace("~0", "~") for s in ptr[1:].split("/")]


def child(node, seg):
    return node[int(seg)] if isinstance(node, list) else node[seg]


def parents(doc, ptr):
    """(container, key) for every location PTR names, "*" expanded; the last key need not exist yet."""
    segs = segments(ptr)
    if not segs:
        sys.exit("jsontool: an edit needs a pointer below the document")
    nodes = [doc]
    for seg in segs[:-1]:
        nxt = []
        for n in nodes:
            if seg == "*":
                nxt.extend(n if isinstance(n, list) else n.values())
            else:
                nxt.append(child(n, seg))
        nodes = nxt
    last = segs[-1]
    out = []
    for n in nodes:
        if last == "*":
            out.extend((n, k) for k in (range(len(n)) if isinstance(n, list) else list(n)))
        else:
            out.append((n, int(last) if isinstance(n, list) else last))
    return out


def get(doc, ptr):
    node = doc
    segs = segments(ptr)
    for i, seg in enumerate(segs):
        if seg == "*":
            rest = "".join("/" + s.replace("~", "~0").replace("/", "~1") for s in segs[i + 1:])
            return [get(x, rest) for x in (node if isinstance(node, list) else node.values())]
        node = child(node, seg)
    return node


def edit(args):
    src, dst, ops = args[0], args[1], args[2:]
    doc = json.load(open(src))
    arity = {"set": 2, "add": 2, "scale": 2, "div": 2, "del": 1, "copy": 2, "expect": 2}
    i = 0
    while i < len(ops):
        op = ops[i]
        if op not in arity or i + arity[op] >= len(ops):
            sys.exit(f"jsontool: '{op}' at argument {i + 4}: want one of {', '.join(arity)} with its arguments")
        a = ops[i + 1:i + 1 + arity[op]]
        i += 1 + arity[op]
        if op == "expect":
            got, want = get(doc, a[0]), json.loads(a[1])
            if got != want:
                print(f"jsontool: {src}: {a[0]} is {json.dumps(got)}, not {a[1]}")
                sys.exit(1)
            continue
        value = get(doc, a[0]) if op == "copy" else None
        for node, key in parents(doc, a[1] if op == "copy" else a[0]):
            if op == "set":
                node[key] = json.loads(a[1])
            elif op == "add":
                node[key] += float(a[1])
            elif op == "scale":
                node[key] *= float(a[1])
            elif op == "div":
                node[key] /= float(a[1])
            elif op == "del":
                del node[key]
            else:
                node[key] = value
    with open(dst, "w") as f:
        json.dump(doc, f)


def show(args):
    as_json = bool(args) and args[0] == "--json"
    if as_json:
        args = args[1:]
    doc = json.load(open(args[0]))
    vals = [get(doc, p) for p in args[1:]]
    if as_json:
        print(*(json.dumps(v, sort_keys=True) for v in vals))
    else:
        print(*vals)


def main():
    if len(sys.argv) < 3 or sys.argv[1] not in ("edit", "get") or (sys.argv[1] == "edit" and len(sys.argv) < 4):
        sys.exit(__doc__)
    (edit if sys.argv[1] == "edit" else show)(sys.argv[2:])


if __name__ == "__main__":
    main()
