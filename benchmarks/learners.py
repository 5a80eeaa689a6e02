"""Both learners' embedded CPU defaults, side by side at equal rollout compute.

    python -m benchmarks.learners [--seed 0] [--steps 150]

Runs `python -m baselines.agon_grpo` and `python -m baselines.grpo` with their defaults
(the tiny pair, bundled arith, held-out hard tier) and writes one table: pass@1 before and
after with 95% intervals, the paired change, wall time (whole run, and the part in training
steps) and rollouts. Agon spends N = 8 drafts + 8 answers per
problem per step; GRPO spends G = 16. One seed per learner: a smoke-sized comparison, not
evidence either way (see benchmarks/replicate.py for seeds and intervals pooled over them).
"""

from __future__ import annotations

import argparse

from baselines import agon_grpo, grpo
from baselines.report import fmt_delta
from benchmarks.report import write_report


def _pct(r: dict) -> str:
    return f"{100 * r['pass@1']:.1f} [{100 * r['ci_low']:.1f}, {100 * r['ci_high']:.1f}]"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=0, help="seed for both learners")
    ap.add_argument("--steps", type=int, default=agon_grpo.Args.steps, help="optimizer steps for both learners")
    args = ap.parse_args()
    common = dict(seed=args.seed, steps=args.steps, out_dir="runs/benchmarks", progress=True, overwrite=True)
    a = agon_grpo.main(agon_grpo.Args(run_name=f"agon_grpo-s{args.seed}", **common))
    g = grpo.main(grpo.Args(run_name=f"grpo-s{args.seed}", **common))
    rows = []
    for learner, s, rollouts in (("agon_grpo", a, 2 * a["args"]["group_size"]),
                                 ("grpo", g, g["args"]["rollouts_per_problem"])):
        for before, after in zip(s["before"], s["after"]):
            name = after["method"] + (" (chosen on validation)" if after["method"] == s["direction"] else "")
            rows.append({"learner": learner, "model": name, "pass@1 before": _pct(before), "pass@1 after": _pct(after),
                         "Δ [paired 95% CI]": fmt_delta(s["deltas"].get(after["method"])),
                         "greedy before": round(100 * before["greedy"], 1), "greedy after": round(100 * after["greedy"], 1),
                         "length after": round(after["mean_length"], 1), "rollouts/problem/step": rollouts,
                         "wall s (whole run)": round(s["wall_s"]), "train s": round(s["train_s"])})
    t = a["trends"]
    notes = [f"held-out hard tier, {a['after'][0]['n']} samples per row; {args.steps} steps × "
             f"{a['args']['problems_per_step']} problems; seed {args.seed}"]
    notes += [f"Agon {k}: {v[0]:.3f} (first quarter of steps) → {v[1]:.3f} (last quarter)" for k, v in t.items() if v]
    write_report("learners", "Embedded CPU defaults: Agon GRPO vs GRPO at equal rollouts", rows, notes,
                 command=f"python -m benchmarks.learners --seed {args.seed} --steps {args.steps}")


if __name__ == "__main__":
    main()
