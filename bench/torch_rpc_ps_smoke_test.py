#!/usr/bin/env python3
"""Keeps the torch baseline of train_vs_torch.py working (ctest, label
bench-smoke): a short run of torch_rpc_ps.py (1 worker, 40 steps) must
print its epoch line and a RESULT whose figures are sane, and the figures
train_vs_torch.py derives from a history must follow its rules.
"""

import json
import math
import os
import re
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import train_vs_torch  # noqa: E402

STEPS = 40
BATCH = 64


class TorchBaselineSmokeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.proc = subprocess.run(
            [sys.executable, os.path.join(HERE, "torch_rpc_ps.py"), "--num-workers", "1",
             "--batch-size", str(BATCH), "--epochs", "1", "--max-steps", str(STEPS),
             "--timeout", "90"],
            capture_output=True, text=True, timeout=120, check=False)

    def result(self):
        self.assertEqual(self.proc.returncode, 0, self.proc.stderr[-3000:])
        lines = [l for l in self.proc.stdout.splitlines() if l.startswith("RESULT ")]
        self.assertEqual(len(lines), 1, self.proc.stdout)
        return json.loads(lines[0][len("RESULT "):])

    def test_prints_sane_figures(self):
        r = self.result()
        self.assertEqual(r["steps"], STEPS)
        self.assertEqual(r["num_workers"], 1)
        self.assertEqual(len(r["history"]), 1)
        self.assertEqual(r["history"][0]["examples"], STEPS * BATCH)
        rate = r["examples_per_sec"]
        self.assertTrue(math.isfinite(rate) and 50 < rate < 1e7, rate)
        # 40 Adam steps from Glorot-uniform take the test accuracy well
        # above chance (0.1); a wrong gradient or update would not.
        self.assertGreater(r["test_accuracy"], 0.5)
        self.assertLessEqual(r["test_accuracy"], 1.0)
        self.assertIsNone(r["seconds_to_target"])  # 0.87 is out of reach in 40 steps

    def test_epoch_line_parses(self):
        self.assertEqual(self.proc.returncode, 0, self.proc.stderr[-3000:])
        m = re.search(r"^epoch 1/1: train loss ([\d.]+) accuracy ([\d.]+) \| test loss ([\d.]+) "
                      r"accuracy ([\d.]+) \| (\d+) steps in ([\d.]+) s \((\d+) examples/s\)$",
                      self.proc.stdout, re.M)
        self.assertIsNotNone(m, self.proc.stdout)
        self.assertEqual(int(m.group(5)), STEPS)

    def test_uses_openblas_when_installed(self):
        r = self.result()
        if not os.path.isdir("/usr/lib/x86_64-linux-gnu/openblas-pthread"):
            self.skipTest("libopenblas0-pthread is not installed")
        self.assertTrue(any("openblas" in path for path in r["blas"]), r["blas"])


class DerivedFiguresTest(unittest.TestCase):
    HISTORY = [{"examples": 100, "seconds": 10.0, "test_accuracy": 0.80},
               {"examples": 100, "seconds": 1.0, "test_accuracy": 0.88},
               {"examples": 100, "seconds": 3.0, "test_accuracy": 0.86}]

    def test_steady_rate_skips_the_first_epoch(self):
        self.assertAlmostEqual(train_vs_torch.steady_rate(self.HISTORY), 200 / 4.0)
        self.assertAlmostEqual(train_vs_torch.steady_rate(self.HISTORY[:1]), 10.0)

    def test_seconds_to_target_is_the_first_epoch_reaching_it(self):
        acc = lambda h: h["test_accuracy"]  # noqa: E731
        self.assertAlmostEqual(train_vs_torch.seconds_to(self.HISTORY, 0.87, acc), 11.0)
        self.assertIsNone(train_vs_torch.seconds_to(self.HISTORY, 0.9, acc))

    def test_entries_name_the_torch_baseline_and_the_ratio(self):
        runs = lambda rate, secs: [  # noqa: E731
            {"examples_per_s": rate, "seconds_to_target": secs, "test_accuracy": 0.88,
             "cpu_seconds": 5.0}]
        entries = train_vs_torch.config_entries("b64_w2", 64, 2, runs(300.0, 2.0),
                                                runs(100.0, None), 0.87)
        by_name = {e["name"]: e for e in entries}
        mine = by_name["train_vs_torch/b64_w2/psflow_examples_per_s"]
        self.assertEqual(mine["baseline_name"], "train_vs_torch/b64_w2/torch_examples_per_s")
        self.assertAlmostEqual(mine["ratio"], 3.0)
        self.assertIn("train_vs_torch/b64_w2/torch_test_accuracy", by_name)
        # torch never reached 0.87: no time-to-accuracy entries at all
        self.assertFalse(any("seconds_to" in n for n in by_name))


if __name__ == "__main__":
    unittest.main(verbosity=2)
