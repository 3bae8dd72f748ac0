#!/usr/bin/env python3
"""Parses Prometheus text exposition from stdin with prometheus_client's parser (PyPI `prometheus-client`) and
prints one JSON object: {"families": {name: type}, "samples": [{"name", "labels", "value"}]}. Exits non-zero with
the parser's complaint when the text does not parse. Used by MetricsIntegrationTests."""
import json
import sys

from prometheus_client.parser import text_string_to_metric_families

text = sys.stdin.read()
try:
    families = list(text_string_to_metric_families(text))
except Exception as error:  # the parser raises ValueError and others for malformed text
    print(f"the metrics do not parse: {error}", file=sys.stderr)
    sys.exit(1)
print(json.dumps({
    "families": {family.name: family.type for family in families},
    "samples": [
        {"name": sample.name, "labels": sample.labels, "value": sample.value}
        for family in families for sample in family.samples
    ],
}))
