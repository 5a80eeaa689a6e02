"""Running a learner's CLI with tiny settings, for the end-to-end tests."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def cli(module, out, *extra, wait=True):
    """Run `python -m module` with tiny settings into `out/run`; `wait=False` returns the Popen."""
    cmd = [sys.executable, "-m", module, "--out-dir", str(out), "--run-name", "run", "--no-progress",
           "--threads", "1", "--sampling.max-new-tokens", "48", "--eval.max-new-tokens", "48", "--eval.problems", "8",
           "--eval.samples", "1",
           "--problems-per-step", "2", "--eval-every", "0", *extra]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    if not wait:
        return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


def metrics(run_dir):
    """A run's metrics.jsonl without its timings."""
    rows = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return [{k: v for k, v in r.items() if k not in ("step_time",)} for r in rows]


