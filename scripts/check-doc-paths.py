#!/usr/bin/env python3
"""Checks that every source file docs/architecture.md names exists.

A path in backticks (`Coordinator/Writer/StoreWriter.swift`) is looked up under Sources/Shared/, then Sources/; a
bare file name (`KnownKeys.swift`) must name a file somewhere under Sources/. Exits 1 naming each one missing.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = sys.argv[1:] or ["docs/architecture.md"]
PATTERN = re.compile(r"`([A-Za-z0-9+/._-]+\.(?:swift|py|sh|proto|html|js|css|c|h))`")

names = set()
for directory, _, files in os.walk(os.path.join(ROOT, "Sources")):
    names.update(files)

missing = []
count = 0
for doc in DOCS:
    with open(os.path.join(ROOT, doc), encoding="utf-8") as text:
        for number, line in enumerate(text, 1):
            for path in PATTERN.findall(line):
                count += 1
                if "/" in path:
                    found = any(
                        os.path.exists(os.path.join(ROOT, base, path)) for base in ("Sources/Shared", "Sources", "")
                    )
                else:
                    found = path in names
                if not found:
                    missing.append(f"{doc}:{number}: `{path}` names no file")

if missing:
    print("\n".join(missing))
    sys.exit(1)
print(f"doc paths: {count} file names in {', '.join(DOCS)}, each a file of the repository")
