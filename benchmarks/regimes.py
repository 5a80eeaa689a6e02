"""GRPO regimes on the tiny model: which settings make plain GRPO learn on 2 CPU cores.

    python -m benchmarks.regimes                          # train every arm, one at a time (about 50 min)
    python -m benchmarks.regimes --arms c1e-4_p16g16      # some arms only
    python -m benchmarks.regimes --from-runs runs/regimes # rebuild the table from finished runs

Each arm trains tiny model A with `baselines.grpo` on the hard tier and is scored on 300 hard
**validation** problems × 4 samples at T = 0.7 (settings are chosen on validation; the test
split is read once, for the final numbers). The table gives held-out pass@1 before and after,
the change with a paired per-problem bootstrap 95% interval, greedy accuracy, the run's own
training pass rate in its first and last quarter of steps (falling means on-policy training
made the model worse), and training seconds (the steps' own time, evaluations excluded).
The plot puts each arm's change against its training time. Every arm names all the options it
depends on, so the table does not move when the learners' defaults do.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import tyro

from baselines import grpo
from baselines.report import trend
from benchmarks.report import RESULTS, write_report

COMMON = ["--policy", "a", "--train-tiers", "hard", "--eval.tier", "hard", "--eval.split", "validation", "--eval.temperature", "0.7",
          "--eval.problems", "300", "--eval.samples", "4", "--warmup-frac", "0.05", "--eval-every", "0",
          "--checkpoint-every", "0", "--no-progress", "--beta", "0", "--format-weight", "0.5", "--optimizer", "adamw",
          "--no-tempered-logprobs"]
# name: (what it tests, its options). 8 problems × 8 rollouts × 300 steps is the starting point.
ARMS = {
    "lr3e-4_fmt0": ("correctness-only reward at the collapsing lr", "--lr 3e-4 --lr-schedule linear --format-weight 0"),
    "lr3e-4_kl": ("KL anchor at the collapsing lr", "--lr 3e-4 --lr-schedule linear --beta 0.05"),
    "lr3e-4_temp": ("tempered log-probs at the collapsing lr", "--lr 3e-4 --lr-schedule linear --tempered-logprobs"),
    "sgd5e-2": ("SGD (momentum 0.9) instead of AdamW", "--optimizer sgd --lr 5e-2 --lr-schedule constant"),
    "c2e-4_kl02": ("twice the lr with a light KL anchor", "--lr 2e-4 --beta 0.02 --lr-schedule constant"),
    "c1e-4": ("lr 1e-4, constant", "--lr 1e-4 --lr-schedule constant"),
    "c1e-4_p16": ("16 problems a step", "--lr 1e-4 --lr-schedule constant --problems-per-step 16"),
    "c1e-4_p16g16": ("16 problems × 16 rollouts, half the steps (same rollouts)",
                     "--lr 1e-4 --lr-schedule constant --problems-per-step 16 --rollouts-per-problem 16 --steps 150"),
    "c1e-4_p16g16_s225": ("16 × 16 for 225 steps: the 10-minute budget filled",
                          "--lr 1e-4 --lr-schedule constant --problems-per-step 16 --rollouts-per-problem 16 --steps 225"),
    "c1.5e-4_p16g16": ("16 × 16 × 150 at 1.5× the lr",
                       "--lr 1.5e-4 --lr-schedule constant --problems-per-step 16 --rollouts-per-problem 16 --steps 150"),
    "c2e-4_p32": ("32 problems, twice the lr, half the steps (same rollouts)",
                  "--lr 2e-4 --lr-schedule constant --problems-per-step 32 --steps 150"),
}
CHECKED = ("lr", "lr_schedule", "optimizer", "problems_per_step", "rollouts_per_problem", "steps", "beta",
           "format_weight", "tempered_logprobs", "train_tiers", "warmup_frac", "seed")
BASE = "--problems-per-step 8 --rollouts-per-problem 8 --steps 300"  # what an arm does not override


def arm_args(name: str, out_dir: str) -> grpo.Args:
    """The arm's full command line, parsed by the learner's own CLI (later flags override earlier ones)."""
    flags = COMMON + BASE.split() + ARMS[name][1].split() + ["--out-dir", out_dir, "--run-name", name, "--overwrite"]
    return tyro.cli(grpo.Args, args=flags)


def row(name: str, run_dir: Path) -> dict:
    """One arm's row, read from its run directory."""
    summary = json.loads((run_dir / "summary.json").read_text())
    history = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines() if x.strip()]
    steps = [h for h in history if "pass" in h]
    first_last = trend(history, "pass")  # the learner's own summary trend (None under 4 steps)
    a, before, after = summary["args"], summary["before"][0], summary["after"][0]
    d = summary["deltas"]["GRPO"]
    return {"arm": name, "tests": ARMS[name][0],
            "settings": f"{a['optimizer']} lr {a['lr']:g} {a['lr_schedule']}, {a['problems_per_step']}×{a['rollouts_per_problem']}"
                        f" × {a['steps']} steps, β {a['beta']:g}, λ {a['format_weight']:g}"
                        + (", tempered" if a["tempered_logprobs"] else ""),
            "pass@1 before": round(100 * before["pass@1"], 1), "pass@1 after": round(100 * after["pass@1"], 1),
            "Δ [paired 95% CI]": f"{100 * d['delta']:+.1f} [{100 * d['ci_low']:+.1f}, {100 * d['ci_high']:+.1f}]",
            "greedy before → after": f"{100 * before['greedy']:.1f} → {100 * after['greedy']:.1f}",
            "train pass first → last quarter": "{:.3f} → {:.3f}".format(*first_last) if first_last else "n/a",
            "train s": round(sum(h["step_time"] for h in steps)), "wall s": round(summary["wall_s"]),
            "delta": d["delta"], "ci_low": d["ci_low"], "ci_high": d["ci_high"]}


def plot(rows: list[dict], path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for r in rows:
        y, lo, hi = (100 * r[k] for k in ("delta", "ci_low", "ci_high"))
        ax.errorbar(r["train s"], y, yerr=[[y - lo], [hi - y]], fmt="o", capsize=3)
        ax.annotate(r["arm"], (r["train s"], y), textcoords="offset points", xytext=(5, 3), fontsize=7)
    ax.axhline(0, color="grey", lw=0.8)
    ax.axhline(8, color="tab:green", ls="--", lw=0.8, label="+8 points (target)")
    ax.set(xlabel="training seconds (2 cores)", ylabel="Δ held-out hard pass@1 (points, paired 95% CI)",
           title="GRPO on tiny A: gain against training time (validation split)")
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def main(argv: list[str] | None = None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--arms", default="all", help=f"comma-separated arms from {', '.join(ARMS)}, or 'all'")
    ap.add_argument("--out-dir", default="runs/regimes", help="parent of the arms' run directories")
    ap.add_argument("--from-runs", default=None, help="rebuild from this directory's finished arms, training nothing")
    ap.add_argument("--results-dir", default=str(RESULTS), help="where regimes.{json,md,png} go")
    ap.add_argument("--note", action="append", default=[], help="a line to add under the table (repeatable)")
    args = ap.parse_args(argv)
    names = list(ARMS) if args.arms == "all" else [n.strip() for n in args.arms.split(",")]
    unknown = [n for n in names if n not in ARMS]
    if unknown:
        raise SystemExit(f"error: --arms: unknown {unknown}; choose from {list(ARMS)} or 'all'")
    parsed = {n: arm_args(n, args.from_runs or args.out_dir) for n in names}  # every arm parses before any trains
    if args.from_runs:
        missing = [n for n in names if not (Path(args.from_runs) / n / "summary.json").exists()]
        if missing:
            raise SystemExit(f"error: --from-runs {args.from_runs}: no finished run for {missing}")
        for n in names:  # a run counts as the arm only if it was trained with the arm's settings
            ran = json.loads((Path(args.from_runs) / n / "summary.json").read_text())["args"]
            differ = {k: (ran.get(k), getattr(parsed[n], k)) for k in CHECKED if ran.get(k) != getattr(parsed[n], k)}
            if differ:
                raise SystemExit(f"error: --from-runs: {n} was trained with other settings (ran, arm): {differ}")
    else:
        for i, n in enumerate(names):
            print(f"[{i + 1}/{len(names)}] {n}: {ARMS[n][1]}", flush=True)
            grpo.main(parsed[n])
    root = Path(args.from_runs or args.out_dir)
    rows = [row(n, root / n) for n in names]
    out = Path(args.results_dir)
    out.mkdir(parents=True, exist_ok=True)
    png = plot(rows, out / "regimes.png")
    shown = [{k: v for k, v in r.items() if k not in ("delta", "ci_low", "ci_high")} for r in rows]
    ev = parsed[names[0]].eval  # COMMON's, the same for every arm
    notes = [f"GRPO on tiny model A, hard tier; held-out: {ev.problems} {ev.tier} {ev.split} problems × {ev.samples} "
             f"samples at T = {ev.temperature}, the same problems before and after (Δ: paired bootstrap over problems).",
             "train pass: the run's own rollouts' pass rate, first and last quarter of steps.",
             *args.note, f"![gain against training time]({png.name})"]
    command = "python -m benchmarks.regimes" + (f" --from-runs {args.from_runs}" if args.from_runs else "")
    write_report("regimes", "GRPO regimes on the tiny model (validation split)", shown, notes,
                 extra={"arms": {n: ARMS[n][1] for n in names}}, out_dir=out, command=command)
    print(f"plot: {png}")
    return rows


if __name__ == "__main__":
    main()
