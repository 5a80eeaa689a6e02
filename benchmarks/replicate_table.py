"""The replicate table: pooled pass@1 per method, what training changed (paired intervals),
the comparisons it answers, and its plot."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict
from pathlib import Path

from baselines.evaluate import clopper_pearson, paired_bootstrap
from baselines.report import fmt_delta

from .report import write_report

# Not the paper's method: the challenger's baseline is the answers that read equally right drafts.
VARIANT = "draft-baseline Agon (variant)"
# Trained methods: (learner, learner options beyond the shared budget).
TRAINED = {
    "GRPO": ("grpo", {}),
    "shared opponent": ("agon", {"shared_opponent": True}),
    "cooperative": ("agon", {"reward": "cooperative"}),
    "Agon": ("agon", {}),
    "margin reward (ablation)": ("agon", {"reward": "margin"}),
    "fixed roles (ablation)": ("agon", {"fixed_roles": True}),
    VARIANT: ("agon", {"challenger_baseline": "draft"}),
}
# The control the paper lacks: model B trained by plain GRPO too, and the two GRPO models run
# as a cascade. It separates what competition adds (Agon) from what cascading adds.
PAIR_CONTROL = "GRPO pair cascade"
GRPO_B = "GRPO B"  # the control's training job for model B (no row of its own)
LEARNERS = {**TRAINED, GRPO_B: ("grpo", {"policy": "b"})}
# Table rows in the paper's order, the control after the untrained cascade, ablations last.
ORDER = ["zero-shot", "GRPO", "self-refinement", "GRPO two-pass self-cascade", "MoA untrained", "cascade untrained",
         PAIR_CONTROL, "shared opponent", "cooperative", "Agon", "Agon: drafter alone", "margin reward (ablation)",
         "fixed roles (ablation)", VARIANT]
# Rows read off another method's run, and what their total-wall column says instead.
DERIVED = {"zero-shot": "in GRPO", "cascade untrained": "in Agon", "Agon: drafter alone": "in Agon"}
SELF_ROWS = ("self-refinement", "GRPO two-pass self-cascade")  # evaluated on each seed's trained GRPO model
DELTA = "Δ vs untrained [paired 95% CI]"


def pct(x: float) -> str:
    return f"{100 * x:.1f}"


def training(res: dict, method: str, grpo_by_seed: dict[int, dict]) -> tuple[int, float, bool]:
    """(training rollouts, training wall s, whether another job did that training) behind one seed's row."""
    if method in ("zero-shot", "cascade untrained"):
        return 0, 0.0, False
    if method in SELF_ROWS:
        g = grpo_by_seed[res["seed"]]
        return g["train_rollouts"], g["train_wall_s"], True
    if "train_rollouts" in res:  # a training job's own, or the control's two GRPO runs
        return res["train_rollouts"], res["train_wall_s"], res["kind"] != "train"
    return 0, 0.0, False


def per_problem(runs: list[tuple[dict, dict]]) -> dict[int, list[float]] | None:
    """Each seed's per-problem results of a method, or None where a row has none (an older run)."""
    if not all("per_problem" in row for _, row in runs):
        return None
    return {res["seed"]: row["per_problem"] for res, row in runs}


def untrained_pairs(runs: list[tuple[dict, dict]], method: str) -> list[tuple[list[float], list[float]]] | None:
    """Per seed: (the same models before training, after), per problem; None if a seed lacks either."""
    pairs = []
    for res, row in runs:
        before = res.get("untrained", {}).get(method)
        if before is None or "per_problem" not in before or "per_problem" not in row:
            return None
        pairs.append((before["per_problem"], row["per_problem"]))
    return pairs


def pooled_delta(pairs: list[tuple[list[float], list[float]]]) -> dict:
    """One paired bootstrap over every seed's problems (the per-problem changes concatenated)."""
    return paired_bootstrap([x for b, _ in pairs for x in b], [x for _, a in pairs for x in a])


def table(results: list[dict], cfg) -> list[dict]:
    """One row per method: pooled pass@1 with its interval, per-seed values, the paired change
    from the same models untrained, length, compute."""
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
        compute = [training(res, method, grpo_by_seed) for res, _ in runs]
        train_rollouts, train_wall = sum(c[0] for c in compute), sum(c[1] for c in compute)
        inherited = compute[0][2]
        eval_wall = sum(res.get("row_wall_s", {}).get(method, res["wall_s"]) for res, _ in runs)
        calls = runs[0][1].get("calls_per_answer", 2 if "→" in runs[0][1]["method"] or method in SELF_ROWS else 1)
        pairs = untrained_pairs(runs, method)
        rows.append({
            "method": method,
            "pass@1 % [95% CI]": f"{pct(k / max(n, 1))} [{pct(lo)}, {pct(hi)}]",
            "per seed": " / ".join(pct(r["pass@1"]) for _, r in runs),
            DELTA: fmt_delta(pooled_delta(pairs)) if pairs else "",
            "Δ per seed": " / ".join(f"{100 * (sum(a) - sum(b)) / len(a):+.1f}" for b, a in pairs) if pairs else "",
            "length (tokens)": f"{sum(r['mean_length'] * r['n'] for _, r in runs) / max(n, 1):.1f}",
            "calls/answer": calls,
            "rollouts/problem/step": 2 * cfg.group_size if train_rollouts else 0,
            "train rollouts": train_rollouts,
            "train wall (s)": f"{train_wall:.0f}",
            "total wall (s)": DERIVED[method] if method in DERIVED else f"{eval_wall + (train_wall if inherited else 0):.0f}",
            "conversion / keep": " / ".join(f"{sum(r[x] for _, r in runs) / len(runs):.2f}" for x in ("conversion", "keep"))
            if "conversion" in runs[0][1] else "",
            "direction (validation)": ", ".join(res["direction"] for res, _ in runs) if runs[0][0].get("direction") else "",
            "_k": k, "_n": n, "_ci": (lo, hi), "_per_problem": per_problem(runs),
            "_gain": {res["seed"]: [a - b for b, a in zip(*p)] for (res, _), p in zip(runs, pairs)} if pairs else None,
            "_seed_delta": [paired_bootstrap(b, a) for b, a in pairs] if pairs else None,
        })
    return rows


def _paired(a: dict[int, list[float]] | None, b: dict[int, list[float]] | None) -> dict | None:
    """a − b per problem over the seeds both have (same test problems), pooled; None if not comparable."""
    seeds = sorted(set(a or ()) & set(b or ()))
    if not seeds or any(len(a[s]) != len(b[s]) for s in seeds):
        return None
    return paired_bootstrap([x for s in seeds for x in b[s]], [x for s in seeds for x in a[s]])


def comparisons(rows: list[dict]) -> list[str]:
    """The issue's questions from the pooled numbers, each with a paired per-problem interval where
    both rows carry per-problem results; then whose training added more."""
    by = {r["method"]: r for r in rows}
    out = []
    for a, b in (("Agon", "GRPO"), ("Agon", PAIR_CONTROL), (PAIR_CONTROL, "GRPO"), ("MoA untrained", "zero-shot"),
                 ("Agon", "zero-shot"), ("GRPO", "zero-shot"), ("Agon", "cascade untrained"), (VARIANT, "Agon")):
        if a in by and b in by:
            pa, pb = by[a]["_k"] / by[a]["_n"], by[b]["_k"] / by[b]["_n"]
            overlap = by[a]["_ci"][0] <= by[b]["_ci"][1] and by[b]["_ci"][0] <= by[a]["_ci"][1]
            d = _paired(by[a]["_per_problem"], by[b]["_per_problem"])
            paired = f" paired per-problem 95% CI [{100 * d['ci_low']:+.1f}, {100 * d['ci_high']:+.1f}];" if d else ""
            out.append(f"{a} − {b}: {100 * (pa - pb):+.1f} points;{paired} the 95% Clopper-Pearson intervals "
                       f"{'overlap' if overlap else 'do not overlap'}.")
    for a, b in (("Agon", "GRPO"), ("Agon", PAIR_CONTROL), (VARIANT, "Agon")):
        d = _paired(by[a]["_gain"], by[b]["_gain"]) if a in by and b in by else None
        if d:
            out.append(f"What training added, {a} minus {b} (each against its own models untrained, per problem): "
                       f"{fmt_delta(d)} points (paired 95% CI).")
    return out


def seed_lines(rows: list[dict]) -> list[str]:
    """Whether each seed alone moved its models beyond noise: its own paired interval of Δ vs untrained."""
    parts = []
    for r in rows:
        if r["_seed_delta"]:
            above = sum(d["ci_low"] > 0 for d in r["_seed_delta"])
            lows = " / ".join(f"{100 * d['ci_low']:+.2f}" for d in r["_seed_delta"])
            parts.append(f"{r['method']} {above} of {len(r['_seed_delta'])} (lower bounds {lows})")
    return ["Seeds whose own paired 95% CI of Δ vs untrained lies above 0: " + "; ".join(parts) + "."] if parts else []


def credit_lines(results: list[dict]) -> list[str]:
    """Per pair method, over its seeds' training steps: the challenger's positive advantage on answers
    that read a right draft, beside how many answers did (equal shares: no credit flows from the draft)."""
    by: dict[str, list[dict]] = defaultdict(list)
    for res in results:
        if res.get("credit", {}).get("credit/right_draft") is not None:
            by[res["method"]].append(res["credit"])
    return [f"Challenger credit, {m}: {100 * sum(c['credit/right_draft'] for c in cs) / len(cs):.0f}% of its positive "
            f"advantage went to answers that read a right draft, which were "
            f"{100 * sum(c['read/right_draft'] for c in cs) / len(cs):.0f}% of its answers (mean over steps and seeds)."
            for m, cs in by.items()]


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
        style = {"zero-shot": "grey", "MoA untrained": "black", "cascade untrained": "tab:brown", PAIR_CONTROL: "tab:purple"}
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


def report(cfg, results: list[dict], estimate: float, wall: float, command: str, rebuilt_by: str | None = None) -> dict:
    """The table, its notes and the plot, written under cfg.results_dir. `command` is what trained it;
    `rebuilt_by`, the --from-results command that rebuilt it from that run (None: this run trained)."""
    rows = table(results, cfg)
    present = {r["method"] for r in rows}
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
        *(["Self-refinement and the self-cascade run on the trained GRPO model (its training compute is listed); "
           "zero-shot is GRPO's model before training."] if present & {*SELF_ROWS, "zero-shot"} else []),
        "Train rollouts and the wall columns are summed over the seeds; total wall includes each learner's own "
        "evaluations.",
        *([f"{PAIR_CONTROL}: models A and B each trained by plain GRPO at the same budget, then run as a cascade in "
           "the direction chosen on validation; its training compute is both runs' (twice GRPO's), its rollouts per "
           "problem per step are each model's."] if PAIR_CONTROL in present else []),
        f"{DELTA}: the row minus the same models untrained (GRPO: zero-shot; a pair: its cascade before training in "
        "the same direction; the drafter alone: that model before training), per problem on the same test problems "
        "and draws seed; one percentile bootstrap over every seed's problems pooled (10,000 resamples). "
        "Δ per seed: each seed's change alone.",
        *seed_lines(rows),
        *comparisons(rows),
        *credit_lines(results),
        f"Wall time: estimated {estimate / 60:.1f} min, actual {wall / 60:.1f} min ({cfg.jobs} process(es), "
        f"{L.threads} thread(s) each)" + (f", as measured by the run this table was rebuilt from (nothing was "
                                          f"retrained); that run: `{command}`." if rebuilt_by else "."),
    ]
    public = [{k: v for k, v in r.items() if not k.startswith("_")} for r in rows]
    title = "Agon and the paper's baselines at our scale (Table 3 shape)"
    if cfg.methods.strip() != "all":
        title += ": " + ", ".join(cfg.selected())
    jpath, mpath = write_report(cfg.name, title, public, notes,
                                {"config": asdict(cfg), "command": command, "estimated_s": estimate, "wall_s": wall,
                                 "results": results}, out_dir=results_dir, command=rebuilt_by or command)
    with mpath.open("a") as f:
        f.write(f"\n![pass@1 over training]({png.name})\n")
    print(f"outputs: {jpath}, {mpath}, {png}; run directories and logs in {cfg.runs_dir}/")
    return {"rows": rows, "estimated_s": estimate, "wall_s": wall, "json": str(jpath), "md": str(mpath), "plot": str(png)}


