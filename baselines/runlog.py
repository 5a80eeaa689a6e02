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
    """`out_dir/run_name/`: config.json, metrics.jsonl, tb/, checkpoint/, plots and summary."""

    def __init__(self, path: str | Path, config, resume: bool = False):
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        (self.path / "config.json").write_text(json.dumps(asdict(config), indent=2))
        self.metrics_path = self.path / "metrics.jsonl"
        if not resume and self.metrics_path.exists():
            self.metrics_path.unlink()
        from torch.utils.tensorboard import SummaryWriter

        self.tb = SummaryWriter(str(self.path / "tb"), purge_step=None)

    def log(self, step: int, metrics: dict) -> None:
        with self.metrics_path.open("a") as f:
            f.write(json.dumps({"step": step, **metrics}) + "\n")
        for k, v in metrics.items():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                self.tb.add_scalar(k, v, step)

    def history(self) -> list[dict]:
        if not self.metrics_path.exists():
            return []
        return [json.loads(line) for line in self.metrics_path.read_text().splitlines() if line.strip()]

    def truncate_after(self, step: int) -> None:
        """Drop metric lines a killed run wrote past its last checkpoint."""
        keep = [r for r in self.history() if r["step"] < step]
        self.metrics_path.write_text("".join(json.dumps(r) + "\n" for r in keep))

    def close(self):
        self.tb.close()


def load_config(run_dir: str | Path) -> dict:
    path = Path(run_dir) / "config.json"
    if not path.exists():
        raise SystemExit(f"error: --resume {str(run_dir)!r} has no config.json; is it a run directory?")
    return json.loads(path.read_text())


# ---------------------------------------------------------------- checkpoints
def save_checkpoint(run_dir: Path, step: int, policies: dict, optimizers: dict, schedulers: dict, extra: dict) -> Path:
    """Everything a resume needs, written to a temp dir then renamed over `checkpoint/`."""
    final, tmp = Path(run_dir) / "checkpoint", Path(run_dir) / f".checkpoint.tmp{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    torch.save({
        "step": step,
        "params": {k: [p.detach().cpu().clone() for p in pol.parameters()] for k, pol in policies.items()},
        "optimizers": {k: o.state_dict() for k, o in optimizers.items()},
        "schedulers": {k: s.state_dict() for k, s in schedulers.items()},
        "rng": {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()},
        "extra": extra,
        "time": time.time(),
    }, tmp / "state.pt")
    old = Path(run_dir) / ".checkpoint.old"
    shutil.rmtree(old, ignore_errors=True)
    if final.exists():
        final.rename(old)
    tmp.rename(final)
    shutil.rmtree(old, ignore_errors=True)
    return final


def load_checkpoint(run_dir: Path, policies: dict, optimizers: dict, schedulers: dict) -> tuple[int, dict]:
    """Restore in place; returns (the step to continue from, extra)."""
    path = Path(run_dir) / "checkpoint" / "state.pt"
    if not path.exists():
        raise SystemExit(f"error: --resume {str(run_dir)!r} has no checkpoint yet (checkpoint/state.pt)")
    state = torch.load(path, weights_only=False)
    for k, pol in policies.items():
        params = pol.parameters()
        if len(params) != len(state["params"][k]):
            raise SystemExit(f"error: checkpoint policy {k!r} has {len(state['params'][k])} tensors, model has {len(params)}")
        with torch.no_grad():
            for p, saved in zip(params, state["params"][k]):
                p.copy_(saved)
    for k, o in optimizers.items():
        o.load_state_dict(state["optimizers"][k])
    for k, s in schedulers.items():
        s.load_state_dict(state["schedulers"][k])
    random.setstate(state["rng"]["python"])
    np.random.set_state(state["rng"]["numpy"])
    torch.set_rng_state(state["rng"]["torch"])
    return state["step"], state["extra"]


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
