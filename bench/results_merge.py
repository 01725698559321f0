"""Merging a script's entries into <build-dir>/bench/results.json.

The file is run_benchmarks.py's list of result objects; a script that adds
to it replaces its own earlier entries,
those whose "binary" is its name, and keeps everyone else's.
"""

import json
import os


def merge_results(path, binary, entries):
    results = []
    if os.path.exists(path):
        with open(path) as f:
            results = [r for r in json.load(f) if r.get("binary") != binary]
    results.extend(entries)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(results, f, indent=2)
        f.write("\n")
    os.replace(tmp, path)
