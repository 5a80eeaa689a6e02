"""The shared run skeleton: the step-indexed data stream, one set of problems behind the held-out curve,
and a resume that matches an uninterrupted run."""

import os
import signal
import subprocess
import sys
import time

import pytest

from baselines.config import EvalConfig, LearnerArgs
from baselines.evaluate import summary_row
from baselines.training import CURVE_PROBLEMS, batch_for_step, finish, train
from problems.record import Problem

from .cli import ROOT, cli, metrics


def test_batch_for_step_is_a_function_of_the_step():
    ps = [Problem(id=str(i), question=f"q{i}", answer="1") for i in range(7)]
    a = [batch_for_step(ps, s, 3, seed=5) for s in range(5)]
    assert a == [batch_for_step(ps, s, 3, seed=5) for s in range(5)]
    first_epoch = [p.id for b in a for p in b][:7]
    assert sorted(first_epoch) == sorted(p.id for p in ps)


def test_every_point_of_the_held_out_curve_is_over_the_same_problems(tmp_path):
    """Problems past the curve's slice are all right: the full-set number differs, the curve must not dip."""
    test = [Problem(id=str(i), question=f"q{i}", answer="1") for i in range(CURVE_PROBLEMS + 50)]
    seen = []

    def evaluate(problems, cfg):
        seen.append((len(problems), cfg.greedy))
        return [summary_row("M", [int(p.id) >= CURVE_PROBLEMS for p in problems], [3] * len(problems), None, samples=1)]

    args = LearnerArgs(steps=4, eval_every=2, checkpoint_every=0, progress=False, out_dir=str(tmp_path), run_name="run",
                       eval=EvalConfig(problems=len(test), samples=1))
    run, before = train(args, "fake", "run", {}, {}, {}, lambda s: {"pass": 0.5}, evaluate, test, lambda m: {})
    finish(run, "fake", args, before, evaluate(test, args.eval), None, lambda h: [], 0.0)
    history = run.history()
    curve = [(r["step"], r["eval/M"]) for r in history if "eval/M" in r]
    assert curve == [(0, 0.0), (2, 0.0), (4, 0.0)]  # before, after 2 updates, after all 4
    assert [(r["step"], r["eval_full/M"]) for r in history if "eval_full/M" in r] == [(0, 50 / 150), (4, 50 / 150)]
    assert seen == [(150, True), (CURVE_PROBLEMS, False), (150, True)]
    assert not any(isinstance(v, list) for r in history for v in r.values())  # per-problem lists stay in summary.json


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




def test_a_resume_keeps_the_runs_options_but_may_move_its_servers(tmp_path):
    import json
    from dataclasses import asdict

    from baselines import agon_grpo
    from baselines.training import resumed

    first = agon_grpo.Args(model="/models/base", lora_rank=8, backend="server", servers="http://old:8000",
                           adapter_dir="/shared/a", steps=40, lr=3e-5)
    (tmp_path / "config.json").write_text(json.dumps(asdict(first)))
    again = resumed(agon_grpo.Args(resume=str(tmp_path)))  # nothing else given: the run's own options
    assert (again.servers, again.adapter_dir, again.steps, again.lr) == ("http://old:8000", "/shared/a", 40, 3e-5)
    moved = resumed(agon_grpo.Args(resume=str(tmp_path), servers="http://new:8000,http://new:8001", steps=99))
    assert (moved.servers, moved.adapter_dir, moved.steps) == ("http://new:8000,http://new:8001", "/shared/a", 40)
    assert moved.resume == str(tmp_path) and moved.backend == "server" and moved.lora_rank == 8
