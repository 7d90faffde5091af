# Reads js_responses.jsonl on stdin and prints each resume list as a Strands
# Python client sends it: json.dumps with default settings (", " and ": "
# separators, ensure_ascii=True, so non-ASCII becomes \uXXXX escapes).
import json
import sys

for line in sys.stdin:
    print(json.dumps(json.loads(line)))
