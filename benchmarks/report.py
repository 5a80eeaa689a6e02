"""Write a benchmark's rows as a printed table, JSON and markdown under benchmarks/results/."""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import time
from pathlib import Path
from typing import Callable

from baselines.report import markdown_table

RESULTS = Path(__file__).resolve().parent / "results"


def require_at_least(args, bounds: dict[str, float]) -> None:
    """Fail before any work when an option of `args` is below its bound in `bounds`, naming it."""
    for name, low in bounds.items():
        if getattr(args, name) < low:
            raise SystemExit(f"error: --{name.replace('_', '-')} must be at least {low}, got {getattr(args, name)}")


def require_positive(args, names: tuple[str, ...]) -> None:
    """Fail before any work when one of the counting options `names` of `args` is below 1, naming it."""
    require_at_least(args, dict.fromkeys(names, 1))


# ---------------------------------------------------------------- timing and memory on CUDA (torch imported late:
# peak_memory measures a process's memory from before torch is imported)
def require_device(device: str, hint: str = "") -> None:
    """Fail before any work when --device cuda names a GPU torch cannot see."""
    import torch

    if device == "cuda" and not torch.cuda.is_available():
        raise SystemExit(f"error: --device cuda, but torch sees no GPU{hint}")


def clock(device: str) -> Callable[[], float]:
    """perf_counter; on CUDA after the queued kernels finish (CUDA runs asynchronously), so a span is charged its own."""
    import torch

    if device != "cuda":
        return time.perf_counter
    return lambda: (torch.cuda.synchronize(), time.perf_counter())[1]


def peak_gib(device: str, reset: bool = False) -> float | None:
    """The process's peak GPU memory since the last reset, in GiB (None off CUDA); `reset` starts a new span."""
    import torch

    if device != "cuda":
        return None
    peak = torch.cuda.max_memory_allocated() / 2**30
    if reset:
        torch.cuda.reset_peak_memory_stats()
    return peak


def gpu_name() -> str:
    """The GPU and CUDA version, e.g. 'NVIDIA H100 80GB HBM3, CUDA 13.0'."""
    import torch

    return f"{torch.cuda.get_device_name()}, CUDA {torch.version.cuda}"


def command_line(module: str, args) -> str:
    """`python -m <module>` with the options of the dataclass `args` that differ from their defaults:
    the command line that reproduces a run."""
    default = type(args)()
    flags = [f"--{f.name.replace('_', '-')} {getattr(args, f.name)}" for f in dataclasses.fields(args)
             if getattr(args, f.name) != getattr(default, f.name)]
    return " ".join([f"python -m {module}", *flags])


def write_report(name: str, title: str, rows: list[dict], notes: list[str] = (), extra: dict | None = None,
                 out_dir: Path = RESULTS, command: str | None = None) -> tuple[Path, Path]:
    """Print the table and write `<name>.json` and `<name>.md`; returns both paths.

    `command` is what regenerates the file (default: `python -m benchmarks.<name>`)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    table = markdown_table(rows)
    md = f"# {title}\n\n{table}\n\n" + "".join(f"- {n}\n" for n in notes) + \
        f"\nMachine: {machine}. Generated {time.strftime('%Y-%m-%d %H:%M')} by `{command or 'python -m benchmarks.' + name}`.\n"
    print(f"\n{title}\n{table}\n" + "".join(f"- {n}\n" for n in notes))
    jpath, mpath = out_dir / f"{name}.json", out_dir / f"{name}.md"
    jpath.write_text(json.dumps({"title": title, "machine": machine, "rows": rows, "notes": list(notes),
                                 **(extra or {})}, indent=2))
    mpath.write_text(md)
    print(f"wrote {jpath} and {mpath}")
    return jpath, mpath
