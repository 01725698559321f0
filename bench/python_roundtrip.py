#!/usr/bin/env python3
"""The no-op schedule round trip from Python against the C++ one, in one run.

    PYTHONPATH=build/python python3 bench/python_roundtrip.py \
        --coordinator-bench build/bench/coordinator_bench --binary build/psflow_testing

Runs the C++ BM_GrpcRoundTrip (schedule("testing/echo") then fetch, one at a
time, on its own local cluster of 1 ps + 2 workers), then the same loop
from Python through psflow (same cluster shape and binary), and prints both
means and their ratio (Python / C++; the issue's target is <= 2).
--python-step also times the round trip of a no-op step written in Python
(@psflow.function `noop` below), on workers that import this file as the
module python_roundtrip (`psflow server --python python_roundtrip`).
"""

import argparse
import json
import statistics
import subprocess
import time

import psflow


def cpp_round_trip_us(bench, min_time):
    out = subprocess.run(
        [bench, "--benchmark_filter=^BM_GrpcRoundTrip/", "--benchmark_format=json",
         "--benchmark_min_time=%g" % min_time],
        check=True, capture_output=True, text=True).stdout
    run = json.loads(out)["benchmarks"][0]
    return (run["real_time"] * {"ns": 1e-3, "us": 1.0, "ms": 1e3}[run["time_unit"]],
            run.get("p50_us"))


@psflow.function
def noop():
    return None


def python_round_trips_us(binary, iterations, fn="testing/echo", python_module=None):
    with psflow.LocalCluster(num_ps=1, num_workers=2, binary=binary,
                             python_module=python_module) as cluster:
        strategy = psflow.distribute.ParameterServerStrategy(cluster.cluster_resolver())
        coordinator = psflow.distribute.coordinator.ClusterCoordinator(strategy)
        for _ in range(50):  # connections and warm-up
            coordinator.schedule(fn).fetch()
        micros = []
        for _ in range(iterations):
            start = time.perf_counter()
            coordinator.schedule(fn).fetch()
            micros.append((time.perf_counter() - start) * 1e6)
        return micros


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--coordinator-bench", required=True)
    parser.add_argument("--binary", required=True, help="psflow_testing")
    parser.add_argument("--iterations", type=int, default=2000)
    parser.add_argument("--min-time", type=float, default=2.0)
    parser.add_argument("--python-step", action="store_true",
                        help="also time a no-op step written in Python")
    args = parser.parse_args()
    cpp, cpp_p50 = cpp_round_trip_us(args.coordinator_bench, args.min_time)
    py = python_round_trips_us(args.binary, args.iterations)
    py_mean = statistics.mean(py)
    extra = {}
    if args.python_step:
        step = python_round_trips_us(args.binary, args.iterations, noop, "python_roundtrip")
        extra = {"python_step_round_trip_us_mean": round(statistics.mean(step), 1),
                 "python_step_round_trip_us_median": round(statistics.median(step), 1),
                 "ratio_python_step_over_cpp": round(statistics.mean(step) / cpp, 3)}
    print(json.dumps({**extra,"cpp_round_trip_us_mean": round(cpp, 1),
                      "cpp_round_trip_us_median": cpp_p50 and round(cpp_p50, 1),
                      "python_round_trip_us_mean": round(py_mean, 1),
                      "python_round_trip_us_median": round(statistics.median(py), 1),
                      "ratio_python_over_cpp": round(py_mean / cpp, 3),
                      "ratio_of_medians": cpp_p50 and round(statistics.median(py) / cpp_p50, 3)}))


if __name__ == "__main__":
    main()
