"""The data-parallel benchmark: its medians leave out the first step, and options that leave none are refused."""

import json
import subprocess

import pytest

from benchmarks import distributed


def _fake_launch(cmd, **_):
    """A learner's run that logs --steps steps, the first one slow (the warm-up)."""
    out = distributed.Path(cmd[cmd.index("--out-dir") + 1]) / "run"
    out.mkdir(parents=True)
    times = [10.0] + [1.0] * (int(cmd[cmd.index("--steps") + 1]) - 1)
    out.joinpath("metrics.jsonl").write_text("".join(json.dumps({"step": s, "step_time": t}) + "\n" for s, t in enumerate(times)))
    return subprocess.CompletedProcess(cmd, 0, "", "")


def test_the_first_step_is_left_out_of_the_median(monkeypatch):
    monkeypatch.setattr(distributed.subprocess, "run", _fake_launch)
    assert distributed.measure("grpo", None, distributed.Args(steps=3))["step time (s)"] == 1.0


@pytest.mark.parametrize("bad, option", [({"steps": 1}, "--steps"), ({"group": 1}, "--group"), ({"threads": 0}, "--threads")])
def test_bad_options_name_themselves_before_any_launch(tmp_path, monkeypatch, bad, option):
    monkeypatch.setattr(distributed.subprocess, "run", _fake_launch)
    with pytest.raises(SystemExit, match=option):
        distributed.main(distributed.Args(**bad, processes="plain", learners="grpo", out=str(tmp_path)))
    assert not any(tmp_path.iterdir())
