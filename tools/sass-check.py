#!/usr/bin/env python3
"""Reads `cuobjdump -sass BINARY` on stdin; prints every function whose async copies (LDGSTS) name a
uniform memory-descriptor register that the function never writes, and exits 1 if there is one.
ptxas (CUDA 13) produced such code for a cache-hinted cp.async (kernels/decode/copy.cuh, cp_async16): it dies
with "illegal instruction" on the GPU, and only for the instances a call happens to reach.
usage: cuobjdump -sass build/dkb | tools/sass-check.py"""
import re
import sys

text = sys.stdin.read()
bad = checked = 0
for fn in re.split(r"\n\s*Function : ", text)[1:]:
    body = fn.split("\n")
    name = body[0]
    copies = [l for l in body if "LDGSTS" in l]
    if not copies:
        continue
    checked += 1
    for ur in sorted(set(re.findall(r"desc\[(UR\d+)\]", " ".join(copies)))):
        # a write: the register is the first operand of some instruction (optionally predicated)
        if not any(re.search(r"^\s*/\*[0-9a-f]+\*/\s+(@!?U?P\d\s+)?\S+\s+" + ur + r"\b", l) for l in body):
            print("unwritten descriptor %s in %s" % (ur, name))
            bad += 1
print("sass-check: %d functions with async copies, %d unwritten descriptors" % (checked, bad))
sys.exit(1 if bad else 0)
