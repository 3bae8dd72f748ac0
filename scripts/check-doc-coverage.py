#!/usr/bin/env python3
"""Fails when a public declaration of the given modules has no doc comment with a summary.

Reads the symbol graphs that `swift package generate-documentation` extracted (public declarations only, as DocC
documents them), so `make docs` checks exactly what the documentation shows. A declaration counts as documented
when its doc comment, its own or inherited from the protocol requirement it implements (as DocC shows it), starts
with a summary sentence rather than only `- Parameter`, `- Returns` or `- Throws` fields. Left out: members the
compiler synthesizes, extension blocks (their members are checked), and declarations in generated protobuf code
(`*.pb.swift`), whose comments come from `tributary.proto`.

Usage: check-doc-coverage.py [--build-dir .build] [--product Tributary ...] MODULE...
With --product (once per library product), the modules must be exactly those products' targets (read from
`swift package describe`), so the check follows Package.swift.
"""
import argparse
import glob
import json
import os
import subprocess
import sys

FIELDS = ("- parameter", "- parameters", "- returns", "- throws")


def newest_graph_directory(build_dir, module):
    """The newest `extracted-symbols/<package>/<module>` directory the documentation plugin wrote."""
    candidates = glob.glob(os.path.join(build_dir, "*", "extracted-symbols", "*", module))
    candidates = [path for path in candidates if os.path.isfile(os.path.join(path, f"{module}.symbols.json"))]
    if not candidates:
        sys.exit(f"doc coverage: no symbol graph of {module} under {build_dir}: run `make docs` (the plugin writes them)")
    return max(candidates, key=lambda path: os.path.getmtime(os.path.join(path, f"{module}.symbols.json")))


def product_targets(product):
    """The targets of the library product `product`, as Package.swift lists them."""
    description = json.loads(subprocess.check_output(["swift", "package", "describe", "--type", "json"], text=True))
    for candidate in description.get("products", []):
        if candidate.get("name") == product:
            return candidate.get("targets", [])
    sys.exit(f"doc coverage: Package.swift has no product named {product}")


def has_summary(doc_comment):
    lines = [line.get("text", "").strip() for line in (doc_comment or {}).get("lines", [])]
    lines = [line for line in lines if line]
    return bool(lines) and not lines[0].lower().startswith(FIELDS)


def check(build_dir, module):
    directory = newest_graph_directory(build_dir, module)
    checked, skipped_generated, missing = 0, 0, []
    for path in sorted(glob.glob(os.path.join(directory, f"{module}.symbols.json"))
                       + glob.glob(os.path.join(directory, f"{module}@*.symbols.json"))):
        with open(path, encoding="utf-8") as file:
            graph = json.load(file)
        for symbol in graph.get("symbols", []):
            kind = symbol["kind"]["identifier"]
            precise = symbol["identifier"]["precise"]
            if kind == "swift.extension" or "::SYNTHESIZED::" in precise:
                continue
            location = symbol.get("location", {})
            file_path = location.get("uri", "").removeprefix("file://")
            if file_path.endswith(".pb.swift"):
                skipped_generated += 1
                continue
            checked += 1
            if not has_summary(symbol.get("docComment")):
                line = location.get("position", {}).get("line", -1) + 1
                relative = os.path.relpath(file_path) if file_path else "?"
                name = ".".join(symbol.get("pathComponents", [])) or symbol["names"]["title"]
                missing.append(f"{relative}:{line}: {kind.removeprefix('swift.')} {name}")
    return checked, skipped_generated, missing


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build-dir", default=".build")
    parser.add_argument("--product", action="append", default=[])
    parser.add_argument("modules", nargs="+")
    arguments = parser.parse_args()
    if arguments.product:
        targets = set()
        for product in arguments.product:
            targets.update(product_targets(product))
        if sorted(targets) != sorted(arguments.modules):
            sys.exit(f"doc coverage: the {', '.join(arguments.product)} products' targets are "
                     f"{', '.join(sorted(targets))}, not {', '.join(sorted(arguments.modules))}: update DOCS_TARGETS "
                     "in the Makefile")
    total, generated, missing = 0, 0, []
    for module in arguments.modules:
        checked, skipped, lacking = check(arguments.build_dir, module)
        total, generated, missing = total + checked, generated + skipped, missing + lacking
    if missing:
        for entry in missing:
            print(f"{entry}: public declaration without a doc comment (a summary sentence, then any fields)",
                  file=sys.stderr)
        print(f"doc coverage: {len(missing)} of {total} public declarations undocumented", file=sys.stderr)
        return 1
    print(f"doc coverage: all {total} public declarations of {', '.join(arguments.modules)} documented "
          f"({generated} in generated protobuf code left to tributary.proto's comments)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
