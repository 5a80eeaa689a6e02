"""Train with TRL's GRPOTrainer on Agon's rules: the tiny model, the bundled problems, offline, on CPU.

    python examples/trl_grpo.py                       # tiny A as a drafter: GRPO with Agon's math grader
    python examples/trl_grpo.py --mode challenger     # tiny A as a challenger against tiny B's fixed drafts
    python examples/trl_grpo.py --help

`--mode drafter` is plain GRPO: TRL samples a group per problem from the drafter prompt and
pays each completion Agon's drafter reward 2c + λφ (`AgonRewards.drafter_reward`).
`--mode challenger` first lets the rival (tiny B) write one draft per problem; the dataset's
prompt is the challenger prompt with that draft's summary, its columns carry the draft's
verdict, and TRL pays each answer Agon's challenger reward with the conversion bonus
(`AgonRewards.challenger_reward`). Rewards and graders are the env's own (`AgonGame`), so
the numbers TRL logs are the ones the env would pay. This is a one-role recipe: the paper's
two-policy game, with roles swapping every step, is `python -m baselines.agon_grpo`.

The defaults are a smoke-sized run (about a minute on one core): 4 problems per step is too few
for the tiny model's pass rate to move (measured: drafter pass 0.405 over the first 20 steps,
0.395 over the last 20). The regime where our own GRPO learns on this model
(`python -m benchmarks.regimes`) is `--prompts-per-step 16 --num-generations 16 --steps 150`.

Outputs go to `--out-dir/trl_grpo-<mode>-s<seed>-<time>/`: TRL's `log_history.json` (reward,
loss, and the `agon/pass`, `agon/conversion`, `agon/keep` metrics the reward functions log)
and the trained model in `model/` (opens with `AutoModelForCausalLM`; its tokenizer with
`PreTrainedTokenizerFast.from_pretrained`).
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # before transformers loads: nothing here needs the hub, a failed lookup costs ~45 s

import json  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Literal  # noqa: E402

import torch  # noqa: E402
import tyro  # noqa: E402

from agon_env import AgonGame  # noqa: E402
from agon_env.integrations.trl import AgonRewards, challenger_dataset, drafter_dataset  # noqa: E402
from baselines.policy import SamplingParams, load_policy  # noqa: E402
from baselines.policy.tiny import load_tiny  # noqa: E402
from problems import load  # noqa: E402


@dataclass
class Args:
    """TRL GRPO on Agon's rewards with the shipped tiny pair."""

    mode: Literal["drafter", "challenger"] = "drafter"
    """'drafter': GRPO on the plain prompt; 'challenger': answer after reading the rival's (tiny B's) draft summary"""
    steps: int = 80
    """optimizer steps (TRL's max_steps; about 0.8 s each at the defaults on one CPU thread)"""
    problems: int = 320
    """training problems from the bundled arith train split (the challenger mode drafts one rival draft for each)"""
    tier: str = "hard"
    """arith tier(s) to train on: easy, medium, hard, comma-separated, or 'all'"""
    prompts_per_step: int = 4
    """problems per optimizer step; each gets a group of --num-generations completions"""
    num_generations: int = 8
    """G: completions per problem, the group GRPO normalises advantages within"""
    lr: float = 1e-4
    """learning rate (the tiny pair's stable window; 3e-4 collapsed it)"""
    temperature: float = 0.7
    """sampling temperature for training rollouts and for the rival's drafts"""
    max_completion_length: int = 128
    """completion length limit in tokens (for the tiny models a character each, a tag one token)"""
    beta: float = 0.0
    """KL weight to the starting model (0: no reference model is kept)"""
    seed: int = 0
    """seed for data order, sampling and the rival's drafts"""
    threads: int = 1
    """torch CPU threads (on a tiny model, a second thread that shares its core with other work costs more than it gains)"""
    out_dir: str = "runs"
    """parent directory of this run's outputs"""


def build_dataset(args: Args, game: AgonGame):
    """The TRL dataset of the chosen mode (the challenger mode samples the rival's drafts first)."""
    problems = load("arith", split="train", tier=args.tier)[:args.problems]
    if args.mode == "drafter":
        return drafter_dataset(problems, game)
    rival = load_policy("tiny:b", device="cpu", backend="hf", reference=False)
    params = SamplingParams(temperature=args.temperature, max_new_tokens=args.max_completion_length)
    drafts = [gs[0].text for gs in rival.generate(game.drafter_prompts(problems), 1, params, seed=args.seed)]
    return challenger_dataset(problems, drafts, game)


def main(args: Args):
    """Train; returns the trainer (its `state.log_history` holds every logged number)."""
    from transformers.utils import logging as hf_logging
    from trl import GRPOConfig, GRPOTrainer

    hf_logging.disable_progress_bar()  # per-load and per-save bars are noise in a run's log
    # TRL 1.16 reads transformers 5's renamed gradient_checkpointing options: deprecation noise, not ours to fix
    warnings.filterwarnings("ignore", message=".*gradient_checkpointing.*", category=FutureWarning)
    torch.set_num_threads(args.threads)
    t_start = time.perf_counter()
    out = Path(args.out_dir) / f"trl_grpo-{args.mode}-s{args.seed}-{time.strftime('%Y%m%d-%H%M%S')}"
    game = AgonGame(template="compact")  # the prompt the tiny pair was trained on
    dataset = build_dataset(args, game)
    rewards = AgonRewards(game)
    model, tokenizer = load_tiny("a")
    config = GRPOConfig(
        output_dir=str(out), max_steps=args.steps, learning_rate=args.lr, seed=args.seed, beta=args.beta,
        per_device_train_batch_size=args.prompts_per_step * args.num_generations, num_generations=args.num_generations,
        temperature=args.temperature, max_completion_length=args.max_completion_length,
        use_cpu=True, bf16=False, report_to="none", logging_steps=1, save_strategy="no", disable_tqdm=True,
    )
    trainer = GRPOTrainer(
        model=model, processing_class=tokenizer, args=config, train_dataset=dataset,
        reward_funcs=rewards.drafter_reward if args.mode == "drafter" else rewards.challenger_reward,
    )
    trainer.train()
    trainer.save_model(str(out / "model"))
    (out / "log_history.json").write_text(json.dumps(trainer.state.log_history, indent=2))

    steps = [h for h in trainer.state.log_history if "reward" in h]
    q = max(1, len(steps) // 4)
    for key in ("reward", "agon/pass", "agon/conversion", "agon/keep"):
        vals = [h[key] for h in steps if key in h]
        if vals:
            print(f"{key}: {sum(vals[:q]) / len(vals[:q]):.3f} over the first {q} steps → "
                  f"{sum(vals[-q:]) / len(vals[-q:]):.3f} over the last {q}")
    print(f"{len(steps)} steps, {time.perf_counter() - t_start:.0f} s wall; outputs in {out}: log_history.json, model/")
    return trainer


if __name__ == "__main__":
    main(tyro.cli(Args))
