"""Single-model GRPO: the baseline Agon is measured against.

    python -m baselines.grpo                 # embedded CPU default: tiny model A on bundled arith
    python -m baselines.grpo --help

Per optimizer step, the policy samples a group of G completions per problem from the
plain prompt; `agon_env` grades each with no rival and pays the drafter's reward
2c + λφ; advantages are normalised within the group; one clipped policy-gradient step.
`--rollouts-per-problem 16` (the default) gives the compute parity the paper uses: Agon
spends N = 8 drafts plus 8 answers per problem. `--dynamic-sampling` drops groups whose
answers are all right or all wrong (they carry no advantage) instead of resampling.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Literal

import tyro

from .config import LearnerArgs, policy_template
from .evaluate import evaluate_single
from .grpo_loss import group_advantages
from .policy import load_policy
from .rollouts import Rollouts
from .runlog import plot_series
from .training import batch_for_step, finish, resumed, train
from .update import grpo_update, make_optimizer


@dataclass
class Args(LearnerArgs):
    """Single-model GRPO."""

    rollouts_per_problem: int = 16
    """G: completions per problem per step (16 = Agon's 2N at N=8, for compute parity)"""
    dynamic_sampling: bool = False
    """drop groups whose rewards are all equal (all right or all wrong) before the update"""
    policy: Literal["a", "b"] = "a"
    """which model of a pair spec to train ('tiny' → 'tiny:a' or 'tiny:b')"""


def grpo_step(step: int, args: Args, game, train_set, policy, opt, sched) -> dict:
    t0 = time.perf_counter()
    problems = batch_for_step(train_set, step, args.problems_per_step, args.seed)
    G = args.rollouts_per_problem
    gens = Rollouts.sample(policy, problems, game.drafter_prompts(problems), G, args.sampling,
                           args.seed * 1_000_003 + step)
    rewards, verdicts = game.grade_solo(gens.each_problem, gens.texts)
    r = gens.grid(rewards)
    adv = group_advantages(r, args.scale_std).flatten()
    informative = r.std(-1) > 0
    stats = {"loss": 0.0, "clip_frac": 0.0, "kl": 0.0, "grad_norm": 0.0}
    update = gens.gens
    if args.dynamic_sampling:
        keep = informative.repeat_interleave(G).nonzero().flatten().tolist()
        update, adv = [update[i] for i in keep], adv[keep]
    if update:
        stats = grpo_update(policy, opt, sched, update, adv, args)
    else:
        sched.step()  # nothing informative this step; keep the schedule on the step count
    return {
        "reward/mean": float(r.mean()), "reward/std": float(r.std()),
        "pass": sum(v.correct for v in verdicts) / len(verdicts),
        "length": sum(len(g.completion_ids) for g in update) / max(len(update), 1),
        "zero_std": float((~informative).float().mean()), "lr": sched.get_last_lr()[0],
        **{k: stats[k] for k in ("loss", "clip_frac", "kl", "grad_norm")}, "step_time": time.perf_counter() - t0,
    }


def main(args: Args) -> dict:
    t_start = time.perf_counter()
    args = resumed(args)
    args.validate("rollouts-per-problem", args.rollouts_per_problem)
    args.seed_everything()
    train_set = args.load("train", args.train_tiers)
    test = args.load("test", args.eval.tier, args.eval.problems)
    spec = args.model_spec()
    policy = load_policy(spec.member(args.policy), device=args.device, backend=args.backend, seed=args.seed,
                         reference=args.beta > 0, lora_rank=args.lora_rank)
    policy.name = "GRPO"
    game = args.game(train_set[0].domain, policy_template([policy]), format_weight=args.format_weight)
    opt, sched = make_optimizer(policy, args)

    def evaluate(problems, cfg):
        return [evaluate_single(policy, problems, game, cfg, args.eval_seed())]

    run, before = train(
        args, "grpo", args.run_name or f"grpo-s{args.seed}-{time.strftime('%Y%m%d-%H%M%S')}",
        {"policy": policy}, {"policy": opt}, {"policy": sched},
        lambda s: grpo_step(s, args, game, train_set, policy, opt, sched), evaluate, test,
        lambda m: {"reward": f"{m['reward/mean']:.2f}", "passed": f"{m['pass']:.2f}"})
    after = evaluate(test, args.eval)

    def plot(history):
        return [plot_series(run.path / "training.png", history, {
            "reward": ["reward/mean"], f"held-out pass@1 (mid-run: first 100 of {len(test)})": ["eval/GRPO"],
            "length (tokens)": ["length"]}, "GRPO")]
    return finish(run, "grpo", args, before, after, None, plot, t_start)


if __name__ == "__main__":
    main(tyro.cli(Args))
