"""The interleaved ours-vs-TRL step benchmark on a tiny budget: both sides did the same work and were timed."""

import json

import pytest

pytest.importorskip("trl")

from benchmarks import train_vs_trl  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:.*gradient_checkpointing.*:FutureWarning")
SMALL = dict(rounds=1, steps_per_round=2, problems_per_step=2, group=4, max_new_tokens=24, threads=1)


def test_both_sides_do_identical_work_and_are_timed(tmp_path):
    out = train_vs_trl.main(train_vs_trl.Args(**SMALL, results_dir=str(tmp_path)))
    report = json.loads((tmp_path / "train_vs_trl.json").read_text())
    assert report["ratio_tokens_per_s"] == pytest.approx(out["ratio_tokens_per_s"])
    assert set(out["ratio_tokens_per_s"]) == {"ours", "ours_shared"} and min(out["ratio_tokens_per_s"].values()) > 0
    ours, shared, trl = (report["steps"][k] for k in ("ours", "ours_shared", "trl"))
    assert len(ours) == len(shared) == len(trl) == 1 + 2  # the warm-up step, then one round of 2
    for o, x, t in zip(ours, shared, trl):
        assert o["step"] == x["step"] == t["step"]
        assert o["completions"] == x["completions"] == t["completions"] == 2 * 4  # identical work: the same batch shape ...
        assert o["problems"] == x["problems"] == t["problems"] and len(set(o["problems"])) == 2  # ... on the same problems
        assert o["threads"] == t["threads"] == 1
        for side in (o, x, t):
            assert side["seconds"] > 0 and 0 < side["tokens"] <= side["completions"] * 24
        assert t["tokens_logged"] == t["tokens"]  # our count of TRL's tokens is TRL's own
    for side in ("ours", "ours_shared", "trl"):
        (r,) = report["rounds"][side]
        assert r["s_per_step"] > 0 and r["tokens_per_s"] > 0 and r["completions"] == 2 * 2 * 4
    rows = {row["learner"]: row for row in report["rows"]}
    for side, label in train_vs_trl.OURS.items():
        assert rows[f"{label} / TRL"]["completion tokens/s"] == pytest.approx(report["ratio_tokens_per_s"][side], abs=1e-3)
    assert report["identical_work_steps"] == 3 and report["trl_settings"]["gradient_checkpointing"] is False
    md = (tmp_path / "train_vs_trl.md").read_text()
    assert md.count("not met") == sum(not met for met in report["target_met"].values())


@pytest.mark.parametrize("bad, option", [({"group": 1}, "--group"), ({"rounds": 0}, "--rounds"),
                                         ({"steps_per_round": 0}, "--steps-per-round")])
def test_bad_options_name_themselves(tmp_path, bad, option):
    with pytest.raises(SystemExit, match=option):
        train_vs_trl.main(train_vs_trl.Args(**{**SMALL, **bad}, results_dir=str(tmp_path)))
    assert not any(tmp_path.iterdir())
