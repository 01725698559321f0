#!/usr/bin/env python3
"""The many-rows run of dynamic embedding tables (issue 20, `make bench`).

Runs <build-dir>/bench-tools/embedding_fill: 2 ps processes, one table
filled to 20 million live rows through the lookup RPC path, and merges its
figures (live rows, rows/s, ps RSS, bytes per row against the raw key +
value + slots + last-seen size) into <build-dir>/bench/results.json under
the binary name "embedding_fill". Standard library only.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from results_merge import merge_results  # noqa: E402

BINARY = "embedding_fill"


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build-dir", default="build")
    parser.add_argument("--rows", type=int, default=20_000_000)
    parser.add_argument("--num-ps", type=int, default=2)
    parser.add_argument("--dim", type=int, default=16)
    parser.add_argument("--optimizer", default="adagrad")
    parser.add_argument("--checkpoint", action="store_true",
                        help="also save the table to a checkpoint and restore it, "
                             "timing both and the coordinator's peak RSS")
    parser.add_argument("--timeout", type=float, default=1200,
                        help="seconds allowed for the run (default: 1200)")
    args = parser.parse_args(argv)
    tool = os.path.join(args.build_dir, "bench-tools", BINARY)
    output = os.path.join(args.build_dir, "bench", "results.json")
    with tempfile.TemporaryDirectory() as work:
        out = os.path.join(work, "fill.json")
        command = [tool, f"--rows={args.rows}", f"--num_ps={args.num_ps}",
                   f"--dim={args.dim}", f"--optimizer={args.optimizer}", f"--json={out}"]
        if args.checkpoint:
            command.append(f"--checkpoint={os.path.join(work, 'ckpt')}")
        print(" ".join(command), flush=True)
        proc = subprocess.run(command, timeout=args.timeout, check=False)
        if proc.returncode != 0:
            print(f"{BINARY}: exit code {proc.returncode}", file=sys.stderr)
            return 1
        with open(out) as f:
            entries = json.load(f)
    merge_results(output, BINARY, entries)
    for e in entries:
        ratio = f"  ratio {e['ratio']:.2f} of {e['baseline_value']:.0f}" if "ratio" in e else ""
        print(f"{e['name']:<48} {e['value']:>14.6g} {e['unit']}{ratio}")
    print(f"{BINARY}: {len(entries)} results merged into {output}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
