"""Parses an OpenMetrics exposition (stdin) with the Prometheus project's own parser,
prometheus_client, and prints its samples as JSON lines: {"name", "labels", "value"}.
Exits non-zero, with the parser's error, when the exposition does not parse."""
import json
import sys

from prometheus_client.openmetrics.parser import text_string_to_metric_families

text = sys.stdin.read()
for family in text_string_to_metric_families(text):
    for s in family.samples:
        print(json.dumps({"family": family.name, "type": family.type, "name": s.name,
                          "labels": s.labels, "value": s.value}))
