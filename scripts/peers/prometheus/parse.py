"""Parses an exposition (stdin) with the Prometheus project's own parser, prometheus_client,
and prints its samples as JSON lines: {"name", "labels", "value"}. The argument says the format:
`openmetrics` (the default) or `text` (Prometheus' classic text format 0.0.4). Exits non-zero,
with the parser's error, when the exposition does not parse."""
import json
import sys

if len(sys.argv) > 1 and sys.argv[1] == "text":
    from prometheus_client.parser import text_string_to_metric_families
else:
    from prometheus_client.openmetrics.parser import text_string_to_metric_families

text = sys.stdin.read()
for family in text_string_to_metric_families(text):
    for s in family.samples:
        print(json.dumps({"family": family.name, "type": family.type, "name": s.name,
                          "labels": s.labels, "value": s.value}))
