"""Write a benchmark's rows as a printed table, JSON and markdown under benchmarks/results/."""

from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path

from baselines.report import markdown_table

RESULTS = Path(__file__).resolve().parent / "results"


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
