"""A run's outputs: metrics (JSONL + TensorBoard), atomic checkpoints, and plots."""

from __future__ import annotations

import json
import os
import random
import shutil
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch


class RunDir:
    """`out_dir/run_name/`: config.json, metrics.jsonl, tb/, checkpoint (a link to the newest
    `checkpoint-<step>/`), plots and summary. With `write=False` (a torchrun rank other than 0) it
    knows the path and writes nothing."""

    def __init__(self, path: str | Path, config, resume: bool = False, write: bool = True, overwrite: bool = False,
                 start: int = 0):
        self.path, self.write = Path(path), write
        if not write:
            return
        if not resume:
            check_fresh(self.path, overwrite)
            if self.path.exists():  # an earlier run the caller asked to replace: none of its files may outlive it
                shutil.rmtree(self.path)
        self.path.mkdir(parents=True, exist_ok=True)
        (self.path / "config.json").write_text(json.dumps(asdict(config), indent=2))
        self.metrics_path = self.path / "metrics.jsonl"
        from torch.utils.tensorboard import SummaryWriter

        # purge_step: on a resume, drop the events a killed run wrote past its checkpoint, as truncate_after does
        self.tb = SummaryWriter(str(self.path / "tb"), purge_step=start if resume else None)

    def log(self, step: int, metrics: dict) -> None:
        if not self.write:
            return
        with self.metrics_path.open("a") as f:
            f.write(json.dumps({"step": step, **metrics}) + "\n")
        for k, v in metrics.items():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                self.tb.add_scalar(k, v, step)

    def history(self) -> list[dict]:
        if not self.metrics_path.exists():
            return []
        # Only newline-terminated lines: a kill in the middle of `log` leaves a partial last one.
        lines = self.metrics_path.read_text().split("\n")[:-1]
        return [json.loads(line) for line in lines if line.strip()]

    def truncate_after(self, step: int) -> None:
        """Drop metric lines a killed run wrote past its last checkpoint."""
        if not self.write:
            return
        keep = [r for r in self.history() if r["step"] < step]
        tmp = self.metrics_path.with_name(self.metrics_path.name + ".tmp")
        with tmp.open("w") as f:  # a kill mid-write leaves the old file whole
            f.write("".join(json.dumps(r) + "\n" for r in keep))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.metrics_path)

    def close(self):
        if self.write:
            self.tb.close()


def check_fresh(path: str | Path, overwrite: bool) -> None:
    """Fail before a fresh run writes into an earlier one: its checkpoint would later be resumed under the new
    run's options, and its events and plots would mix with the new run's."""
    path = Path(path)
    if not path.exists() or not any(path.iterdir()):
        return
    if not (path / "config.json").exists():
        raise SystemExit(f"error: {path} exists and is not a run directory: pick another --run-name or --out-dir")
    if not overwrite:
        raise SystemExit(f"error: {path} already holds a run: --resume {path} continues it, --overwrite replaces it "
                         "(its checkpoints, metrics and plots are deleted), or pick another --run-name")


def load_config(run_dir: str | Path) -> dict:
    path = Path(run_dir) / "config.json"
    if not path.exists():
        raise SystemExit(f"error: --resume {str(run_dir)!r} has no config.json; is it a run directory?")
    return json.loads(path.read_text())


# ---------------------------------------------------------------- checkpoints
# Layout: each save writes a complete `checkpoint-<step>/state.pt` (fsync'd) under a temp
# name, renames it into place, then atomically repoints the `checkpoint` symlink at it
# (os.replace of a fresh link) and only then deletes the older `checkpoint-*` dirs. So
# `run_dir/checkpoint/state.pt` (what `load_checkpoint` and `baselines.runs` read) is at every
# instant either the previous complete checkpoint or the new one; a SIGKILL anywhere leaves at
# most stray temp/old dirs, which the next save removes.
CHECKPOINT = "checkpoint"
_TMP_PREFIX = ".checkpoint.tmp"


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _step_dirs(run_dir: Path) -> list[Path]:
    """The `checkpoint-<step>[.n]` dirs, newest (highest step, then latest suffix) first."""
    def key(p: Path):
        step, _, n = p.name[len(CHECKPOINT) + 1:].partition(".")
        return (int(step), int(n or 0))

    found = [p for p in run_dir.glob(f"{CHECKPOINT}-*")
             if p.is_dir() and not p.is_symlink() and p.name[len(CHECKPOINT) + 1:].replace(".", "").isdigit()]
    return sorted(found, key=key, reverse=True)


def checkpoint_state_path(run_dir: str | Path) -> Path | None:
    """The state.pt to resume from: `checkpoint/state.pt`, else (a run dir caught mid-migration
    from the old layout, or written by the old two-rename save) the newest complete
    `checkpoint-<step>/`, else `.checkpoint.old/`; None if there is none."""
    run_dir = Path(run_dir)
    candidates = [run_dir / CHECKPOINT, *_step_dirs(run_dir), run_dir / ".checkpoint.old"]
    return next((c / "state.pt" for c in candidates if (c / "state.pt").is_file()), None)


def save_checkpoint(run_dir: Path, step: int, policies: dict, optimizers: dict, schedulers: dict, extra: dict) -> Path:
    """Everything a resume needs, as `checkpoint-<step>/state.pt` with `checkpoint` switched to it
    atomically (see the layout note above); the run dir always holds a loadable checkpoint."""
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    link = run_dir / CHECKPOINT
    current = os.readlink(link) if link.is_symlink() else None
    for stale in run_dir.glob(f"{_TMP_PREFIX}*"):  # left by a killed save (or this one's pid)
        if stale.is_dir() and not stale.is_symlink():
            shutil.rmtree(stale)
        else:
            stale.unlink(missing_ok=True)
    tmp = run_dir / f"{_TMP_PREFIX}{os.getpid()}"
    os.mkdir(tmp)
    with open(tmp / "state.pt", "wb") as f:
        torch.save({
            "step": step,
            "params": {k: [p.detach().cpu().clone() for p in pol.parameters()] for k, pol in policies.items()},
            "optimizers": {k: o.state_dict() for k, o in optimizers.items()},
            "schedulers": {k: s.state_dict() for k, s in schedulers.items()},
            "rng": {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()},
            "extra": extra,
            "time": time.time(),
        }, f)
        f.flush()
        os.fsync(f.fileno())
    _fsync_dir(tmp)
    # A fresh name: never the dir `checkpoint` points at now (a resumed run saving a step again).
    name, n = f"{CHECKPOINT}-{step:06d}", 0
    while name == current or (run_dir / name).exists():
        if name != current:  # a complete-or-not leftover of a killed save: not the live one
            shutil.rmtree(run_dir / name)
            continue
        n += 1
        name = f"{CHECKPOINT}-{step:06d}.{n}"
    os.rename(tmp, run_dir / name)
    _fsync_dir(run_dir)
    if link.exists() and not link.is_symlink():  # the old layout's real dir: keep it loadable meanwhile
        legacy = run_dir / f"{CHECKPOINT}-legacy"
        shutil.rmtree(legacy, ignore_errors=True)
        os.rename(link, legacy)  # until the link below exists, checkpoint_state_path finds `name`
    new_link = run_dir / f"{_TMP_PREFIX}link{os.getpid()}"
    os.symlink(name, new_link)
    os.replace(new_link, link)
    _fsync_dir(run_dir)
    for old in [*_step_dirs(run_dir), run_dir / f"{CHECKPOINT}-legacy", run_dir / ".checkpoint.old"]:
        if old.name != name and old.exists():
            shutil.rmtree(old)
    return link


def load_checkpoint(run_dir: Path, policies: dict, optimizers: dict, schedulers: dict) -> tuple[int, dict]:
    """Restore in place; returns (the step to continue from, extra)."""
    path = checkpoint_state_path(run_dir)
    if path is None:
        raise SystemExit(f"error: --resume {str(run_dir)!r} has no checkpoint yet (checkpoint/state.pt)")
    state = torch.load(path, weights_only=False)
    restore_params(policies, state, run_dir)
    for k, o in optimizers.items():
        o.load_state_dict(state["optimizers"][k])
    for k, s in schedulers.items():
        s.load_state_dict(state["schedulers"][k])
    random.setstate(state["rng"]["python"])
    np.random.set_state(state["rng"]["numpy"])
    torch.set_rng_state(state["rng"]["torch"])
    return state["step"], state["extra"]


def restore_params(policies: dict, state: dict, run_dir) -> None:
    """Copy a checkpoint's trainable weights into `policies` (keyed as they were saved)."""
    for k, pol in policies.items():
        saved, params = state["params"][k], pol.parameters()
        if len(saved) != len(params):
            raise SystemExit(f"error: {run_dir}: checkpoint policy {k!r} has {len(saved)} tensors, model has {len(params)}")
        with torch.no_grad():
            for p, t in zip(params, saved):
                p.copy_(t)


# ---------------------------------------------------------------- plots
def plot_series(path: Path, history: list[dict], panels: dict[str, list[str]], title: str) -> Path | None:
    """One PNG with a panel per entry of `panels` ({panel title: [metric keys]}), over steps."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if not history:
        return None
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.4), squeeze=False)
    for ax, (name, keys) in zip(axes[0], panels.items()):
        for k in keys:
            pts = [(r["step"], r[k]) for r in history if isinstance(r.get(k), (int, float))]
            if pts:
                xs, ys = zip(*pts)
                ax.plot(xs, ys, marker="o" if len(pts) < 8 else None, label=k, lw=1.2)
        ax.set_title(name)
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def smooth(history: list[dict], key: str, window: int = 10) -> None:
    """Add `key_avg`, a trailing mean over `window` steps, to each row that has `key`."""
    vals = []
    for r in history:
        if key in r:
            vals.append(r[key])
            r[f"{key}_avg"] = sum(vals[-window:]) / len(vals[-window:])
