"""What each job of `benchmarks.replicate` runs, in its worker process: a learner's training
run read back as table rows, self-refinement and the self-cascade on a trained GRPO model,
the GRPO pair cascade (the control), and untrained MoA. `cfg` is always a
`benchmarks.replicate.Args` (not imported here: replicate imports this module)."""

from __future__ import annotations

import contextlib
import json
import time
from dataclasses import fields, replace
from pathlib import Path

from baselines import agon_grpo, grpo
from baselines.config import LearnerArgs, policy_template

from .replicate_table import GRPO_B, LEARNERS, PAIR_CONTROL

ONE_BASE_B_SEED = 1000  # seed offset of the control's model B on one base model (A and B start identical there)


def learner_args(cfg, method: str, seed: int):
    learner, options = LEARNERS[method]
    # The final checkpoint must hold the trained weights (the self and pair jobs read them back).
    L = cfg.learner
    every = L.checkpoint_every if L.checkpoint_every and L.steps % L.checkpoint_every == 0 else L.steps
    L = replace(L, seed=seed, out_dir=cfg.runs_dir, run_name=f"{learner}-{slug(method)}-s{seed}",
                checkpoint_every=every, progress=False, overwrite=True)  # every job starts fresh
    shared = {f.name: getattr(L, f.name) for f in fields(LearnerArgs)}
    if learner == "grpo":  # one model of the pair: 'tiny' picks it by `policy`, 'A,B' by position
        spec = L.model_spec()
        shared["model"] = spec.parts[1] if method == GRPO_B and len(spec.parts) == 2 else spec.parts[0]
        if method == GRPO_B and spec.one_base:
            shared["seed"] = seed + ONE_BASE_B_SEED
        return grpo.Args(**shared, rollouts_per_problem=2 * cfg.group_size, **options)
    return agon_grpo.Args(**shared, group_size=cfg.group_size, **options)


def slug(method: str) -> str:
    return method.split(" (")[0].replace(" ", "_")


def train_job(cfg, method: str, seed: int, **_) -> dict:
    """Train one method; its reported rows come from the learner's own evaluations."""
    args = learner_args(cfg, method, seed)
    (grpo if LEARNERS[method][0] == "grpo" else agon_grpo).main(args)
    return run_rows(cfg, method, Path(args.out_dir) / args.run_name)


def run_rows(cfg, method: str, run_dir: Path) -> dict:
    """A trained method's rows, the same models untrained, its curve and compute, read from its
    learner's run directory (the control's model B has no row of its own)."""
    summary = json.loads((run_dir / "summary.json").read_text())
    history = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines() if x.strip()]
    before, after = ({r["method"]: r for r in summary[k]} for k in ("before", "after"))
    if method in ("GRPO", GRPO_B):
        key, direction = "GRPO", None
        rows = {"zero-shot": before["GRPO"], "GRPO": after["GRPO"]} if method == "GRPO" else {}
        untrained = {"GRPO": before["GRPO"]} if method == "GRPO" else {}
    else:  # a pair: the cascade in the direction chosen on validation
        key = direction = summary["direction"]
        rows, untrained = {method: after[direction]}, {method: before[direction]}
        if method == "Agon":
            drafter = direction.split("→")[0]
            rows["Agon: drafter alone"], untrained["Agon: drafter alone"] = after[drafter], before[drafter]
            rows["cascade untrained"] = before[direction]
    # The learner logs the curve at step 0 and at the end too, on the same problems as mid-run.
    curve = [(r["step"], r[f"eval/{key}"]) for r in history if f"eval/{key}" in r]
    credit = {k: sum(v) / len(v) for k in ("credit/right_draft", "read/right_draft")
              if (v := [r[k] for r in history if k in r])}
    return {"rows": rows, "untrained": untrained, "curve": curve, "direction": direction, "run_dir": str(run_dir),
            "credit": credit,
            "train_rollouts": cfg.learner.steps * cfg.learner.problems_per_step * 2 * cfg.group_size,
            "train_wall_s": sum(r.get("step_time", 0.0) for r in history)}


def self_job(cfg, seed: int, grpo_run: str, **_) -> dict:
    """Self-refinement and the two-pass self-cascade of seed `seed`'s trained GRPO model."""
    from baselines.runs import load_run, run_args
    from baselines.single_model import evaluate_self_cascade, evaluate_self_refine

    common = run_args(grpo_run)
    common = replace(common, seed=seed)
    common.seed_everything()
    policy = load_run(grpo_run, common.device, common.backend)["GRPO"]
    test = common.load(common.eval.split, common.eval.tier, common.eval.problems)  # the learners' held-out split
    ecfg = replace(common.eval, greedy=False)
    game = common.game(model_template=policy_template([policy]), format_weight=common.format_weight)
    rows, walls = {}, {}
    for name, evaluate in (("self-refinement", evaluate_self_refine), ("GRPO two-pass self-cascade", evaluate_self_cascade)):
        t0 = time.perf_counter()
        rows[name] = evaluate(policy, test, game, ecfg, common.eval_seed())
        walls[name] = time.perf_counter() - t0
    return {"rows": rows, "row_wall_s": walls}


def pair_job(cfg, seed: int, grpo_runs: list[str], train_rollouts: int, train_wall_s: float, **_) -> dict:
    """The control: seed `seed`'s GRPO-trained models A and B as a cascade, its direction chosen on
    validation, on test beside the same pair untrained in that direction (for the paired change)."""
    from baselines.cascade import choose_on_validation
    from baselines.evaluate import evaluate_cascade
    from baselines.policy import load_pair
    from baselines.runs import load_run_pair

    common = replace(cfg.learner, seed=seed)
    common.seed_everything()
    trained = load_run_pair(*grpo_runs, common.device, common.backend)
    untrained = dict(zip("AB", load_pair(common.model_spec(), lora_rank=common.lora_rank, device=common.device,
                                         backend=common.backend, seed=seed, reference=False, dtype=common.dtype)))
    validation = common.load("validation", common.eval.tier, common.eval.problems)
    test = common.load(common.eval.split, common.eval.tier, common.eval.problems)
    game = common.game(test[0].domain, policy_template(trained), format_weight=common.format_weight)
    ecfg = replace(common.eval, greedy=False)
    direction, _ = choose_on_validation(trained["A"], trained["B"], validation, game, ecfg, common.eval_seed())
    first, second = direction.split("→")
    row, before = (evaluate_cascade(pols[first], pols[second], test, game, ecfg, common.eval_seed())
                   for pols in (trained, untrained))
    return {"rows": {PAIR_CONTROL: row}, "untrained": {PAIR_CONTROL: before}, "direction": direction,
            "train_rollouts": train_rollouts, "train_wall_s": train_wall_s}


def moa_job(cfg, seed: int, **_) -> dict:
    """Untrained MoA on the base pair: both models propose, A aggregates."""
    from baselines.moa import MoAConfig, evaluate_moa
    from baselines.policy import load_pair

    common = replace(cfg.learner, seed=seed)
    common.seed_everything()
    a, b = load_pair(common.model_spec(), lora_rank=common.lora_rank, device=common.device, backend=common.backend, seed=seed,
                     reference=False, dtype=common.dtype)
    test = common.load(common.eval.split, common.eval.tier, common.eval.problems)
    game = common.game(model_template=policy_template([a, b]), format_weight=common.format_weight)
    row = evaluate_moa({"A": a, "B": b}, test, game, MoAConfig(k=cfg.moa_k), replace(common.eval, greedy=False),
                       common.eval_seed())
    return {"rows": {"MoA untrained": row}}


KINDS = {"train": train_job, "self": self_job, "pair": pair_job, "moa": moa_job}


def warm_imports() -> None:
    """Pay a worker's one-off imports up front, so the first job's wall time is comparable."""
    import matplotlib.pyplot  # noqa: F401
    from transformers import AutoModelForCausalLM, PreTrainedTokenizerFast  # noqa: F401


def run_job(job: dict) -> dict:
    """Run one job with its output in its own log file; returns its result plus wall time."""
    t0 = time.perf_counter()
    Path(job["log"]).parent.mkdir(parents=True, exist_ok=True)
    with open(job["log"], "w") as log, contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
        result = KINDS[job["kind"]](**job)
    return {**result, "job": job["id"], "kind": job["kind"], "method": job["method"], "seed": job["seed"],
            "wall_s": time.perf_counter() - t0}
