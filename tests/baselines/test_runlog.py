"""Run directories: metrics, and checkpoints that a kill at any point leaves loadable."""

import os
import random
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import torch

from baselines.runlog import RunDir, checkpoint_state_path, load_checkpoint, save_checkpoint

ROOT = Path(__file__).resolve().parents[2]
SHAPES = [(64, 32), (32,), (7, 3, 5)]


class Pol:
    def __init__(self, fill: float, shapes=SHAPES):
        self.params = [torch.full(s, float(fill)) for s in shapes]

    def parameters(self):
        return self.params


@pytest.fixture(autouse=True)
def keep_rng():
    """load_checkpoint restores the saved RNG states; give the test process its own back."""
    states = random.getstate(), np.random.get_state(), torch.get_rng_state()
    yield
    random.setstate(states[0]), np.random.set_state(states[1]), torch.set_rng_state(states[2])


def save(run_dir, step):
    return save_checkpoint(run_dir, step, {"policy": Pol(step)}, {}, {}, {"tag": f"s{step}"})


def load(run_dir, shapes=SHAPES):
    """(step, extra) of what loads, after checking every tensor holds that step's values."""
    pol = Pol(-1, shapes)
    step, extra = load_checkpoint(run_dir, {"policy": pol}, {}, {})
    assert all(bool((p == step).all()) for p in pol.parameters()), f"tensors of another step than {step}"
    assert extra == {"tag": f"s{step}"}
    return step


# ---------------------------------------------------------------- a kill at every point of the write
class Killed(BaseException):
    """Not an Exception: nothing in the save may catch it, as nothing can catch SIGKILL."""


def kill_at(monkeypatch, k: int, log: list):
    """Make the k-th filesystem effect of a save (0-based) die before it happens; a torch.save
    dies halfway through its bytes. Every effect performed is appended to `log`."""
    count = [0]
    real_save = torch.save

    def wrap(name, fn):
        def effect(*args, **kwargs):
            if count[0] == k:
                count[0] += 1
                if name == "torch.save":
                    f = args[1]
                    if isinstance(f, (str, Path)):
                        Path(f).write_bytes(b"PK\x03\x04 half a zip")  # the first bytes, never the rest
                    else:
                        f.write(b"PK\x03\x04 half a zip")
                raise Killed(f"killed at {name}{args[:2]}")
            count[0] += 1
            log.append((name, args[:2]))
            return fn(*args, **kwargs)
        return effect

    monkeypatch.setattr(torch, "save", wrap("torch.save", real_save))
    for name in ("fsync", "mkdir", "rename", "replace", "symlink", "unlink", "rmdir"):
        monkeypatch.setattr(os, name, wrap(f"os.{name}", getattr(os, name)))
    monkeypatch.setattr(shutil, "rmtree", wrap("shutil.rmtree", shutil.rmtree))


def legacy_checkpoint(run_dir: Path, step: int):
    """A run dir as the old save left it: `checkpoint/` a real directory."""
    real = run_dir / "real"
    save(real, step)
    shutil.copytree(real / "checkpoint", run_dir / "checkpoint")  # follows the link: a real dir
    shutil.rmtree(real)


@pytest.mark.parametrize("start", ["link", "legacy"])
def test_a_kill_at_every_point_of_a_save_leaves_a_loadable_checkpoint(tmp_path, monkeypatch, start):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (save if start == "link" else legacy_checkpoint)(run_dir, 1)
    assert load(run_dir) == 1
    prev, k, points = 1, 0, 0
    while True:
        new = prev + 1
        log = []
        with monkeypatch.context() as m:
            kill_at(m, k, log)
            try:
                save(run_dir, new)
                finished = True
            except Killed:
                finished = False
        switched = any(name == "os.replace" and str(args[1]).endswith("/checkpoint") for name, args in log)
        placed = any(name == "os.rename" and Path(args[1]).name.startswith(f"checkpoint-{new:06d}") for name, args in log)
        got = load(run_dir)  # whatever state the kill left behind
        if switched:
            assert got == new, (k, log)
        elif not placed:
            assert got == prev, (k, log)
        else:  # the legacy dir moved aside, the link not made yet: the new complete dir loads
            assert got in (prev, new), (k, log)
        assert (run_dir / "checkpoint" / "state.pt").is_file() or start == "legacy", (k, log)
        prev = got
        points += not finished
        if finished:
            break
        k += 1
    assert points >= 8  # mkdir, torch.save, fsyncs, renames, the link switch, the deletions
    # After all that debris, one more save cleans up: the link and one checkpoint dir.
    save(run_dir, prev + 1)
    assert load(run_dir) == prev + 1
    assert sorted(p.name for p in run_dir.iterdir()) == ["checkpoint", f"checkpoint-{prev + 1:06d}"]
    assert (run_dir / "checkpoint").is_symlink()


def test_the_run_dir_keeps_a_loadable_checkpoint_in_every_window(tmp_path):
    """`checkpoint` gone (the old two-rename save killed between its renames, or the migration
    window): the newest complete checkpoint-<step>/, else .checkpoint.old/, still loads."""
    run_dir = tmp_path / "run"
    save(run_dir, 3)
    os.rename(run_dir / "checkpoint-000003", run_dir / ".checkpoint.old")
    os.unlink(run_dir / "checkpoint")
    assert load(run_dir) == 3
    save(run_dir, 4)
    save(run_dir, 5)
    os.unlink(run_dir / "checkpoint")
    (run_dir / "checkpoint-000009").mkdir()  # an empty leftover is skipped
    assert checkpoint_state_path(run_dir) == run_dir / "checkpoint-000005" / "state.pt"
    assert load(run_dir) == 5
    with pytest.raises(SystemExit, match="no checkpoint yet"):
        load_checkpoint(tmp_path / "empty", {}, {}, {})


def test_saving_the_live_step_again_never_overwrites_it(tmp_path):
    """A resumed run can save the step the link points at; it goes to a fresh dir."""
    save(tmp_path, 2)
    save_checkpoint(tmp_path, 2, {"policy": Pol(2)}, {}, {}, {"tag": "s2"})
    assert os.readlink(tmp_path / "checkpoint") == "checkpoint-000002.1"
    assert load(tmp_path) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint", "checkpoint-000002.1"]


# ---------------------------------------------------------------- real SIGKILLs
CHILD = textwrap.dedent("""
    # Imports torch once, then forks a writer per line read: each writer saves in a loop until killed.
    import os, sys, torch
    from baselines.runlog import save_checkpoint

    class Pol:
        def __init__(self, fill):
            self.params = [torch.full((512, 1024), float(fill)) for _ in range(4)]  # 8 MB
        def parameters(self):
            return self.params

    for line in sys.stdin:
        pid = os.fork()
        if pid == 0:
            step = int(line)
            while True:
                save_checkpoint(sys.argv[1], step, {"policy": Pol(step)}, {}, {}, {"tag": f"s{step}"})
                print(os.getpid(), step, flush=True)
                step += 1
        os.waitpid(pid, 0)
        print("killed", flush=True)
""")


def test_sigkill_during_saves_leaves_the_last_checkpoint_loadable(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    rng, prev, shapes = random.Random(0), 0, [(512, 1024)] * 4
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(run_dir)], cwd=ROOT, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        for _ in range(4):
            proc.stdin.write(f"{prev + 1}\n")
            proc.stdin.flush()
            pid, first = map(int, proc.stdout.readline().split())  # one save done: now writing the next
            time.sleep(rng.uniform(0.0, 0.1))
            os.kill(pid, signal.SIGKILL)
            while proc.stdout.readline().strip() != "killed":  # what it wrote before dying
                pass
            got = load(run_dir, shapes)
            assert got >= first > prev
            prev = got
    finally:
        proc.kill()
        proc.wait()


# ---------------------------------------------------------------- metrics and RunDir
@dataclass
class Cfg:
    lr: float = 0.1
    name: str = "x"


def test_run_dir_metrics_history_and_truncate_after(tmp_path):
    run = RunDir(tmp_path / "r", Cfg())
    assert (tmp_path / "r" / "config.json").read_text().count('"lr": 0.1') == 1
    for s in range(5):
        run.log(s, {"loss": s / 10, "ok": True, "note": "n"})
    assert [r["step"] for r in run.history()] == [0, 1, 2, 3, 4]
    run.truncate_after(3)
    assert run.history() == [{"step": s, "loss": s / 10, "ok": True, "note": "n"} for s in range(3)]
    assert not (tmp_path / "r" / "metrics.jsonl.tmp").exists()
    with run.metrics_path.open("a") as f:
        f.write('{"step": 3, "lo')  # a kill in the middle of log()
    assert [r["step"] for r in run.history()] == [0, 1, 2]
    run.close()
    resumed = RunDir(tmp_path / "r", Cfg(), resume=True)
    resumed.truncate_after(2)
    assert [r["step"] for r in resumed.history()] == [0, 1]
    resumed.close()
    (tmp_path / "r" / "checkpoint-000002").mkdir()  # an earlier run's files, which a fresh run must not inherit
    with pytest.raises(SystemExit, match="already holds a run: --resume .* continues it, --overwrite replaces it"):
        RunDir(tmp_path / "r", Cfg())
    assert [r["step"] for r in resumed.history()] == [0, 1]  # the refusal changed nothing
    fresh = RunDir(tmp_path / "r", Cfg(), overwrite=True)
    assert fresh.history() == [] and not (tmp_path / "r" / "checkpoint-000002").exists()
    fresh.close()
    (tmp_path / "notarun").mkdir()
    (tmp_path / "notarun" / "data.txt").write_text("mine")
    with pytest.raises(SystemExit, match="exists and is not a run directory"):
        RunDir(tmp_path / "notarun", Cfg(), overwrite=True)
    assert (tmp_path / "notarun" / "data.txt").read_text() == "mine"


def test_a_resume_drops_the_tensorboard_events_past_its_checkpoint(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    run = RunDir(tmp_path / "r", Cfg())
    for s in range(5):
        run.log(s, {"loss": float(s)})
    run.close()
    resumed = RunDir(tmp_path / "r", Cfg(), resume=True, start=3)  # the killed run's checkpoint was at step 3
    resumed.log(3, {"loss": 30.0})
    resumed.close()
    events = EventAccumulator(str(tmp_path / "r" / "tb"))
    events.Reload()
    assert [(e.step, e.value) for e in events.Scalars("loss")] == [(0, 0), (1, 1), (2, 2), (3, 30)]
