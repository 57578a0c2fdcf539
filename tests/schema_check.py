#!/usr/bin/python3
"""Independent check: validate JSON documents against a JSON Schema 2020-12 with python3-jsonschema.
usage: schema_check.py SCHEMA DOC...   (exit 0 when every document is valid)"""
import json
import sys

from jsonschema import Draft202012Validator


def main():
    schema = json.load(open(sys.argv[1]))
    Draft202012Validator.check_schema(schema)
    validator = Draft202012Validator(schema)
    bad = 0
    for path in sys.argv[2:]:
        doc = json.load(open(path))
        for err in sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path)):
            pointer = "".join("/" + str(p) for p in err.absolute_path)
            print(f"{path}: {pointer or '/'}: {err.message}")
            bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
