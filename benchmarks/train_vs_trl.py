"""Our GRPO step against TRL's GRPOTrainer on identical work, interleaved in one process.

    python -m benchmarks.train_vs_trl                       # 5 rounds × 4 steps per side, 4 problems × G = 8
    python -m benchmarks.train_vs_trl --rounds 9 --steps-per-round 4 --threads 2
    python -m benchmarks.train_vs_trl --model DIR --device cuda --dtype bfloat16 --lora-rank 16 --beta 0.04

The first two are the CPU table. The third is what `benchmarks.gpu_check` runs on a GPU: any HF model
(there a random-weight Qwen3-0.6B shape from `benchmarks.shaped_model`), LoRA on both sides (TRL
gets the same `LoraConfig` through `peft_config`), bf16 on both sides (TRL: `bf16=True`). A random
model is graded 0 everywhere, so every advantage is 0: at β = 0 our update would skip every
completion while TRL computes them all, so it runs at β > 0, where both score every completion and
its reference (the base with the adapter off, on both sides). On CUDA each step is timed between
`torch.cuda.synchronize()` calls, and its peak GPU memory is recorded (the process's: every side's
weights are resident).

The work. Both sides train the shipped tiny model A from the same weights (ours through
`load_policy("tiny:a", backend="hf")`, TRL's from `load_tiny("a")`) on the bundled arith hard
train prompts in the game's own drafter prompt (`AgonGame(template="compact")`), with the
same group size G, problems per step, completion length limit, temperature (top-p 1, no
top-k), AdamW at a constant learning rate with no weight decay, gradient clipping at 1.0,
the same loss type and clip range (0.2), advantages scaled by the group's std, β = 0, and
one update per generation batch (TRL: num_iterations = 1, steps_per_generation = 1, so
neither side recomputes old log-probs; ours scores under logits / T as TRL does,
`--tempered-logprobs`). The reward is Agon's drafter reward from the same game: ours
through `AgonGame.grade_solo`, TRL's through `agon_env.integrations.trl.AgonRewards`,
which calls the same. Step s of each side trains on the same problems: TRL's dataset is
the order our `batch_for_step` draws, read unshuffled (`shuffle_dataset=False`); the
benchmark records the problem ids TRL's reward function saw, to check.

Interleaving. TRL's `trainer.train()` runs once, for 1 + rounds × steps-per-round steps,
and a `TrainerCallback` drives the rest: `on_train_begin` runs our warm-up step; after
TRL's warm-up step, and after each of its rounds, `on_step_end` runs our next round of
`baselines.grpo.grpo_step`s. So the order is ours, TRL (warm-up, left out), then rounds of
ours then TRL's, each pair under the same machine load. "Ours" is two sides, each with its own
copy of the model and optimizer, run one after the other in every round: the learners' defaults,
and `--share-prompts` (each group's prompt computed once in the update), so the option's gain is
measured under the same load as the rest. One `train()` is more robust than
calling `train()` per round: a second `train()` call rebuilds the scheduler and restarts
the data loader and step count, which would need a checkpoint to resume. Each TRL step is
timed from `on_step_begin` to `on_step_end`: generation, reward, loss forward (TRL also
computes entropies there), backward, clipping and the optimizer step. The data loader's
fetch (before `on_step_begin`) and TRL's logging (after `on_step_end`) fall outside that
span, which can only flatter TRL. Each of ours is timed around `grpo_step`, its metrics
included.

Tokens. Completion tokens are counted from what each side generated: ours from the
`completion_ids` of the `Generation`s its policy returned, TRL's from the `completion_ids`
TRL passes its reward function (both end at, and include, the EOS token). TRL's own log
(`completions/mean_length` × completions, logging every step) is kept as a cross-check.
Per round: seconds per step and completion tokens per second; the table gives the median
over rounds, and each of ours / TRL's median tokens per second against the issue's target (1.5×).

TRL's settings: gradient_checkpointing=False (its default, True, recomputes the forward in
the backward, a loss on a model this small), report_to none, no progress bar and no printed logs,
logging every step (only the metric means it keeps anyway), no checkpoints, use_cpu, fp32, its
default optimizer implementation (`optim`, recorded) and plain `model.generate` (no vLLM:
there is no GPU; no continuous batching, which targets paged GPU attention).
"""

from __future__ import annotations

import dataclasses
import json
import statistics
import tempfile
import time
import warnings
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Literal

import torch
import tyro

from agon_env import AgonGame
from agon_env.integrations.trl import AgonRewards, drafter_dataset
from baselines import grpo
from baselines.config import Dtype
from baselines.policy import load_policy
from baselines.policy.hf import load_hf
from baselines.policy.lora import lora_config
from baselines.policy.spec import ModelSpec
from baselines.policy.tiny import load_tiny
from baselines.training import batch_for_step
from baselines.update import make_optimizer
from benchmarks.report import RESULTS, clock, command_line, gpu_name, peak_gib, require_at_least, require_device, write_report
from problems import load

TARGET = 1.5  # issue 15: ours ≥ 1.5× TRL's completion tokens per second
OURS = {"ours": "baselines.grpo step", "ours_shared": "baselines.grpo step --share-prompts"}


@dataclass
class Args:
    """Our GRPO step vs TRL's GRPOTrainer on identical work, interleaved in rounds (ours, then TRL's)."""

    model: str = "tiny:a"
    """the model both sides train: 'tiny:a' (the shipped tiny model A, trained fully), or an HF model dir"""
    device: Literal["cpu", "cuda"] = "cpu"
    """'cpu' or 'cuda', for both sides"""
    dtype: Dtype = "float32"
    """weights' dtype on both sides ('bfloat16': TRL runs with bf16=True)"""
    lora_rank: int = 0
    """LoRA rank on both sides (0: train the full model; the tiny model is always trained fully)"""
    beta: float = 0.0
    """KL weight on both sides (> 0 scores every completion and its reference: use it for a random-weight model)"""
    rounds: int = 5
    """timed rounds; each runs --steps-per-round of our steps, then as many of TRL's (after one warm-up step each)"""
    steps_per_round: int = 4
    """optimizer steps per side per round"""
    problems_per_step: int = 4
    """problems per optimizer step (each gets a group of --group completions)"""
    group: int = 8
    """G: completions per problem"""
    max_new_tokens: int = 128
    """completion length limit in tokens (TRL's max_completion_length)"""
    temperature: float = 0.7
    """sampling temperature (top-p 1, no top-k)"""
    lr: float = 1e-4
    """AdamW learning rate, constant, no warm-up"""
    loss_type: Literal["grpo", "dapo", "dr_grpo"] = "grpo"
    """loss reduction on both sides: 'grpo', 'dapo' or 'dr_grpo'"""
    seed: int = 0
    """seed of both sides' sampling, TRL's init and the problem order"""
    threads: int = 2
    """torch CPU threads (torch.set_num_threads), for both sides"""
    results_dir: str = str(RESULTS)
    """where <name>.json and <name>.md go"""
    name: str = "train_vs_trl"
    """base name of the output files"""

    def check(self) -> None:
        """Fail before any work, naming the option."""
        require_at_least(self, {"rounds": 1, "steps_per_round": 1, "problems_per_step": 1, "group": 2,
                                "max_new_tokens": 1, "threads": 1, "lora_rank": 0, "beta": 0})
        try:
            spec = ModelSpec.parse(self.model)
        except ValueError as e:
            raise SystemExit(f"error: --model: {e}") from None
        if len(spec.parts) != 1 or self.model == "tiny":
            raise SystemExit(f"error: --model takes one model ('tiny:a' or an HF model dir), got {self.model!r}")
        if spec.tiny and self.lora_rank:
            raise SystemExit("error: --lora-rank: the tiny model is trained fully; use --lora-rank 0")
        require_device(self.device)


def _ours(args: Args, train_set, share_prompts: bool):
    """(our step function as `baselines.grpo.main` builds it, the grpo Args, the token counter, the game)."""
    a = grpo.Args(model=args.model, problems_per_step=args.problems_per_step, rollouts_per_problem=args.group, lr=args.lr,
                  lr_schedule="constant", warmup_frac=0.0, optimizer="adamw", max_grad_norm=1.0,
                  loss_type=args.loss_type, eps_low=0.2, eps_high=0.2, scale_std=True, beta=args.beta,
                  tempered_logprobs=True, share_prompts=share_prompts, seed=args.seed, threads=args.threads,
                  device=args.device, dtype=args.dtype, lora_rank=args.lora_rank, backend="hf",
                  steps=1 + args.rounds * args.steps_per_round, progress=False)
    a.sampling = dataclasses.replace(a.sampling, temperature=args.temperature, top_p=1.0,
                                     max_new_tokens=args.max_new_tokens, greedy=False)
    policy = load_policy(args.model, device=args.device, backend="hf", seed=args.seed, reference=args.beta > 0,
                         lora_rank=args.lora_rank, dtype=args.dtype)
    game = a.game(train_set[0].domain, policy.template)  # 'compact' for the tiny model, else 'default'
    opt, sched = make_optimizer(policy, a)
    made = [0, 0, 0]  # completion tokens, completions, completions scored by the update since the last reset
    generate, score = policy.generate, policy.token_logprobs

    def counted(*pos, **kw):
        groups = generate(*pos, **kw)
        made[0] += sum(len(g.completion_ids) for gs in groups for g in gs)
        made[1] += sum(len(gs) for gs in groups)
        return groups

    def scored(prompt_ids, completion_ids, **kw):
        made[2] += len(completion_ids)
        return score(prompt_ids, completion_ids, **kw)
    policy.generate, policy.token_logprobs = counted, scored
    return (lambda step: grpo.grpo_step(step, a, game, train_set, policy, opt, sched)), a, made, game


def run(args: Args) -> dict:
    """Both sides, interleaved; returns per-step records of each side and TRL's config."""
    from transformers import PrinterCallback, TrainerCallback
    from transformers.utils import logging as hf_logging
    from trl import GRPOConfig, GRPOTrainer

    hf_logging.disable_progress_bar()
    warnings.filterwarnings("ignore", message=".*gradient_checkpointing.*", category=FutureWarning)
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    k, n_steps = args.steps_per_round, 1 + args.rounds * args.steps_per_round
    train_set = load("arith", split="train", tier="hard")
    ours = {side: _ours(args, train_set, share) for side, share in (("ours", False), ("ours_shared", True))}
    game: AgonGame = ours["ours"][3]  # the game ours plays, and TRL's reward is paid by
    # step s of every side: the problems our batch_for_step draws for it (grpo_step's own call)
    order = [batch_for_step(train_set, s, args.problems_per_step, args.seed) for s in range(n_steps)]
    steps = {"ours": [], "ours_shared": [], "trl": []}
    now = clock(args.device)  # synchronizes first on CUDA: a step is over when its kernels are
    seen = {"tokens": 0, "completions": 0, "ids": []}

    def drafter_reward(prompts, completions, **columns):  # TRL names its logged reward after the function
        seen["tokens"] += sum(len(ids) for ids in columns["completion_ids"])
        seen["completions"] += len(completions)
        seen["ids"] += [json.loads(p)["id"] for p in columns["problem"][::args.group]]
        return rewards.drafter_reward(prompts, completions, **columns)

    def ours_round(first: int, count: int):
        for side, (our_step, _, made, _) in ours.items():  # our default, then --share-prompts
            for s in range(first, first + count):
                made[:] = [0, 0, 0]
                peak_gib(args.device, reset=True)
                t = now()
                m = our_step(s)
                secs = now() - t
                if round(m["length"] * m["rollouts"]) != made[0]:
                    raise RuntimeError(f"{side} step {s}: counted {made[0]} tokens, its metrics say "
                                       f"{m['length'] * m['rollouts']}")
                steps[side].append({"step": s, "seconds": secs, "tokens": made[0], "completions": made[1], "scored": made[2],
                                    "problems": [p.id for p in order[s]], "threads": torch.get_num_threads(),
                                    "peak_gib": peak_gib(args.device)})

    class Interleave(TrainerCallback):
        def on_train_begin(self, *_, **__):
            ours_round(0, 1)  # our warm-up

        def on_step_begin(self, *_, **__):
            seen.update(tokens=0, completions=0, ids=[])
            peak_gib(args.device, reset=True)
            self.t = now()

        def on_step_end(self, _args, state, *_, **__):
            secs = now() - self.t
            steps["trl"].append({"step": state.global_step - 1, "seconds": secs, "tokens": seen["tokens"],
                                 "completions": seen["completions"], "problems": seen["ids"],
                                 "threads": torch.get_num_threads(), "peak_gib": peak_gib(args.device)})
            if (state.global_step - 1) % k == 0 and state.global_step < n_steps:
                ours_round(state.global_step, k)  # our next round, before TRL's

    rewards = AgonRewards(game)
    model, tokenizer = load_tiny("a") if ModelSpec.parse(args.model).tiny else load_hf(args.model, args.device, args.dtype)
    chat = bool(getattr(tokenizer, "chat_template", None))  # ours wraps prompts in the chat template: so must TRL
    with tempfile.TemporaryDirectory(prefix="agon_train_vs_trl_") as out:
        config = GRPOConfig(
            output_dir=out, max_steps=n_steps, learning_rate=args.lr, lr_scheduler_type="constant", warmup_steps=0,
            weight_decay=0.0, max_grad_norm=1.0, seed=args.seed, beta=args.beta, loss_type=args.loss_type, epsilon=0.2,
            scale_rewards="group", num_iterations=1, steps_per_generation=1, gradient_accumulation_steps=1,
            per_device_train_batch_size=args.problems_per_step * args.group, num_generations=args.group,
            temperature=args.temperature, top_p=1.0, top_k=0, max_completion_length=args.max_new_tokens,
            shuffle_dataset=False, gradient_checkpointing=False, use_cpu=args.device == "cpu",
            bf16=args.dtype == "bfloat16", report_to="none",
            logging_steps=1, save_strategy="no", disable_tqdm=True, dataloader_num_workers=0,
        )
        trainer = GRPOTrainer(model=model, processing_class=tokenizer, args=config, reward_funcs=drafter_reward,
                              train_dataset=drafter_dataset([p for ps in order for p in ps], game, conversational=chat),
                              callbacks=[Interleave()],
                              peft_config=lora_config(model, args.lora_rank) if args.lora_rank else None)
        trainer.remove_callback(PrinterCallback)  # disable_tqdm's stand-in prints every log line; not needed
        trainer.train()
    logged = [h for h in trainer.state.log_history if "completions/mean_length" in h]
    for rec, h in zip(steps["trl"], logged):
        rec["tokens_logged"] = round(h["completions/mean_length"] * rec["completions"])
    settings = {key: getattr(config, key) for key in (
        "gradient_checkpointing", "optim", "loss_type", "scale_rewards", "num_iterations", "steps_per_generation",
        "epsilon", "beta", "max_grad_norm", "lr_scheduler_type", "logging_steps", "report_to", "disable_tqdm",
        "use_vllm", "use_transformers_paged", "shuffle_dataset", "bf16", "use_cpu")}
    settings["optim"] = getattr(settings["optim"], "value", settings["optim"])
    settings["report_to"] = ",".join(settings["report_to"]) or "none"
    return {"steps": steps, "trl_settings": settings}


def rounds_of(records: list[dict], rounds: int, k: int) -> list[dict]:
    """Per timed round (the warm-up step left out): seconds per step and completion tokens per second."""
    out = []
    for r in range(rounds):
        block = records[1 + r * k:1 + (r + 1) * k]
        secs, tokens = sum(x["seconds"] for x in block), sum(x["tokens"] for x in block)
        out.append({"s_per_step": secs / len(block), "tokens_per_s": tokens / secs, "tokens": tokens,
                    "completions": sum(x["completions"] for x in block)})
    return out


def setting(args: Args, sep: str = " on ") -> str:
    """The model, device and dtype in words: 'tiny A on CPU', or 'DIR, LoRA r = 16 on CUDA, bfloat16'."""
    model = "tiny A" if ModelSpec.parse(args.model).tiny else args.model
    lora = f", LoRA r = {args.lora_rank}" if args.lora_rank else ""
    dtype = "" if args.dtype == "float32" else f", {args.dtype}"
    return f"{model}{lora}{sep}{args.device.upper()}{dtype}"


def machine(device: str) -> str:
    """The GPU's name and CUDA version, or '' on CPU."""
    return gpu_name() if device == "cuda" else ""


def main(args: Args) -> dict:
    args.check()
    t0 = time.perf_counter()
    res = run(args)
    steps = res["steps"]
    per_round = {side: rounds_of(steps[side], args.rounds, args.steps_per_round) for side in steps}
    med = {side: {key: statistics.median(r[key] for r in rs) for key in ("s_per_step", "tokens_per_s")}
           for side, rs in per_round.items()}
    ratio = {side: med[side]["tokens_per_s"] / med["trl"]["tokens_per_s"] for side in OURS}
    n_timed = args.rounds * args.steps_per_round
    rows = []
    for side, label in (*OURS.items(), ("trl", f"trl {version('trl')} GRPOTrainer")):
        timed = steps[side][1:]
        rows.append({"learner": label, "s/step": round(med[side]["s_per_step"], 3),
                     "completion tokens/s": round(med[side]["tokens_per_s"], 1),
                     "completions/step": round(sum(x["completions"] for x in timed) / n_timed, 1),
                     "completion tokens/step": round(sum(x["tokens"] for x in timed) / n_timed, 1),
                     **({"peak GPU GiB": round(max(x["peak_gib"] for x in timed), 2)} if args.device == "cuda" else {})})
    for side, label in OURS.items():
        rows.append({"learner": f"{label} / TRL", "s/step": round(med[side]["s_per_step"] / med["trl"]["s_per_step"], 3),
                     "completion tokens/s": round(ratio[side], 3), "completions/step": "", "completion tokens/step": "",
                     **({"peak GPU GiB": ""} if args.device == "cuda" else {})})
    same = [o["problems"] == t["problems"] == x["problems"] and o["completions"] == t["completions"] == x["completions"]
            for o, x, t in zip(steps["ours"], steps["ours_shared"], steps["trl"])]
    s = res["trl_settings"]
    notes = [
        f"Median over {args.rounds} interleaved rounds (each: {args.steps_per_round} steps of ours at the learners' "
        f"defaults, as many with `--share-prompts` (each group's prompt computed once in the update: the same step "
        f"within float rounding), then {args.steps_per_round} of TRL's), after one warm-up step each; {setting(args)}, "
        f"{args.threads} torch thread(s); "
        f"arith hard train prompts, {args.problems_per_step} problems × G = {args.group} per step, "
        f"≤ {args.max_new_tokens} tokens, T = {args.temperature}, AdamW lr {args.lr} constant, loss {args.loss_type}, "
        f"β = {args.beta:g}, one update per generation batch, Agon's drafter reward.",
        f"Identical work: same problems and completions per step on all three in {sum(same)} of {len(same)} steps. "
        "Each side samples its own completions, so completion lengths differ; tokens/s is the fair rate. Ours scored "
        + ", ".join(f"{sum(x['scored'] for x in steps[side][1:]) / sum(x['completions'] for x in steps[side][1:]):.0%}"
                    f" ({label})" for side, label in OURS.items())
        + (" of its completions in the update, as TRL does: at β > 0 every completion is scored against its reference."
           if args.beta else
           " of its completions in the update: the others had advantage exactly 0 (all-equal groups), whose gradient "
           "is exactly 0, so their forward/backward is skipped (baselines/update.py); TRL scores every completion."),
        f"TRL's settings: gradient_checkpointing={s['gradient_checkpointing']} (its default is True), "
        f"optim={s['optim']} (its default), report_to={s['report_to']}, disable_tqdm={s['disable_tqdm']}, "
        f"logging_steps={s['logging_steps']}, use_vllm={s['use_vllm']}, num_iterations={s['num_iterations']}, "
        f"{'bf16=True' if args.dtype == 'bfloat16' else 'fp32'}"
        f"{f', peft_config LoRA r = {args.lora_rank} (the same LoraConfig as ours)' if args.lora_rank else ''}; "
        "its step is timed on_step_begin → on_step_end (data fetch and logging outside).",
        *([f"{machine(args.device)}; steps timed between torch.cuda.synchronize() calls; peak GPU GiB: the process's "
           "peak during a step (every side's weights resident), max over the timed steps."] if args.device == "cuda" else []),
        *(f"Target ours ≥ {TARGET}× TRL's completion tokens/s, {label}: "
          f"{'met' if ratio[side] >= TARGET else 'not met'} ({ratio[side]:.2f}×)." for side, label in OURS.items()),
        f"torch {version('torch')}, transformers {version('transformers')}, trl {version('trl')}.",
    ]
    extra = {"args": dataclasses.asdict(args), "threads": args.threads, "ratio_tokens_per_s": ratio,
             "target": TARGET, "target_met": {side: r >= TARGET for side, r in ratio.items()}, "identical_work_steps": sum(same),
             "median": med, "rounds": per_round, "steps": steps, "trl_settings": s,
             "versions": {p: version(p) for p in ("torch", "transformers", "trl", "peft")}, "machine": machine(args.device),
             "wall_s": time.perf_counter() - t0}
    write_report(args.name, f"GRPO step: ours vs TRL GRPOTrainer ({setting(args, ', ')}, interleaved)", rows, notes,
                 extra, out_dir=Path(args.results_dir), command=command_line("benchmarks.train_vs_trl", args))
    return extra


if __name__ == "__main__":
    main(tyro.cli(Args))
