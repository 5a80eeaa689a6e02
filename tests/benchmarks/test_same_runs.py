"""The refactor check: two runs are the same when only their timings differ, and different otherwise."""

import json

from benchmarks import same_runs


def _run(root, pass_rate, wall, train):
    for run in ("agon_grpo-s0", "grpo-s0"):
        d = root / run
        d.mkdir(parents=True)
        (d / "metrics.jsonl").write_text(json.dumps({"step": 0, "pass": pass_rate, "step_time": train / 2}) + "\n")
        # the line baselines.report.final_table writes
        (d / "summary.md").write_text(f"- grpo: held-out hard tier, {wall} s wall, {train} s of it in training steps.\n")
    return str(root)


def test_timings_aside_the_runs_are_identical(tmp_path):
    assert same_runs.main(_run(tmp_path / "a", 0.5, 120, 100), _run(tmp_path / "b", 0.5, 125, 103))
    assert not same_runs.main(_run(tmp_path / "c", 0.5, 120, 100), _run(tmp_path / "d", 0.25, 120, 100))
