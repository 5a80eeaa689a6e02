"""The speed-up benchmark: each switch really turns its speed-up off, and the work it compares is the same."""

import json

from baselines.policy import sampling
from benchmarks import speedups


def test_each_switch_turns_its_speed_up_off_and_the_results_agree(tmp_path):
    real = speedups.sampling.sample
    out = speedups.main(speedups.Args(problems_per_step=4, group=4, warmup=1, rounds=1, eval_problems=8,
                                      eval_rounds=1, threads=1, results_dir=str(tmp_path)))
    assert sampling.sample is real and speedups.hf.sample is real  # every seam is put back
    assert {p.name for p in tmp_path.iterdir()} == {"speedups.json", "speedups.md"}
    report = json.loads((tmp_path / "speedups.json").read_text())
    assert [(r["part"], r["configuration"]) for r in report["rows"]] == \
        [("Agon step", c) for c in speedups.STEP_CONFIGS] + [("evaluation", c) for c in speedups.EVAL_CONFIGS]

    step = {c: xs[0] for c, xs in out["steps"].items()}
    games = 4 * 4
    # skip off: every draft and every answer goes through the update; on, the all-equal groups' do not
    assert step["skip off"]["scored"] == step["all off"]["scored"] == 2 * games
    assert 0 < step["all on"]["scored"] < 2 * games and step["rows leave off"]["scored"] == step["all on"]["scored"]
    # rows leave off: no decoding batch ever shrinks; on, some do
    assert step["all on"]["shrank"] > 0 and step["rows leave off"]["shrank"] == step["all off"]["shrank"] == 0
    for c, x in step.items():  # the same step: same tokens, the same weights to float rounding
        assert x["rows"] == 2 * games and x["same_tokens"], c
        assert x["max_weight_diff"] < 1e-5, c

    ev = {c: xs[0] for c, xs in out["evaluations"].items()}
    # drafts once off samples each model's drafts twice (its row, its cascade): the drafts' rows once more
    drafts = 2 * 8 * (4 + 1)  # two models × problems × (samples + greedy)
    assert ev["drafts once off"]["rows"] == ev["all on"]["rows"] + drafts
    assert ev["rows leave off"]["shrank"] == 0 < ev["all on"]["shrank"]
    assert all(x["same_rows"] for x in ev.values())
    assert all(r["median s"] > 0 and r["× all on's time"] > 0 for r in report["rows"])
    assert "python -m benchmarks.speedups" in (tmp_path / "speedups.md").read_text()
