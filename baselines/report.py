"""Tables: markdown formatting, and a learner's end-of-run table (pass@1 before and after,
the chosen cascade, win-rate trends)."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path


def markdown_table(rows: list[dict]) -> str:
    """Columns: every key of any row, in first-seen order (a cascade row adds conversion / keep)."""
    cols = list(dict.fromkeys(k for r in rows for k in r))
    fmt = lambda v: f"{v:,.4g}" if isinstance(v, float) else str(v)  # noqa: E731
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(fmt(r.get(c, "")) for c in cols) + " |" for r in rows]
    return "\n".join(lines)


def model_rows(rows: list[dict], prefix: str) -> dict[str, float]:
    """Flatten evaluation rows into metrics: `{prefix}{method}` = pass@1, `..._len` = mean length."""
    out = {}
    for r in rows:
        out[f"{prefix}{r['method']}"] = r["pass@1"]
        out[f"{prefix}{r['method']}_len"] = r["mean_length"]
    return out


def _fmt(r: dict) -> str:
    return f"{100 * r['pass@1']:.1f} [{100 * r['ci_low']:.1f}, {100 * r['ci_high']:.1f}]"


def trend(history: list[dict], key: str) -> tuple[float, float] | None:
    """Mean of `key` over the first and the last quarter of training steps."""
    vals = [r[key] for r in history if key in r and isinstance(r[key], (int, float))]
    if len(vals) < 4:
        return None
    q = max(1, len(vals) // 4)
    return sum(vals[:q]) / q, sum(vals[-q:]) / q


def final_table(run_path: Path, learner: str, args, before: list[dict], after: list[dict], direction: str | None,
                history: list[dict], wall_s: float) -> dict:
    """Print and write `summary.md` / `summary.json` in the run directory; returns the summary."""
    rows = []
    for b, a in zip(before, after):
        row = {"model": a["method"], "pass@1 before": _fmt(b), "pass@1 after": _fmt(a),
               "greedy before": f"{100 * b.get('greedy', float('nan')):.1f}",
               "greedy after": f"{100 * a.get('greedy', float('nan')):.1f}",
               "length after (tokens)": f"{a['mean_length']:.1f}"}
        if "conversion" in a:
            row["conversion / keep after"] = f"{a['conversion']:.2f} / {a['keep']:.2f}"
        if a["method"] == direction:
            row["model"] += " (chosen on validation)"
        rows.append(row)
    trends = {k: trend(history, k) for k in ("win/A", "win/B", "conversion", "keep")}
    n = after[0]["n"]
    lines = [f"{learner}: held-out {args.eval.tier} tier, {n} samples per row "
             f"({args.eval.problems} problems × {args.eval.samples}), 95% Clopper-Pearson intervals; {wall_s:.0f} s wall."]
    for k, t in trends.items():
        if t:
            lines.append(f"{k}: {t[0]:.3f} in the first quarter of steps → {t[1]:.3f} in the last")
    md = markdown_table(rows) + "\n\n" + "\n".join(f"- {x}" for x in lines) + "\n"
    print("\n" + md)
    summary = {"learner": learner, "args": asdict(args), "before": before, "after": after, "direction": direction,
               "trends": trends, "wall_s": wall_s}
    (run_path / "summary.md").write_text(md)
    (run_path / "summary.json").write_text(json.dumps(summary, indent=2))
    return summary
