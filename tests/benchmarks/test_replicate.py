"""`benchmarks.replicate --quick` end to end: every method trains or runs, the table is written and rebuilds."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.replicate_table import ORDER, TRAINED

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_quick_replicate_writes_the_table(tmp_path):
    results, runs = tmp_path / "results", tmp_path / "runs"
    r = subprocess.run([sys.executable, "-m", "benchmarks.replicate", "--quick", "--results-dir", str(results),
                        "--runs-dir", str(runs)], cwd=ROOT, capture_output=True, text=True, timeout=600,
                       env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert r.returncode == 0, r.stderr[-3000:]
    assert "estimated" in r.stdout and "actual" in r.stdout

    report = json.loads((results / "replicate_quick.json").read_text())
    rows = {row["method"]: row for row in report["rows"]}
    assert list(rows) == ORDER  # every method of the paper's table, in its order
    md = (results / "replicate_quick.md").read_text()
    assert all(f"| {m} |" in md for m in ORDER) and (results / "replicate_quick_pass_at_1.png").stat().st_size > 0

    seeds = report["config"]["seeds"]
    parity = 2 * report["config"]["group_size"]
    for method in TRAINED:  # equal rollout compute for every trained method
        assert rows[method]["rollouts/problem/step"] == parity
        assert len(rows[method]["per seed"].split(" / ")) == seeds
    for row in rows.values():
        p, lo, hi = (float(x) for x in row["pass@1 % [95% CI]"].replace("[", "").replace("]", "").replace(",", "").split())
        assert 0 <= lo <= p <= hi <= 100

    # Agon's row is its cascade in the direction its learner chose on validation, read from the run itself.
    summary = json.loads((runs / "agon-Agon-s0" / "summary.json").read_text())
    assert rows["Agon"]["direction (validation)"] == summary["direction"]
    chosen = next(a for a in summary["after"] if a["method"] == summary["direction"])
    assert rows["Agon"]["per seed"] == f"{100 * chosen['pass@1']:.1f}"
    assert (runs / "self-s0.log").exists() and (runs / "moa-s0.log").exists()

    # The untrained cascade is Agon's pair before training, in the direction Agon chose.
    chosen_before = next(a for a in summary["before"] if a["method"] == summary["direction"])
    assert rows["cascade untrained"]["per seed"] == f"{100 * chosen_before['pass@1']:.1f}"

    # --from-results rebuilds the same table from the finished run, training nothing.
    r = subprocess.run([sys.executable, "-m", "benchmarks.replicate", "--from-results", str(results / "replicate_quick.json"),
                        "--results-dir", str(results)], cwd=ROOT, capture_output=True, text=True, timeout=300,
                       env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert r.returncode == 0, r.stderr[-3000:]
    assert "replicate:" not in r.stdout  # no jobs ran
    rebuilt = json.loads((results / "replicate_quick.json").read_text())
    assert rebuilt["rows"] == report["rows"] and "nothing was retrained" in rebuilt["notes"][-1]
