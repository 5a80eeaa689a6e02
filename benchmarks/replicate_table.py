"""The replicate table: pooled pass@1 per method, the comparisons it answers, and its plot."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict
from pathlib import Path

from baselines.evaluate import clopper_pearson

from .report import write_report

# Trained methods: (learner, learner options beyond the shared budget).
TRAINED = {
    "GRPO": ("grpo", {}),
    "shared opponent": ("agon", {"shared_opponent": True}),
    "cooperative": ("agon", {"reward": "cooperative"}),
    "Agon": ("agon", {}),
    "margin reward (ablation)": ("agon", {"reward": "margin"}),
    "fixed roles (ablation)": ("agon", {"fixed_roles": True}),
}
# Table rows in the paper's order, ablations last.
ORDER = ["zero-shot", "GRPO", "self-refinement", "GRPO two-pass self-cascade", "MoA untrained", "cascade untrained",
         "shared opponent", "cooperative", "Agon", "Agon: drafter alone", "margin reward (ablation)",
         "fixed roles (ablation)"]
# Rows read off another method's run, and what their total-wall column says instead.
DERIVED = {"zero-shot": "in GRPO", "cascade untrained": "in Agon", "Agon: drafter alone": "in Agon"}


def pct(x: float) -> str:
    return f"{100 * x:.1f}"


def table(results: list[dict], cfg) -> list[dict]:
    """One row per method: pooled pass@1 with its interval, per-seed values, length, compute."""
    by_method: dict[str, list[tuple[dict, dict]]] = defaultdict(list)
    for res in results:
        for method, row in res["rows"].items():
            by_method[method].append((res, row))
    grpo_by_seed = {res["seed"]: res for res in results if "GRPO" in res["rows"]}
    rows = []
    for method in [m for m in ORDER if m in by_method]:
        runs = sorted(by_method[method], key=lambda x: x[0]["seed"])
        k = sum(round(r["pass@1"] * r["n"]) for _, r in runs)
        n = sum(r["n"] for _, r in runs)
        lo, hi = clopper_pearson(k, n)
        trained = "train_rollouts" in runs[0][0] and method not in ("zero-shot", "cascade untrained")
        inherits = method in ("self-refinement", "GRPO two-pass self-cascade")
        train_rollouts = sum(res["train_rollouts"] for res, _ in runs) if trained else \
            sum(grpo_by_seed[res["seed"]]["train_rollouts"] for res, _ in runs) if inherits else 0
        train_wall = sum(res["train_wall_s"] for res, _ in runs) if trained else \
            sum(grpo_by_seed[res["seed"]]["train_wall_s"] for res, _ in runs) if inherits else 0.0
        eval_wall = sum(res.get("row_wall_s", {}).get(method, res["wall_s"]) for res, _ in runs)
        calls = runs[0][1].get("calls_per_answer", 2 if "→" in runs[0][1]["method"] or inherits else 1)
        rows.append({
            "method": method,
            "pass@1 % [95% CI]": f"{pct(k / max(n, 1))} [{pct(lo)}, {pct(hi)}]",
            "per seed": " / ".join(pct(r["pass@1"]) for _, r in runs),
            "length (tokens)": f"{sum(r['mean_length'] * r['n'] for _, r in runs) / max(n, 1):.1f}",
            "calls/answer": calls,
            "rollouts/problem/step": 2 * cfg.group_size if trained or inherits else 0,
            "train rollouts": train_rollouts,
            "train wall (s)": f"{train_wall:.0f}",
            "total wall (s)": DERIVED[method] if method in DERIVED else f"{eval_wall + (train_wall if inherits else 0):.0f}",
            "conversion / keep": " / ".join(f"{sum(r[x] for _, r in runs) / len(runs):.2f}" for x in ("conversion", "keep"))
            if "conversion" in runs[0][1] else "",
            "direction (validation)": ", ".join(res["direction"] for res, _ in runs) if runs[0][0].get("direction") else "",
            "_k": k, "_n": n, "_ci": (lo, hi),
        })
    return rows


def comparisons(rows: list[dict]) -> list[str]:
    """The issue's two questions, and what training added to the cascade, from the pooled numbers."""
    by = {r["method"]: r for r in rows}
    out = []
    for a, b in (("Agon", "GRPO"), ("MoA untrained", "zero-shot"), ("Agon", "zero-shot"), ("GRPO", "zero-shot"),
                 ("Agon", "cascade untrained")):
        if a in by and b in by:
            pa, pb = by[a]["_k"] / by[a]["_n"], by[b]["_k"] / by[b]["_n"]
            overlap = by[a]["_ci"][0] <= by[b]["_ci"][1] and by[b]["_ci"][0] <= by[a]["_ci"][1]
            out.append(f"{a} − {b}: {100 * (pa - pb):+.1f} points; the 95% intervals "
                       f"{'overlap' if overlap else 'do not overlap'}.")
    return out


def plot(results: list[dict], rows: list[dict], path: Path) -> Path:
    """pass@1 over training per trained method (mean over seeds), with the untrained baselines as lines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    for method in TRAINED:
        curves = [dict(r["curve"]) for r in results if method in r["rows"] and "curve" in r]
        steps = sorted(set.intersection(*(set(c) for c in curves))) if curves else []
        if steps:
            ax.plot(steps, [100 * sum(c[s] for c in curves) / len(curves) for s in steps], marker="o", ms=3, label=method)
    for row in rows:
        style = {"zero-shot": "grey", "MoA untrained": "black", "cascade untrained": "tab:brown"}
        if row["method"] in style:
            ax.axhline(100 * row["_k"] / row["_n"], ls="--", lw=1, color=style[row["method"]], label=row["method"])
    ax.set(xlabel="optimizer step", ylabel="held-out pass@1 (%)",
           title="pass@1 over training (mean over seeds; pairs: validation-chosen cascade)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def report(cfg, results: list[dict], estimate: float, wall: float, command: str, rebuilt: bool = False) -> dict:
    """The table, its notes and the plot, written under cfg.results_dir."""
    rows = table(results, cfg)
    results_dir = Path(cfg.results_dir)
    results_dir.mkdir(parents=True, exist_ok=True)
    png = plot(results, rows, results_dir / f"{cfg.name}_pass_at_1.png")
    L = cfg.learner
    notes = [
        f"Setting: model {L.model!r}, held-out {L.eval.tier} tier, {L.eval.problems} test problems × {L.eval.samples} "
        f"samples × {cfg.seeds} seed(s) pooled per row (95% Clopper-Pearson; samples of one problem are correlated, "
        f"so the intervals are somewhat optimistic). {L.steps} steps × {L.problems_per_step} problems, "
        f"N = {cfg.group_size}: every trained method samples 2N = {2 * cfg.group_size} rollouts per problem per step.",
        "Pairs are reported as the cascade in the direction chosen per seed on the validation split; the test "
        "split plays no part in that choice.",
        "Self-refinement and the self-cascade run on the trained GRPO model (its training compute is listed); "
        "zero-shot is GRPO's model before training. Total wall includes each learner's own evaluations.",
        *comparisons(rows),
        f"Wall time: estimated {estimate / 60:.1f} min, actual {wall / 60:.1f} min ({cfg.jobs} process(es), "
        f"{L.threads} thread(s) each)" + (", as measured by the run this table was rebuilt from (nothing was "
                                          "retrained)." if rebuilt else "."),
    ]
    public = [{k: v for k, v in r.items() if not k.startswith("_")} for r in rows]
    jpath, mpath = write_report(cfg.name, "Agon and the paper's baselines at our scale (Table 3 shape)", public, notes,
                                {"config": asdict(cfg), "estimated_s": estimate, "wall_s": wall, "results": results},
                                out_dir=results_dir, command=command)
    with mpath.open("a") as f:
        f.write(f"\n![pass@1 over training]({png.name})\n")
    print(f"outputs: {jpath}, {mpath}, {png}; run directories and logs in {cfg.runs_dir}/")
    return {"rows": rows, "estimated_s": estimate, "wall_s": wall, "json": str(jpath), "md": str(mpath), "plot": str(png)}


