"""Are two runs of `python -m benchmarks.learners` the same numbers? (the check behind a refactor)

    python -m benchmarks.same_runs BEFORE_DIR AFTER_DIR    # each holding agon_grpo-s0/ and grpo-s0/

Compares each learner's `metrics.jsonl` row by row (values and key order, `step_time` aside)
and its `summary.md` (the wall and training-time figures aside). Exits 1 if anything differs.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path


def rows(path: Path) -> list[dict]:
    return [{k: v for k, v in json.loads(x).items() if k != "step_time"} for x in path.read_text().splitlines()]


def main(before: str, after: str) -> bool:
    ok = True
    for run in ("agon_grpo-s0", "grpo-s0"):
        a, b = rows(Path(before, run, "metrics.jsonl")), rows(Path(after, run, "metrics.jsonl"))
        same_rows = a == b and all(list(x) == list(y) for x, y in zip(a, b))
        # both timings of the summary's line "<wall> s wall, <train> s of it in training steps" vary run to run
        wall = lambda p: re.sub(r"\d+ s (wall|of it)", "", Path(p, run, "summary.md").read_text())  # noqa: E731
        same_summary = wall(before) == wall(after)
        print(f"{run}: {len(a)} vs {len(b)} metric rows, identical: {same_rows}; summary.md identical: {same_summary}")
        ok &= same_rows and same_summary
    print("IDENTICAL" if ok else "DIFFERENT")
    return ok


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    sys.exit(0 if main(*sys.argv[1:]) else 1)
