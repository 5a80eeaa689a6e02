"""Write a benchmark's rows as a printed table, JSON and markdown under benchmarks/results/."""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import time
from pathlib import Path

from baselines.report import markdown_table

RESULTS = Path(__file__).resolve().parent / "results"


def require_positive(args, names: tuple[str, ...]) -> None:
    """Fail before any work when one of the counting options `names` of `args` is below 1, naming it."""
    for name in names:
        if getattr(args, name) < 1:
            raise SystemExit(f"error: --{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")


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
