#!/usr/bin/env python3
"""Validates model files against docs/model.schema.json (JSON Schema 2020-12, the `jsonschema` package).

    check-model-schema.py FILE...      one line per file: "ok FILE" or "invalid FILE: <reason>"; exit 1 if any is
                                       invalid
    check-model-schema.py --stdin      a JSON array of model documents on standard input; one line per document
                                       ("ok" or "invalid: <reason>"), exit 0 (for tests)
"""
import json
import pathlib
import sys

import jsonschema

SCHEMA = pathlib.Path(__file__).resolve().parent.parent / "docs" / "model.schema.json"


def reason(validator, document):
    first = jsonschema.exceptions.best_match(validator.iter_errors(document))
    if first is None:
        return None
    where = "/".join(str(part) for part in first.absolute_path) or "(the model)"
    return f"{where}: {first.message}"


def main(arguments):
    schema = json.loads(SCHEMA.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    if arguments == ["--stdin"]:
        for document in json.load(sys.stdin):
            problem = reason(validator, document)
            print("ok" if problem is None else f"invalid: {problem}")
        return 0
    if not arguments:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    failed = False
    for path in arguments:
        problem = reason(validator, json.loads(pathlib.Path(path).read_text()))
        print(f"ok {path}" if problem is None else f"invalid {path}: {problem}")
        failed = failed or problem is not None
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
