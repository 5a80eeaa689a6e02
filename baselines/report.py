"""Tables: markdown formatting, and a learner's end-of-run table (pass@1 before and after
with the paired change, the chosen cascade, training trends)."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from .evaluate import paired_bootstrap

# What a learner logs per step as its own training pass rate: GRPO, then Agon's two roles.
TRAIN_PASS = ("pass", "pass/drafter", "pass/challenger")


def markdown_table(rows: list[dict]) -> str:
    """Columns: every key of any row, in first-seen order (a cascade row adds conversion / keep)."""
    cols = list(dict.fromkeys(k for r in rows for k in r))
    fmt = lambda v: f"{v:,.4g}" if isinstance(v, float) else str(v)  # noqa: E731
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(fmt(r.get(c, "")) for c in cols) + " |" for r in rows]
    return "\n".join(lines)


def model_rows(rows: list[dict], prefix: str) -> dict[str, float]:
    """Flatten evaluation rows into metrics: `{prefix}{method}` = pass@1, `..._len` = mean length
    (scalars only: a row's `per_problem` list stays out of metrics.jsonl and TensorBoard)."""
    out = {}
    for r in rows:
        out[f"{prefix}{r['method']}"] = r["pass@1"]
        out[f"{prefix}{r['method']}_len"] = r["mean_length"]
    return out


def slice_rows(rows: list[dict], k: int, prefix: str) -> dict[str, float]:
    """`{prefix}{method}` = pass@1 over the first `k` problems, read off each row's `per_problem`."""
    out = {}
    for r in rows:
        if len(r.get("per_problem", ())) < k:
            raise ValueError(f"row {r['method']!r} has {len(r.get('per_problem', ()))} per-problem results, needs {k}")
        out[f"{prefix}{r['method']}"] = sum(r["per_problem"][:k]) / k
    return out


def paired_delta(before: dict, after: dict) -> dict | None:
    """after − before over the same problems (paired bootstrap), or None if a row lacks `per_problem`."""
    if "per_problem" not in before or "per_problem" not in after:
        return None
    return paired_bootstrap(before["per_problem"], after["per_problem"])


def fmt_delta(d: dict | None) -> str:
    """A paired change in points: '+3.1 [+0.4, +5.9]'."""
    return "" if d is None else f"{100 * d['delta']:+.1f} [{100 * d['ci_low']:+.1f}, {100 * d['ci_high']:+.1f}]"


def _fmt(r: dict) -> str:
    return f"{100 * r['pass@1']:.1f} [{100 * r['ci_low']:.1f}, {100 * r['ci_high']:.1f}]"


def trend(history: list[dict], key: str) -> tuple[float, float] | None:
    """Mean of `key` over the first and the last quarter of training steps."""
    vals = [r[key] for r in history if key in r and isinstance(r[key], (int, float))]
    if len(vals) < 4:
        return None
    q = max(1, len(vals) // 4)
    return sum(vals[:q]) / q, sum(vals[-q:]) / q


def trend_lines(trends: dict[str, tuple[float, float] | None]) -> list[str]:
    """One line per trend, and a warning for every training pass rate that fell."""
    lines = [f"{k}: {t[0]:.3f} in the first quarter of steps → {t[1]:.3f} in the last" for k, t in trends.items() if t]
    for k in TRAIN_PASS:
        t = trends.get(k)
        if t and t[1] < t[0]:
            lines.append(f"warning: the training pass rate ({k}) fell from {t[0]:.3f} to {t[1]:.3f}: the run's own reward "
                         f"fell (its rollouts are on-policy); lower --lr or add a KL anchor (--beta)")
    return lines


def final_table(run_path: Path, learner: str, args, before: list[dict], after: list[dict], direction: str | None,
                history: list[dict], wall_s: float) -> dict:
    """Print and write `summary.md` / `summary.json` in the run directory; returns the summary."""
    rows, deltas = [], {}
    for b, a in zip(before, after):
        deltas[a["method"]] = paired_delta(b, a)
        row = {"model": a["method"], "pass@1 before": _fmt(b), "pass@1 after": _fmt(a),
               "Δ pass@1 [paired 95% CI]": fmt_delta(deltas[a["method"]]),
               "greedy before": f"{100 * b.get('greedy', float('nan')):.1f}",
               "greedy after": f"{100 * a.get('greedy', float('nan')):.1f}",
               "length after (tokens)": f"{a['mean_length']:.1f}"}
        if "conversion" in a:
            row["conversion / keep after"] = f"{a['conversion']:.2f} / {a['keep']:.2f}"
        if a["method"] == direction:
            row["model"] += " (chosen on validation)"
        rows.append(row)
    trends = {k: trend(history, k) for k in (*TRAIN_PASS, "reward/mean", "win/A", "win/B", "conversion", "keep",
                                         "credit/right_draft", "read/right_draft")}
    n = after[0]["n"]
    # the 10-minute budgets are for training; the rest of the wall time is evaluation and loading
    train_s = sum(r["step_time"] for r in history if "step_time" in r)
    # the problems evaluated, not --eval.problems, which a split with fewer problems does not fill
    lines = [f"{learner}: held-out {args.eval.tier} tier, {n} samples per row "
             f"({n // args.eval.samples} problems × {args.eval.samples}), 95% Clopper-Pearson intervals; "
             f"{wall_s:.0f} s wall, {train_s:.0f} s of it in training steps.",
             "Δ: after − before in points, with a 95% paired bootstrap interval that resamples problems "
             "(both evaluations see the same problems).",
             *trend_lines(trends)]
    md = markdown_table(rows) + "\n\n" + "\n".join(f"- {x}" for x in lines) + "\n"
    print("\n" + md)
    summary = {"learner": learner, "args": asdict(args), "before": before, "after": after, "direction": direction,
               "deltas": deltas, "trends": trends, "wall_s": wall_s, "train_s": train_s}
    (run_path / "summary.md").write_text(md)
    (run_path / "summary.json").write_text(json.dumps(summary, indent=2))
    return summary
