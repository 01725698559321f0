#!/usr/bin/env python3
"""The GEMM backend of the dense layers, by measurement: Eigen's own GEMM
against Debian's OpenBLAS through Eigen's BLAS interface (EIGEN_USE_BLAS).

Runs the two builds of bench/gemm_backend.cc (<build-dir>/bench-gemm/
gemm_backend_eigen and gemm_backend_openblas: one MLP 784-256-10 forward and
backward pass, one thread) alternately, `--pairs` times per batch size, in
one run so that both see the same host load, and merges into
<build-dir>/bench/results.json (entries of binary "gemm_backend" are
replaced):

  gemm_backend/mlp_b<N>/eigen      ms per pass (median of the pairs)
  gemm_backend/mlp_b<N>/openblas   ms per pass, ratio = eigen / openblas
                                   (above 1: OpenBLAS is faster)

Usage: gemm_backend.py --build-dir build [--batches 64,256] [--pairs 5]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from results_merge import merge_results  # noqa: E402

BINARY = "gemm_backend"


def run(path, batch, rounds):
    r = subprocess.run([path, str(batch), str(rounds)], capture_output=True, text=True,
                       timeout=300, check=True)
    return json.loads(r.stdout)["ms_per_pass"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build-dir", default="build")
    parser.add_argument("--batches", default="64,256")
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    binaries = {b: os.path.join(args.build_dir, "bench-gemm", f"gemm_backend_{b}")
                for b in ("eigen", "openblas")}
    missing = [p for p in binaries.values() if not os.access(p, os.X_OK)]
    if missing:
        print(f"gemm_backend: skipped: {missing} not built (PSFLOW_BUILD_BENCHMARKS, "
              "libopenblas-dev)")
        return 0
    entries = []
    for batch in (int(b) for b in args.batches.split(",")):
        times = {"eigen": [], "openblas": []}
        for _ in range(args.pairs):
            for backend, path in binaries.items():
                times[backend].append(run(path, batch, args.rounds))
        eigen = statistics.median(times["eigen"])
        blas = statistics.median(times["openblas"])
        name = f"gemm_backend/mlp_b{batch}"
        entries.append({"name": f"{name}/eigen", "value": eigen, "unit": "ms",
                        "binary": BINARY})
        entries.append({"name": f"{name}/openblas", "value": blas, "unit": "ms",
                        "binary": BINARY, "baseline_name": f"{name}/eigen",
                        "baseline_value": eigen, "ratio": eigen / blas})
        print(f"  batch {batch}: eigen {eigen:.3f} ms, openblas {blas:.3f} ms per pass "
              f"(eigen / openblas = {eigen / blas:.2f})", flush=True)
    output = os.path.join(args.build_dir, "bench", "results.json")
    os.makedirs(os.path.dirname(output), exist_ok=True)
    merge_results(output, BINARY, entries)
    print(f"gemm_backend: {len(entries)} results merged into {output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
