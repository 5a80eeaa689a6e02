"""Agon GRPO: two policies trained at once, each graded by its rival (arXiv:2607.07690).

    python -m baselines.agon_grpo            # embedded CPU default: the tiny pair on bundled arith
    python -m baselines.agon_grpo --help     # every option

Per optimizer step:
1. The drafter samples N drafts per problem from the plain prompt.
2. The challenger answers each draft once, reading that draft's summary (per-rollout
   opponents; `--shared-opponent` shows one draft to the whole group instead).
3. `agon_env` grades both and pays them: R(a) = 2c(a) + λφ(a) for the drafter and, under
   `--reward agon`, R(b) = 2c(b) + c(b)(1 − c(a)) + λφ(b) for the challenger.
4. Each policy's advantages are normalised within its own group of N (`--challenger-baseline draft`:
   the challenger's within the answers that read equally right drafts).
5. Both policies are updated.
6. Roles swap: A drafts on even steps, B on odd ones (`--fixed-roles`: A always drafts).
The learner never computes a summary, a grade or a reward itself: `AgonGame` does.

    torchrun --nproc-per-node 2 -m baselines.agon_grpo --threads 1   # data parallel (baselines/distributed.py)
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Literal

import torch
import tyro

from agon_env.rules import drafter_seat, game_rates

from . import distributed as dist
from .config import LearnerArgs, RewardScheme, SummaryMode, policy_template
from .diagnostics import group_stats
from .evaluate import choose_direction, evaluate_pair
from .grpo_loss import group_advantages
from .policy import load_pair
from .rollouts import Rollouts
from .runlog import plot_series, smooth
from .training import CURVE_PROBLEMS, batch_for_step, finish, resumed, train
from .update import grpo_update, make_optimizer


@dataclass
class Args(LearnerArgs):
    """Agon two-policy GRPO. Launched by `torchrun --nproc-per-node K`, it trains data-parallel, sampling on the HF
    backend or on vLLM servers (--backend server): K must divide --problems-per-step, and each problem samples
    from its own seed."""

    group_size: int = 8
    """N: drafts per problem per step; the challenger answers each once, so 2N rollouts per problem"""
    reward: RewardScheme = "agon"
    """challenger reward: 'agon' (conversion bonus), 'cooperative', 'margin' or 'zero_sum'"""
    fixed_roles: bool = False
    """ablation: model A always drafts instead of swapping roles every step"""
    shared_opponent: bool = False
    """ablation: the whole group's challengers read one draft, not one draft each"""
    length_tiebreak: float = 0.0
    """λ′: bonus for a right challenger shorter (in sampled tokens) than a right drafter"""
    summary: SummaryMode = "paper"
    """what the challenger reads: 'paper' (thinking dropped, answer withheld), 'with_answer' or 'full'; its prompt says which"""
    challenger_baseline: Literal["group", "draft"] = "group"
    """the challenger's advantage baseline: 'group' (the paper: all N answers to the problem) or 'draft' (a
    variant: only the answers that read equally right drafts, so a right draft's credit does not flow to its reader)"""


# ---------------------------------------------------------------- one optimizer step
def agon_step(step: int, args: Args, game, train_set, policies, opts, scheds) -> dict:
    t0 = time.perf_counter()
    d_name, c_name = ("A", "B") if drafter_seat(step, args.fixed_roles) == 0 else ("B", "A")
    problems, index = dist.shard(batch_for_step(train_set, step, args.problems_per_step, args.seed))
    seed = 2 * (args.seed * 1_000_003 + step)  # drafter seed, challenger seed + 1: no reuse across steps
    N = args.group_size

    # 1-2. N drafts per problem; one answer per draft, from the summary of the draft it reads
    drafts = Rollouts.sample(policies[d_name], problems, game.drafter_prompts(problems), N, args.sampling, seed, index)
    reps = drafts.each_problem
    read = [i - i % N for i in range(len(drafts))] if args.shared_opponent else list(range(len(drafts)))
    prompts = game.challenger_prompts(reps, [drafts.texts[j] for j in read])
    answers = Rollouts.sample(policies[c_name], reps, prompts, 1, args.sampling, seed + 1, drafts.each_index)
    # 3. grade both and pay both (unread drafts under --shared-opponent get GRPO's reward)
    len_d, len_c = [len(g.completion_ids) for g in drafts.gens], [len(g.completion_ids) for g in answers.gens]
    played = game.score_round(reps, drafts.texts, answers.texts, read, (len_d, len_c))  # tiebreak: sampled tokens
    r_d = drafts.grid(played.drafter_rewards)
    r_c = drafts.grid([g.challenger_reward for g in played.games])
    # 4-5. own-group advantages, and both policies update
    read_right = drafts.grid([float(played.drafter_correct[j]) for j in read])
    adv_c = group_advantages(r_c, args.scale_std, by=read_right if args.challenger_baseline == "draft" else None)
    lr = scheds[d_name].get_last_lr()[0]  # the rate this step's updates use (the schedulers step inside them)
    stats_d = grpo_update(policies[d_name], opts[d_name], scheds[d_name], drafts.gens,
                          group_advantages(r_d, args.scale_std).flatten(), args)
    stats_c = grpo_update(policies[c_name], opts[c_name], scheds[c_name], answers.gens, adv_c.flatten(), args)
    # the step's metrics are over every rank's games, in problem order
    batch = dist.all_cat(played.games, played.drafter_correct, r_d, r_c, [p.metadata.get("family", "") for p in problems],
                         len_d, len_c, adv_c, read_right)
    return step_metrics(d_name, c_name, *batch, stats_d, stats_c, lr, time.perf_counter() - t0)


def step_metrics(d_name, c_name, games, drafter_correct, r_d, r_c, families, len_d, len_c, adv_c, read_right,
                 stats_d, stats_c, lr, step_time) -> dict:
    """What a step logs: rewards, who won, the challenger's conversion and keep, lengths, the
    update, each role's groups (informative by correctness, or by format alone), and how much of
    the challenger's credit went to answers that read a right draft."""
    rates = game_rates(games)  # win, conversion, keep: over the games as played
    credit = adv_c.clamp(min=0)
    drafter_pass = sum(drafter_correct) / len(drafter_correct)
    zero_std = lambda r: float((r.amax(-1) == r.amin(-1)).float().mean())  # noqa: E731  (as group_advantages tests it)
    c_d = torch.tensor(drafter_correct).view_as(r_d)
    c_c = torch.tensor([g.challenger_info["correct"] for g in games]).view_as(r_c)
    return {
        **group_stats(r_d, c_d, families, prefix="drafter/"), **group_stats(r_c, c_c, families, prefix="challenger/"),
        "drafter": d_name,
        f"reward/{d_name}_drafter_mean": float(r_d.mean()), f"reward/{d_name}_drafter_std": float(r_d.std()),
        f"reward/{c_name}_challenger_mean": float(r_c.mean()), f"reward/{c_name}_challenger_std": float(r_c.std()),
        f"win/{d_name}": rates["win_drafter"], f"win/{c_name}": rates["win_challenger"], "tie": rates["tie"],
        "pass/drafter": drafter_pass, "pass/challenger": rates["challenger_pass"],
        f"pass/{d_name}": drafter_pass, f"pass/{c_name}": rates["challenger_pass"],
        # The challenger's two ways to be right: fix a wrong draft, or keep a right one.
        "conversion": rates["conversion"], "keep": rates["keep"],
        # Share of the challenger's positive advantage on answers that read a right draft, beside the share of
        # answers that did: above it, a right draft's credit flows to its reader.
        "credit/right_draft": float((credit * read_right).sum() / credit.sum().clamp(min=1e-8)),
        "read/right_draft": float(read_right.mean()),
        "length/drafter": sum(len_d) / max(len(len_d), 1), "length/challenger": sum(len_c) / max(len(len_c), 1),
        "zero_std/drafter": zero_std(r_d), "zero_std/challenger": zero_std(r_c),
        "clip_frac": (stats_d["clip_frac"] + stats_c["clip_frac"]) / 2, "kl": (stats_d["kl"] + stats_c["kl"]) / 2,
        "sampler_gap": (stats_d["sampler_gap"] + stats_c["sampler_gap"]) / 2,
        "grad_norm/drafter": stats_d["grad_norm"], "grad_norm/challenger": stats_c["grad_norm"],
        "loss/drafter": stats_d["loss"], "loss/challenger": stats_c["loss"], "lr": lr, "step_time": step_time,
    }


def plots(run_path, n_test: int):
    def draw(history: list[dict]):
        for k in ("win/A", "win/B", "conversion", "keep"):
            smooth(history, k)
        return [
            plot_series(run_path / "win_rates.png", history, {"win rate (10-step mean)": ["win/A_avg", "win/B_avg"],
                        "challenger (10-step mean)": ["conversion_avg", "keep_avg"]}, "Agon: who out-solved whom"),
            plot_series(run_path / "rewards.png", history, {
                "drafter reward": ["reward/A_drafter_mean", "reward/B_drafter_mean"],
                "challenger reward": ["reward/A_challenger_mean", "reward/B_challenger_mean"]}, "Agon rewards"),
            plot_series(run_path / "heldout.png", history, {
                f"held-out pass@1 (first {min(CURVE_PROBLEMS, n_test)} of {n_test} problems)": ["eval/A", "eval/B", "eval/A→B", "eval/B→A"],
                "length (tokens)": ["length/drafter", "length/challenger"]}, "Held-out pass@1 and length"),
        ]
    return draw


# ---------------------------------------------------------------- the run
def main(args: Args) -> dict:
    t_start = time.perf_counter()
    args = resumed(args)
    args.validate("group-size", args.group_size)
    spec = args.model_spec(pair=True)
    if args.lora_rank < 1 and spec.one_base:
        raise SystemExit(f"error: --lora-rank {args.lora_rank}: on one base --model, agon_grpo trains two LoRA adapters "
                         "(rank >= 1); to train two full models, give both: --model A_DIR,B_DIR")
    if args.shared_opponent and args.reward == "zero_sum":
        raise SystemExit("error: --reward zero_sum pays drafters by their reader; with --shared-opponent most drafts have none")
    dist.init(args.device)
    args.seed_everything()
    train_set = args.load("train", args.train_tiers)
    val = args.load("validation", args.eval.tier, args.eval.problems)
    test = args.load(args.eval.split, args.eval.tier, args.eval.problems)
    a, b = load_pair(spec, lora_rank=args.lora_rank, device=args.device, seed=args.seed,
                     backend=dist.sampling_backend(args.backend), reference=args.beta > 0,
                     servers=args.server_urls(), adapter_dir=args.adapter_dir or None, dtype=args.dtype)
    game = args.game(train_set[0].domain, policy_template([a, b]), args.reward, args.format_weight,
                     length_tiebreak=args.length_tiebreak, summary=args.summary)
    policies = {"A": a, "B": b}
    opts, scheds = {}, {}
    for k, pol in policies.items():
        opts[k], scheds[k] = make_optimizer(pol, args)

    def evaluate(problems, cfg):
        return evaluate_pair(a, b, problems, game, cfg, args.eval_seed(), args.progress)

    run, before = train(
        args, "agon_grpo", args.run_name or f"agon_grpo-{args.reward}-s{args.seed}-{time.strftime('%Y%m%d-%H%M%S')}",
        policies, opts, scheds, lambda s: agon_step(s, args, game, train_set, policies, opts, scheds), evaluate, test,
        lambda m: {"winA": f"{m['win/A']:.2f}", "winB": f"{m['win/B']:.2f}", "conv": f"{m['conversion']:.2f}"})
    direction = choose_direction(evaluate(val, replace(args.eval, greedy=False))[2:])
    after = evaluate(test, args.eval)
    return finish(run, "agon_grpo", args, before, after, direction, plots(run.path, len(test)), t_start)


if __name__ == "__main__":
    main(tyro.cli(Args))
