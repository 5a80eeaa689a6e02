"""examples/byo_learner.py (issue 17, item 4): a learner of one's own, run end to end on the tiny pair, logs the
numbers the shipped learners log and updates both players."""

from __future__ import annotations

import json

import torch

from baselines.config import EvalConfig
from baselines.policy import SamplingParams


def test_byo_learner_runs_logs_the_comparable_numbers_and_updates_both(tmp_path, monkeypatch, capsys, load_example, one_thread):
    ex = load_example("byo_learner")
    ex_load_pair, loaded = ex.load_pair, {}

    def load_pair(*a, **kw):  # keep the pair and its starting weights, to see that both were trained
        pair = ex_load_pair(*a, **kw)
        loaded.update({p.name: (p, [w.detach().clone() for w in p.parameters()]) for p in pair})
        return pair

    monkeypatch.setattr(ex, "load_pair", load_pair)
    args = ex.Args(steps=2, problems_per_step=2, group_size=4, threads=1, out_dir=str(tmp_path), progress=False,
                   eval_every=0, checkpoint_every=0, backend="hf", device="cpu", run_name="byo",
                   sampling=SamplingParams(max_new_tokens=64), eval=EvalConfig(problems=6, samples=2, greedy=False))
    summary = ex.main(args)

    for rows in (summary["before"], summary["after"]):
        assert [r["method"] for r in rows] == ["A", "B", "A→B", "B→A"]
        for r in rows:
            assert r["n"] == 12 and 0 <= r["ci_low"] <= r["pass@1"] <= r["ci_high"] <= 1 and r["ci_high"] > r["ci_low"]
        assert all(0 <= r[k] <= 1 for r in rows[2:] for k in ("conversion", "keep", "drafter_pass"))
    assert summary["direction"] in ("A→B", "B→A")
    steps = [json.loads(line) for line in (tmp_path / "byo" / "metrics.jsonl").read_text().splitlines()][1:-1]
    assert [m["drafter"] for m in steps] == ["A", "B"]  # roles swap every step
    for m in steps:
        assert all(0 <= m[k] <= 1 for k in ("win/A", "win/B", "conversion", "keep", "pass/drafter", "pass/challenger"))
        assert m["win/A"] + m["win/B"] <= 1
    for name, (policy, start) in loaded.items():
        assert any(not torch.equal(w, w0) for w, w0 in zip(policy.parameters(), start)), f"{name} was not updated"
    out = capsys.readouterr().out
    assert "pass@1 after" in out and f"outputs in {tmp_path / 'byo'}" in out
    assert (tmp_path / "byo" / "summary.md").exists()
