"""Bring your own algorithm: a new two-player learner on AgonGame's batch API.   python examples/byo_learner.py

The method is `rloo_step`, the part to replace: REINFORCE with a leave-one-out baseline (RLOO) for both players,
roles swapping every step; `AgonGame` writes each prompt and summary, grades and pays (`score_round`). What makes
the numbers comparable with `baselines.grpo` / `agon_grpo` is theirs: `train` / `finish` evaluate before and after
on the same held-out problems, samples and seed (pass@1 with 95% Clopper-Pearson intervals for A, B and both
cascades, the paired change, conversion / keep, the direction chosen on validation) and write metrics.jsonl,
TensorBoard and summary.md; each step logs win rates, conversion, keep (`rules.game_rates`) and training pass.
"""

import time
from dataclasses import dataclass, replace

import torch
import tyro

from agon_env.rules import drafter_seat, game_rates
from baselines.config import LearnerArgs, policy_template
from baselines.evaluate import choose_direction, evaluate_pair
from baselines.policy import load_pair
from baselines.rollouts import Rollouts
from baselines.training import batch_for_step, finish, resumed, train
from baselines.update import make_optimizer


@dataclass
class Args(LearnerArgs):
    """RLOO for both players of the Agon game."""

    group_size: int = 8
    """N: drafts per problem per step; the challenger answers each once, and each role's baseline is its group"""


def rloo_step(step: int, args: Args, game, train_set, policies, opts, scheds) -> dict:
    d, c = ("A", "B") if drafter_seat(step) == 0 else ("B", "A")
    problems, N = batch_for_step(train_set, step, args.problems_per_step, args.seed), args.group_size
    seed = 2 * (args.seed * 1_000_003 + step)  # drafter's; the challenger's is seed + 1: no reuse across steps
    drafts = Rollouts.sample(policies[d], problems, game.drafter_prompts(problems), N, args.sampling, seed)
    reps = drafts.each_problem  # each draft's problem: the challenger answers every draft once
    answers = Rollouts.sample(policies[c], reps, game.challenger_prompts(reps, drafts.texts), 1, args.sampling, seed + 1)
    played = game.score_round(reps, drafts.texts, answers.texts)
    pays = {d: played.drafter_rewards, c: [g.challenger_reward for g in played.games]}
    for who, gens in ((d, drafts.gens), (c, answers.gens)):
        r = drafts.grid(pays[who])  # [problems, N]: answers follow their drafts, so both roles group the same way
        adv = (r - (r.sum(-1, keepdim=True) - r) / (N - 1)).flatten()  # minus the mean of the other N - 1
        logp, mask = policies[who].token_logprobs([g.prompt_ids for g in gens], [g.completion_ids for g in gens])
        loss = -(adv.to(logp.device) * logp.sum(-1) / mask.sum(-1).clamp(min=1)).mean()
        opts[who].zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(policies[who].parameters(), args.max_grad_norm)
        opts[who].step()
        scheds[who].step()
    rates = game_rates(played.games)
    return {f"win/{d}": rates["win_drafter"], f"win/{c}": rates["win_challenger"], "conversion": rates["conversion"],
            "keep": rates["keep"], "pass/drafter": rates["drafter_pass"], "pass/challenger": rates["challenger_pass"], "drafter": d,
            f"reward/{d}_drafter_mean": sum(pays[d]) / len(reps), f"reward/{c}_challenger_mean": sum(pays[c]) / len(reps)}


def main(args: Args) -> dict:
    t_start, args = time.perf_counter(), resumed(args)
    args.validate("group-size", args.group_size)
    args.seed_everything()
    train_set = args.load("train", args.train_tiers)
    val, test = (args.load(split, args.eval.tier, args.eval.problems) for split in ("validation", args.eval.split))
    a, b = load_pair(args.model_spec(), lora_rank=args.lora_rank, device=args.device, backend=args.backend,
                     seed=args.seed, reference=False, dtype=args.dtype)
    game, policies = args.game(train_set[0].domain, policy_template([a, b])), {"A": a, "B": b}
    made = {k: make_optimizer(p, args) for k, p in policies.items()}  # AdamW and the shared lr schedule
    opts, scheds = {k: o for k, (o, _) in made.items()}, {k: s for k, (_, s) in made.items()}
    evaluate = lambda problems, cfg: evaluate_pair(a, b, problems, game, cfg, args.eval_seed(), args.progress)
    run, before = train(args, "byo_rloo", args.run_name or f"byo_rloo-s{args.seed}-{time.strftime('%Y%m%d-%H%M%S')}",
                        policies, opts, scheds, lambda s: rloo_step(s, args, game, train_set, policies, opts, scheds),
                        evaluate, test, lambda m: {"winA": f"{m['win/A']:.2f}", "conv": f"{m['conversion']:.2f}"})
    direction = choose_direction(evaluate(val, replace(args.eval, greedy=False))[2:])
    return finish(run, "byo_rloo", args, before, evaluate(test, args.eval), direction, lambda history: [], t_start)


if __name__ == "__main__":
    main(tyro.cli(Args))
