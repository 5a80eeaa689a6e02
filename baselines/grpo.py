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
from dataclasses import dataclass, replace
from pathlib import Path

import torch
import tyro
from tqdm import trange

from .common import CommonArgs, batch_for_step, grpo_update, load_split, make_optimizer, seed_everything
from .evaluate import evaluate_single
from .grpo_loss import group_advantages
from .policy import load_policy
from .report import final_table, model_rows
from .runlog import RunDir, load_checkpoint, load_config, plot_series, save_checkpoint


@dataclass
class Args(CommonArgs):
    """Single-model GRPO."""

    rollouts_per_problem: int = 16
    """G: completions per problem per step (16 = Agon's 2N at N=8, for compute parity)"""
    dynamic_sampling: bool = False
    """drop groups whose rewards are all equal (all right or all wrong) before the update"""
    policy: str = "a"
    """which tiny model to train with --model tiny: 'a' or 'b'"""


def grpo_step(step: int, args: Args, game, train, policy, opt, sched) -> dict:
    t0 = time.perf_counter()
    problems = batch_for_step(train, step, args.problems_per_step, args.seed)
    P, G = len(problems), args.rollouts_per_problem
    gens = [g for gs in policy.generate(game.drafter_prompts(problems), G, args.sampling(), args.seed * 1_000_003 + step)
            for g in gs]
    rewards, verdicts = game.grade_solo([p for p in problems for _ in range(G)], [g.text for g in gens])
    r = torch.tensor(rewards).view(P, G)
    adv = group_advantages(r, args.scale_std).flatten()
    informative = r.std(-1) > 0
    stats = {"loss": 0.0, "clip_frac": 0.0, "kl": 0.0, "grad_norm": 0.0}
    if args.dynamic_sampling:
        keep = informative.repeat_interleave(G).nonzero().flatten().tolist()
        gens, adv = [gens[i] for i in keep], adv[keep]
    if gens:
        stats = grpo_update(policy, opt, sched, gens, adv, args)
    else:
        sched.step()  # nothing informative this step; keep the schedule on the step count
    return {
        "reward/mean": float(r.mean()), "reward/std": float(r.std()),
        "pass": sum(v.correct for v in verdicts) / len(verdicts),
        "length": sum(len(g.completion_ids) for g in gens) / max(len(gens), 1),
        "zero_std": float((~informative).float().mean()), "lr": sched.get_last_lr()[0],
        **{k: stats[k] for k in ("loss", "clip_frac", "kl", "grad_norm")}, "step_time": time.perf_counter() - t0,
    }


def main(args: Args) -> dict:
    t_start = time.perf_counter()
    if args.resume:
        args = replace(Args(**load_config(args.resume)), resume=args.resume)
    args.validate("rollouts-per-problem", args.rollouts_per_problem)
    if args.policy not in ("a", "b"):
        raise SystemExit(f"error: --policy must be 'a' or 'b', got {args.policy!r}")
    seed_everything(args.seed, args.threads)
    train = load_split(args, "train", args.train_tiers)
    game = args.game(domain=train[0].domain)
    test = load_split(args, "test", args.eval_tier, args.eval_problems)
    model = f"tiny:{args.policy}" if args.model == "tiny" else args.model
    policy = load_policy(model, device=args.device, backend=args.backend, seed=args.seed, reference=args.beta > 0,
                         lora_rank=0 if model.startswith("tiny") else args.lora_rank)
    policy.name = "GRPO"
    opt, sched = make_optimizer(policy, args)

    name = args.run_name or f"grpo-s{args.seed}-{time.strftime('%Y%m%d-%H%M%S')}"
    run = RunDir(args.resume or Path(args.out_dir) / name, args, resume=bool(args.resume))
    ecfg = args.eval_config()
    if args.resume:
        start, extra = load_checkpoint(run.path, {"policy": policy}, {"policy": opt}, {"policy": sched})
        before = extra["before"]
        run.truncate_after(start)
        print(f"resumed {run.path} at step {start}")
    else:
        start, before = 0, [evaluate_single(policy, test, game, ecfg)]
        run.log(0, model_rows(before, "eval/"))

    bar = trange(start, args.steps, desc="grpo", disable=not args.progress, dynamic_ncols=True)
    for step in bar:
        m = grpo_step(step, args, game, train, policy, opt, sched)
        if args.eval_every and (step + 1) % args.eval_every == 0 and step + 1 < args.steps:
            m.update(model_rows([evaluate_single(policy, test[:100], game, replace(ecfg, greedy=False))], "eval/"))
        run.log(step, m)
        bar.set_postfix(reward=f"{m['reward/mean']:.2f}", passed=f"{m['pass']:.2f}")
        if args.checkpoint_every and (step + 1) % args.checkpoint_every == 0:
            save_checkpoint(run.path, step + 1, {"policy": policy}, {"policy": opt}, {"policy": sched}, {"before": before})

    after = [evaluate_single(policy, test, game, ecfg)]
    run.log(args.steps, model_rows(after, "eval/"))
    history = run.history()
    plot = plot_series(run.path / "training.png", history, {
        "reward": ["reward/mean"], f"held-out pass@1 (mid-run: first 100 of {len(test)})": ["eval/GRPO"], "length (tokens)": ["length"]}, "GRPO")
    summary = final_table(run.path, "grpo", args, before, after, None, history, time.perf_counter() - t_start)
    run.close()
    print(f"\noutputs in {run.path}: metrics.jsonl, tb/ (TensorBoard), checkpoint/, summary.md, {plot.name if plot else ''}")
    return summary


if __name__ == "__main__":
    main(tyro.cli(Args))
