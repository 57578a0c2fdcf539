#!/usr/bin/python3
"""A stand-in for build/dkb in the test of tools/budgets.py (tests/test_run.c): `run FIXTURE -o DIR`
holds $MB MiB resident, then writes DIR/bundle.json with claimed level $LEVEL and $KV bytes of unique
K/V (LEVEL=none: exit 5 and no bundle); `validate` and anything else exit 0."""
import os
import sys


def main():
    if sys.argv[1:2] != ["run"]:
        return 0
    if os.environ["LEVEL"] == "none":
        return 5
    out = sys.argv[4]
    os.makedirs(out, exist_ok=True)
    x = bytearray(int(os.environ["MB"]) << 20)
    x[::4096] = b"\1" * len(x[::4096])  # touch every page: resident
    with open(out + "/bundle.json", "w") as f:
        f.write('{"claimed_level": %s, "ledgers": {"unique_kv_bytes": %s, "q_o_bytes": 262144}}'
                % (os.environ["LEVEL"], os.environ["KV"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
