"""Single-model GRPO: the baseline Agon is measured against.

    python -m baselines.grpo                 # embedded CPU default: tiny model A on bundled arith
    python -m baselines.grpo --help

Per optimizer step, the policy samples a group of G completions per problem from the
plain prompt; `agon_env` grades each with no rival and pays the drafter's reward
2c + λφ; advantages are normalised within the group; one clipped policy-gradient step.
`--rollouts-per-problem 16` (the default) gives the compute parity the paper uses: Agon
spends N = 8 drafts plus 8 answers per problem. `--dynamic-sampling` drops groups whose
rewards are all equal (they carry no advantage) and, as DAPO does, refills the batch with
fresh problems for up to `--refill-rounds` more draws; every rollout sampled is counted
in the `rollouts` metric, so the extra compute stays visible.

    torchrun --nproc-per-node 2 -m baselines.grpo --threads 1   # data parallel (baselines/distributed.py)
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Literal

import torch
import tyro

from . import distributed as dist
from .config import LearnerArgs, policy_template
from .diagnostics import group_stats
from .evaluate import evaluate_single
from .grpo_loss import group_advantages
from .policy import load_policy
from .rollouts import Rollouts
from .runlog import plot_series
from .training import CURVE_PROBLEMS, batch_for_step, finish, resumed, train
from .update import grpo_update, make_optimizer


@dataclass
class Args(LearnerArgs):
    """Single-model GRPO. Launched by `torchrun --nproc-per-node K`, it trains data-parallel, sampling on the HF
    backend or on vLLM servers (--backend server): K must divide --problems-per-step, and each problem samples
    from its own seed."""

    rollouts_per_problem: int = 16
    """G: completions per problem per step (16 = Agon's 2N at N=8, for compute parity)"""
    dynamic_sampling: bool = False
    """drop groups whose rewards are all equal (their advantages are all zero) before the update, refilling (below);
    by reward, not DAPO's correctness: a group all wrong but mixed in format is kept"""
    refill_rounds: int = 3
    """with --dynamic-sampling: extra draws of fresh problems until --problems-per-step groups are informative (0: drop only)"""
    policy: Literal["a", "b"] = "a"
    """which model of a pair spec to train ('tiny' → 'tiny:a' or 'tiny:b')"""


def grpo_step(step: int, args: Args, game, train_set, policy, opt, sched) -> dict:
    t0 = time.perf_counter()
    G, seed = args.rollouts_per_problem, args.seed * 1_000_003 + step

    def draw(k: int):
        """Draw k of this step: the step's problems (k = 0) or a refill (this rank's share), each group graded."""
        problems, index = dist.shard(batch_for_step(train_set, step, args.problems_per_step, args.seed + 7919 * k))
        gens = Rollouts.sample(policy, problems, game.drafter_prompts(problems), G, args.sampling,
                               seed + 500_000_003 * k, index)  # k = 0: the seed a plain step uses
        rewards, verdicts = game.grade_solo(gens.each_problem, gens.texts)
        return gens, gens.grid(rewards), gens.grid([v.correct for v in verdicts]).bool()

    gens, r, correct = draw(0)
    informative = r.amax(-1) > r.amin(-1)  # exact, unlike std > 0 under float noise
    update, adv, rounds = gens.gens, group_advantages(r, args.scale_std).flatten(), 0
    if args.dynamic_sampling:
        groups = [(gens.gens[i * G:(i + 1) * G], row) for i, row in enumerate(r) if informative[i]]
        found = [dist.all_counts(len(groups))]  # informative groups per round and rank: the global order
        while sum(map(sum, found)) < args.problems_per_step and rounds < args.refill_rounds:
            rounds += 1
            more, r_more, _ = draw(rounds)
            new = [(more.gens[i * G:(i + 1) * G], row) for i, row in enumerate(r_more) if row.amax() > row.amin()]
            groups += new
            found.append(dist.all_counts(len(new)))
        groups = groups[:dist.first_n_mine(found, args.problems_per_step)]
        update = [g for gs, _ in groups for g in gs]
        adv = group_advantages(torch.stack([row for _, row in groups]), args.scale_std).flatten() if groups else adv[:0]
    # the step's metrics are over every rank's groups, in problem order
    r, correct, families, lengths = dist.all_cat(r, correct, [p.metadata.get("family", "") for p in gens.problems],
                                                 [len(g.completion_ids) for g in update])
    informative = r.amax(-1) > r.amin(-1)
    stats = {"loss": 0.0, "clip_frac": 0.0, "kl": 0.0, "sampler_gap": 0.0, "grad_norm": 0.0}
    lr = sched.get_last_lr()[0]  # the rate this step's update uses (the scheduler steps inside it)
    if lengths:
        stats = grpo_update(policy, opt, sched, update, adv, args)
    else:
        sched.step()  # nothing informative this step; keep the schedule on the step count
    return {
        "reward/mean": float(r.mean()), "reward/std": float(r.std()), "pass": float(correct.float().mean()),
        "length": sum(lengths) / max(len(lengths), 1),
        "zero_std": float((~informative).float().mean()), **group_stats(r, correct, families),
        "rollouts": (rounds + 1) * r.numel(), "groups/updated": len(lengths) // G, "lr": lr,
        **{k: stats[k] for k in ("loss", "clip_frac", "kl", "sampler_gap", "grad_norm")}, "step_time": time.perf_counter() - t0,
    }


def main(args: Args) -> dict:
    t_start = time.perf_counter()
    args = resumed(args)
    args.validate("rollouts-per-problem", args.rollouts_per_problem)
    if args.refill_rounds < 0:
        raise SystemExit(f"error: --refill-rounds must be at least 0, got {args.refill_rounds}")
    dist.init(args.device)
    args.seed_everything()
    train_set = args.load("train", args.train_tiers)
    test = args.load(args.eval.split, args.eval.tier, args.eval.problems)
    spec = args.model_spec()
    policy = load_policy(spec.member(args.policy), device=args.device, seed=args.seed, reference=args.beta > 0,
                         backend=dist.sampling_backend(args.backend), lora_rank=args.lora_rank,
                         servers=args.server_urls(), adapter_dir=args.adapter_dir or None, dtype=args.dtype)
    policy.name = "GRPO"
    game = args.game(train_set[0].domain, policy_template([policy]), format_weight=args.format_weight)
    opt, sched = make_optimizer(policy, args)

    def evaluate(problems, cfg):
        return [evaluate_single(policy, problems, game, cfg, args.eval_seed(), args.progress)]

    run, before = train(
        args, "grpo", args.run_name or f"grpo-s{args.seed}-{time.strftime('%Y%m%d-%H%M%S')}",
        {"policy": policy}, {"policy": opt}, {"policy": sched},
        lambda s: grpo_step(s, args, game, train_set, policy, opt, sched), evaluate, test,
        lambda m: {"reward": f"{m['reward/mean']:.2f}", "passed": f"{m['pass']:.2f}"})
    after = evaluate(test, args.eval)

    def plot(history):
        return [plot_series(run.path / "training.png", history, {
            "reward": ["reward/mean"], f"held-out pass@1 (first {min(CURVE_PROBLEMS, len(test))} of {len(test)} problems)": ["eval/GRPO"],
            "length (tokens)": ["length"]}, "GRPO")]
    return finish(run, "grpo", args, before, after, None, plot, t_start)


if __name__ == "__main__":
    main(tyro.cli(Args))
