"""The shared run skeleton: the step-indexed data stream, and a resume that matches an uninterrupted run."""

import os
import signal
import subprocess
import sys
import time

import pytest

from baselines.training import batch_for_step
from problems.record import Problem

from .cli import ROOT, cli, metrics


def test_batch_for_step_is_a_function_of_the_step():
    ps = [Problem(id=str(i), question=f"q{i}", answer="1") for i in range(7)]
    a = [batch_for_step(ps, s, 3, seed=5) for s in range(5)]
    assert a == [batch_for_step(ps, s, 3, seed=5) for s in range(5)]
    first_epoch = [p.id for b in a for p in b][:7]
    assert sorted(first_epoch) == sorted(p.id for p in ps)


@pytest.mark.slow
def test_resume_after_kill_matches_uninterrupted(tmp_path):
    common = ("--steps", "8", "--group-size", "4", "--checkpoint-every", "2")
    full = cli("baselines.agon_grpo", tmp_path / "full", *common)
    assert full.returncode == 0, full.stderr[-2000:]
    proc = cli("baselines.agon_grpo", tmp_path / "killed", *common, wait=False)
    ckpt = tmp_path / "killed" / "run" / "checkpoint" / "state.pt"
    deadline = time.time() + 300
    while not ckpt.exists() and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not (tmp_path / "killed" / "run" / "summary.json").exists(), "the run finished before it could be killed"
    resumed = subprocess.run([sys.executable, "-m", "baselines.agon_grpo", "--resume", str(tmp_path / "killed" / "run"),
                              "--no-progress"], cwd=ROOT, capture_output=True, text=True, timeout=600,
                             env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert "resumed" in resumed.stdout
    assert metrics(tmp_path / "killed" / "run") == metrics(tmp_path / "full" / "run")


