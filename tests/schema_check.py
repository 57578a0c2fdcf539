#!/usr/bin/python3
"""Independent check: validate JSON documents against a JSON Schema 2020-12 with python3-jsonschema.
usage: schema_check.py SCHEMA DOC...                    (exit 0 when every document is valid)
       schema_check.py --expect-invalid SCHEMA DOC...   (exit 0 when every document is rejected;
                                                         a document that is not JSON counts as rejected)"""
import json
import sys

from jsonschema import Draft202012Validator


def main():
    args = sys.argv[1:]
    expect_invalid = bool(args) and args[0] == "--expect-invalid"
    if expect_invalid:
        args = args[1:]
    schema = json.load(open(args[0]))
    Draft202012Validator.check_schema(schema)
    validator = Draft202012Validator(schema)
    if expect_invalid:
        accepted = 0
        for path in args[1:]:
            try:
                doc = json.load(open(path))
            except ValueError:
                continue
            if not any(True for _ in validator.iter_errors(doc)):
                print(f"{path}: accepted, but it is not a valid document")
                accepted += 1
        return 1 if accepted else 0
    bad = 0
    for path in args[1:]:
        doc = json.load(open(path))
        for err in sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path)):
            pointer = "".join("/" + str(p) for p in err.absolute_path)
            print(f"{path}: {pointer or '/'}: {err.message}")
            bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
