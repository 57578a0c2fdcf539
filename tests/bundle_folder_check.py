#!/usr/bin/python3
"""bundle_folder_check.py DIR - exit 0 when DIR holds its bundle.json and only the files that bundle names
(any string in it equal to a file's name, or ending in /name); else print the others and exit 1."""
import json
import os
import sys


def named(doc):
    names = set()

    def walk(x):
        if isinstance(x, dict):
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)
        elif isinstance(x, str):
            names.add(os.path.basename(x))

    walk(doc)
    return names


def main(d):
    with open(os.path.join(d, "bundle.json"), encoding="utf-8") as f:
        names = named(json.load(f))
    extra = sorted(f for f in os.listdir(d) if f != "bundle.json" and f not in names)
    print(*extra)
    return 1 if extra else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
