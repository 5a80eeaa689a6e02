"""Agon GRPO: two policies trained at once, each graded by its rival (arXiv:2607.07690).

    python -m baselines.agon_grpo            # embedded CPU default: the tiny pair on bundled arith
    python -m baselines.agon_grpo --help     # every option

Per optimizer step:
1. The drafter samples N drafts per problem from the plain prompt.
2. The challenger answers each draft once, reading that draft's summary (per-rollout
   opponents; `--shared-opponent` shows one draft to the whole group instead).
3. `agon_env` grades both and pays them: R(a) = 2c(a) + λφ(a) for the drafter and, under
   `--reward agon`, R(b) = 2c(b) + c(b)(1 − c(a)) + λφ(b) for the challenger.
4. Each policy's advantages are normalised within its own group of N.
5. Both policies are updated.
6. Roles swap: A drafts on even steps, B on odd ones (`--fixed-roles`: A always drafts).
The learner never computes a summary, a grade or a reward itself: `AgonGame` does.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path

import torch
import tyro
from tqdm import trange

from agon_env.rules import drafter_seat, game_rates

from .common import CommonArgs, batch_for_step, grpo_update, load_split, make_optimizer, seed_everything
from .evaluate import choose_direction, evaluate_pair
from .grpo_loss import group_advantages
from .policy import load_pair
from .report import final_table, model_rows
from .runlog import RunDir, load_checkpoint, load_config, plot_series, save_checkpoint, smooth


@dataclass
class Args(CommonArgs):
    """Agon two-policy GRPO."""

    group_size: int = 8
    """N: drafts per problem per step; the challenger answers each once, so 2N rollouts per problem"""
    reward: str = "agon"
    """challenger reward: 'agon' (conversion bonus), 'cooperative', 'margin' or 'zero_sum'"""
    fixed_roles: bool = False
    """ablation: model A always drafts instead of swapping roles every step"""
    shared_opponent: bool = False
    """ablation: the whole group's challengers read one draft, not one draft each"""
    length_tiebreak: float = 0.0
    """λ′: bonus for a right challenger shorter than a right drafter"""
    summary: str = "paper"
    """what the challenger reads: 'paper' (thinking dropped, answer withheld), 'with_answer' or 'full'"""


# ---------------------------------------------------------------- one optimizer step
def group_rewards(drafter_rewards, seen, P: int, N: int) -> tuple[torch.Tensor, torch.Tensor]:
    """[P, N] rewards per role: the drafter's on its own drafts, the challenger's from the
    games it actually played (`seen`: its draft was the one it read)."""
    r_d = torch.tensor(drafter_rewards, dtype=torch.float).view(P, N)
    r_c = torch.tensor([g.challenger_reward for g in seen]).view(P, N)
    return r_d, r_c


def agon_step(step: int, args: Args, game, train, policies, opts, scheds) -> dict:
    t0 = time.perf_counter()
    d_name, c_name = ("A", "B") if drafter_seat(step, args.fixed_roles) == 0 else ("B", "A")
    drafter, challenger = policies[d_name], policies[c_name]
    problems = batch_for_step(train, step, args.problems_per_step, args.seed)
    P, N = len(problems), args.group_size
    reps = [p for p in problems for _ in range(N)]
    seed = 2 * (args.seed * 1_000_003 + step)  # drafter seed, challenger seed + 1: no reuse across steps

    drafts = [g for gs in drafter.generate(game.drafter_prompts(problems), N, args.sampling(), seed) for g in gs]
    shown = [drafts[i - i % N] for i in range(P * N)] if args.shared_opponent else drafts
    prompts = game.challenger_prompts(reps, [d.text for d in shown])
    responses = [gs[0] for gs in challenger.generate(prompts, 1, args.sampling(), seed + 1)]

    seen = game.score(reps, [d.text for d in shown], [r.text for r in responses])
    if args.shared_opponent:  # drafts other than the shown one had no reader: paid GRPO's reward
        r_own, verdicts = game.grade_solo(reps, [d.text for d in drafts])
        drafter_pass = sum(v.correct for v in verdicts) / len(verdicts)
    else:
        r_own, drafter_pass = [g.drafter_reward for g in seen], None
    r_d, r_c = group_rewards(r_own, seen, P, N)
    stats_d = grpo_update(drafter, opts[d_name], scheds[d_name], drafts,
                          group_advantages(r_d, args.scale_std).flatten(), args)
    stats_c = grpo_update(challenger, opts[c_name], scheds[c_name], responses,
                          group_advantages(r_c, args.scale_std).flatten(), args)

    rates = game_rates(seen)  # win, conversion, keep: over the games as played
    drafter_pass = rates["drafter_pass"] if drafter_pass is None else drafter_pass
    zero_std = lambda r: float((r.std(-1) == 0).float().mean())  # noqa: E731
    return {
        "drafter": d_name,
        f"reward/{d_name}_drafter_mean": float(r_d.mean()), f"reward/{d_name}_drafter_std": float(r_d.std()),
        f"reward/{c_name}_challenger_mean": float(r_c.mean()), f"reward/{c_name}_challenger_std": float(r_c.std()),
        f"win/{d_name}": rates["win_drafter"], f"win/{c_name}": rates["win_challenger"], "tie": rates["tie"],
        "pass/drafter": drafter_pass, "pass/challenger": rates["challenger_pass"],
        f"pass/{d_name}": drafter_pass, f"pass/{c_name}": rates["challenger_pass"],
        # The challenger's two ways to be right: fix a wrong draft, or keep a right one.
        "conversion": rates["conversion"], "keep": rates["keep"],
        "length/drafter": sum(len(g.completion_ids) for g in drafts) / len(drafts),
        "length/challenger": sum(len(g.completion_ids) for g in responses) / len(responses),
        "zero_std/drafter": zero_std(r_d), "zero_std/challenger": zero_std(r_c),
        "clip_frac": (stats_d["clip_frac"] + stats_c["clip_frac"]) / 2, "kl": (stats_d["kl"] + stats_c["kl"]) / 2,
        "grad_norm/drafter": stats_d["grad_norm"], "grad_norm/challenger": stats_c["grad_norm"],
        "loss/drafter": stats_d["loss"], "loss/challenger": stats_c["loss"], "lr": scheds[d_name].get_last_lr()[0],
        "step_time": time.perf_counter() - t0,
    }


# ---------------------------------------------------------------- the run
def main(args: Args) -> dict:
    t_start = time.perf_counter()
    if args.resume:
        args = replace(Args(**load_config(args.resume)), resume=args.resume)
    args.validate("group-size", args.group_size)
    if args.shared_opponent and args.reward == "zero_sum":
        raise SystemExit("error: --reward zero_sum pays drafters by their reader; with --shared-opponent most drafts have none")
    seed_everything(args.seed, args.threads)
    train = load_split(args, "train", args.train_tiers)
    game = args.game(args.reward, train[0].domain, length_tiebreak=args.length_tiebreak, summary=args.summary)
    val = load_split(args, "validation", args.eval_tier, args.eval_problems)
    test = load_split(args, "test", args.eval_tier, args.eval_problems)
    a, b = load_pair(args.model, lora_rank=args.lora_rank, device=args.device, backend=args.backend, seed=args.seed, reference=args.beta > 0)
    policies = {"A": a, "B": b}
    opts, scheds = {}, {}
    for k, pol in policies.items():
        opts[k], scheds[k] = make_optimizer(pol, args)

    name = args.run_name or f"agon_grpo-{args.reward}-s{args.seed}-{time.strftime('%Y%m%d-%H%M%S')}"
    run = RunDir(args.resume or Path(args.out_dir) / name, args, resume=bool(args.resume))
    ecfg = args.eval_config()
    if args.resume:
        start, extra = load_checkpoint(run.path, policies, opts, scheds)
        before = extra["before"]
        run.truncate_after(start)
        print(f"resumed {run.path} at step {start}")
    else:
        start, before = 0, evaluate_pair(a, b, test, game, ecfg)
        run.log(0, model_rows(before, "eval/"))

    bar = trange(start, args.steps, desc="agon_grpo", disable=not args.progress, dynamic_ncols=True)
    for step in bar:
        m = agon_step(step, args, game, train, policies, opts, scheds)
        if args.eval_every and (step + 1) % args.eval_every == 0 and step + 1 < args.steps:
            m.update(model_rows(evaluate_pair(a, b, test[:100], game, replace(ecfg, greedy=False)), "eval/"))
        run.log(step, m)
        bar.set_postfix(winA=f"{m['win/A']:.2f}", winB=f"{m['win/B']:.2f}", conv=f"{m['conversion']:.2f}")
        if args.checkpoint_every and (step + 1) % args.checkpoint_every == 0:
            save_checkpoint(run.path, step + 1, policies, opts, scheds, {"before": before})

    direction = choose_direction(evaluate_pair(a, b, val, game, replace(ecfg, greedy=False))[2:])
    after = evaluate_pair(a, b, test, game, ecfg)
    run.log(args.steps, model_rows(after, "eval/"))
    history = run.history()
    for k in ("win/A", "win/B", "conversion", "keep"):
        smooth(history, k)
    plots = [
        plot_series(run.path / "win_rates.png", history, {"win rate (10-step mean)": ["win/A_avg", "win/B_avg"],
                    "challenger (10-step mean)": ["conversion_avg", "keep_avg"]}, "Agon: who out-solved whom"),
        plot_series(run.path / "rewards.png", history, {
            "drafter reward": ["reward/A_drafter_mean", "reward/B_drafter_mean"],
            "challenger reward": ["reward/A_challenger_mean", "reward/B_challenger_mean"]}, "Agon rewards"),
        plot_series(run.path / "heldout.png", history, {
            f"held-out pass@1 (mid-run: first 100 of {len(test)})": ["eval/A", "eval/B", "eval/A→B", "eval/B→A"],
            "length (tokens)": ["length/drafter", "length/challenger"]}, "Held-out pass@1 and length"),
    ]
    summary = final_table(run.path, "agon_grpo", args, before, after, direction, history,
                          time.perf_counter() - t_start)
    run.close()
    print(f"\noutputs in {run.path}: metrics.jsonl, tb/ (TensorBoard), checkpoint/, summary.md, "
          + ", ".join(p.name for p in plots if p))
    return summary


if __name__ == "__main__":
    main(tyro.cli(Args))
