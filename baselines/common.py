"""What both learners share: their common options, the data stream and the GRPO update.

Each learner (`baselines.grpo`, `baselines.agon_grpo`) is one file that reads top to
bottom; this module holds only what would otherwise be copied between them.
"""

from __future__ import annotations

import os
import random
import re
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from agon_env.game import AgonGame
from agon_env.prompts import TEMPLATES
from agon_env.rules import REWARD_SCHEMES
from problems.record import Problem

from .evaluate import EvalConfig
from .grpo_loss import LOSS_TYPES, policy_loss
from .policy import Generation, Policy, SamplingParams


@dataclass
class CommonArgs:
    """Options shared by both learners."""

    # -- model and data
    model: str = "tiny"
    """'tiny' (the shipped offline pair), a local HF model dir, 'smollm2', a hub name, or 'A_PATH,B_PATH'"""
    problems: str = "arith"
    """problem source: 'arith' (bundled), a .jsonl path, or 'deepmath:PATH'"""
    train_tiers: str = "medium,hard"
    """comma-separated difficulty tiers to train on ('all' for every tier)"""
    eval_tier: str = "hard"
    """tier of the held-out split that pass@1 is reported on ('all' for every tier)"""
    eval_problems: int = 300
    """held-out problems evaluated (test split; the same number of validation problems picks the cascade direction)"""
    template: str = "auto"
    """prompt template: 'auto' ('compact' for the tiny models, 'code' for code problems, else 'default'), or one of those"""
    # -- sampling
    temperature: float = 0.7
    """training sampling temperature (T=1.0 with lr 2e-4 collapsed tiny models)"""
    top_p: float = 1.0
    """training nucleus sampling"""
    max_new_tokens: int = 128
    """completion length limit in tokens"""
    # -- optimisation
    steps: int = 150
    """optimizer steps"""
    problems_per_step: int = 4
    """problems per optimizer step (each gets a whole group)"""
    lr: float = 5e-5
    """peak learning rate (linear warm-up, then linear decay to 0)"""
    warmup_frac: float = 0.1
    """fraction of steps spent warming up"""
    max_grad_norm: float = 1.0
    """gradient clipping norm"""
    loss_type: str = "grpo"
    """'grpo' (per-sequence mean), 'dapo' (token mean over the batch) or 'dr_grpo' (constant normaliser)"""
    scale_std: bool = True
    """divide advantages by the group's std (off: Dr. GRPO's centring only)"""
    eps_low: float = 0.2
    """lower clip of the importance ratio: 1 - eps_low"""
    eps_high: float = 0.2
    """upper clip of the importance ratio: 1 + eps_high (DAPO uses 0.28)"""
    beta: float = 0.0
    """KL weight to the reference (the LoRA-disabled base, or a frozen copy of a full model)"""
    lora_rank: int = 16
    """LoRA rank for HF models (the tiny pair is trained fully)"""
    format_weight: float = 0.5
    """λ, the format term's weight in every reward"""
    # -- run
    seed: int = 0
    """seed for data order, sampling and initialisation"""
    threads: int = 2
    """torch CPU threads (fixed, so runs are reproducible)"""
    device: str = "auto"
    """'auto', 'cpu' or 'cuda'"""
    backend: str = "auto"
    """generation backend: 'auto' (vLLM when CUDA and vllm are present, else HF), 'hf' or 'vllm'"""
    eval_samples: int = 4
    """samples per held-out problem for pass@1"""
    eval_temperature: float = 0.7
    """temperature for pass@1"""
    eval_top_p: float = 1.0
    """nucleus sampling for pass@1"""
    eval_every: int = 50
    """steps between held-out evaluations on a 100-problem slice (0: only before and after)"""
    out_dir: str = "runs"
    """parent directory of this run's outputs"""
    run_name: str = ""
    """run directory name (default: learner-seed-time)"""
    checkpoint_every: int = 50
    """steps between checkpoints (0: none)"""
    resume: str = ""
    """a run directory to continue from its last checkpoint"""
    progress: bool = True
    """show a progress bar"""

    def validate(self, group_name: str, group: int) -> None:
        """Fail before any work, naming the option."""
        if group < 2:
            raise SystemExit(f"error: --{group_name} must be at least 2 (advantages are relative to the group), got {group}")
        if self.loss_type not in LOSS_TYPES:
            raise SystemExit(f"error: --loss-type must be one of {LOSS_TYPES}, got {self.loss_type!r}")
        for name in ("steps", "problems_per_step", "eval_samples", "threads", "max_new_tokens", "eval_problems"):
            if getattr(self, name) < 1:
                raise SystemExit(f"error: --{name.replace('_', '-')} must be at least 1, got {getattr(self, name)}")
        if self.template not in ("auto", *TEMPLATES):
            raise SystemExit(f"error: --template must be 'auto' or one of {sorted(TEMPLATES)}, got {self.template!r}")
        for part in self.model.split(","):
            if part in ("tiny", "tiny:a", "tiny:b", "smollm2") or os.path.exists(os.path.expanduser(part)):
                continue
            if "," not in self.model and re.fullmatch(r"[\w.-]+/[\w.-]+", part) and not part.startswith("."):
                continue  # a hub name, resolved when the model loads
            raise SystemExit(f"error: --model {part!r} is not 'tiny', 'smollm2', an existing path or a hub name (org/name)")
        if self.resume and not os.path.isdir(self.resume):
            raise SystemExit(f"error: --resume {self.resume!r} is not a run directory")

    def sampling(self) -> SamplingParams:
        return SamplingParams(self.temperature, self.top_p, self.max_new_tokens)

    def eval_config(self) -> EvalConfig:
        return EvalConfig(samples=self.eval_samples, temperature=self.eval_temperature, top_p=self.eval_top_p,
                          max_new_tokens=self.max_new_tokens, greedy=True, seed=self.seed + 10_000)

    def game(self, reward: str = "agon", domain: str = "math", **kw) -> AgonGame:
        if reward not in REWARD_SCHEMES:
            raise SystemExit(f"error: --reward must be one of {REWARD_SCHEMES}, got {reward!r}")
        template = self.template
        if template == "auto":
            template = "compact" if self.model.startswith("tiny") else "code" if domain == "code" else "default"
        return AgonGame(reward=reward, format_weight=self.format_weight, template=template, domain=domain, **kw)


def seed_everything(seed: int, threads: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.set_num_threads(threads)


# ---------------------------------------------------------------- data
def _tiers(spec: str) -> set[str] | None:
    return None if spec == "all" else {t.strip() for t in spec.split(",") if t.strip()}


def load_split(args: CommonArgs, split: str, tiers: str, limit: int | None = None) -> list[Problem]:
    from problems import load

    if args.problems.startswith("deepmath:"):  # the paper's 3,000 / 300, plus 300 for the direction choice
        ps = load("deepmath", split=split, path=args.problems.split(":", 1)[1], n_validation=300)
    else:
        ps = load(args.problems, split=split)
    keep = _tiers(tiers)
    if keep is not None:
        if not any("tier" in p.metadata for p in ps):
            raise SystemExit(f"error: {args.problems!r} has no difficulty tiers; pass --train-tiers all --eval-tier all")
        ps = [p for p in ps if p.metadata.get("tier") in keep]
    if not ps:
        raise SystemExit(f"error: no {split!r} problems in {args.problems!r} for tiers {tiers!r}")
    return ps[:limit] if limit else ps


def batch_for_step(problems: Sequence[Problem], step: int, per_step: int, seed: int) -> list[Problem]:
    """The problems of optimizer step `step`: epochs of seeded permutations, so the data
    position is a function of the step alone and a resumed run sees the same stream."""
    n, out = len(problems), []
    for k in range(step * per_step, (step + 1) * per_step):
        epoch, i = divmod(k, n)
        order = np.random.default_rng([seed, epoch]).permutation(n)
        out.append(problems[order[i]])
    return out


# ---------------------------------------------------------------- the update
def make_optimizer(policy: Policy, args: CommonArgs):
    opt = torch.optim.AdamW(policy.parameters(), lr=args.lr, weight_decay=0.0)
    warm = max(1, int(args.warmup_frac * args.steps))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: (s + 1) / warm if s < warm else max(0.0, (args.steps - s) / max(1, args.steps - warm)))
    return opt, sched


def grpo_update(policy: Policy, opt, sched, gens: Sequence[Generation], advantages: torch.Tensor,
                args: CommonArgs) -> dict[str, float]:
    """One clipped policy-gradient step on `gens` with their advantages."""
    keep = [i for i, g in enumerate(gens) if g.completion_ids]
    gens, adv = [gens[i] for i in keep], advantages[keep]
    policy.train()
    pids, cids = [g.prompt_ids for g in gens], [g.completion_ids for g in gens]
    logp, mask = policy.token_logprobs(pids, cids)
    old = torch.zeros_like(logp)
    for i, g in enumerate(gens):
        old[i, :len(g.logprobs)] = torch.tensor(g.logprobs)
    ref = policy.reference_logprobs(pids, cids) if args.beta else None
    ref = ref[0] if isinstance(ref, tuple) else ref
    loss, stats = policy_loss(logp, old.to(logp.device), adv.to(logp.device), mask, args.loss_type, args.eps_low,
                              args.eps_high, ref, args.beta, args.max_new_tokens)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    grad_norm = torch.nn.utils.clip_grad_norm_(policy.parameters(), args.max_grad_norm)
    opt.step()
    sched.step()
    return {"loss": loss.item(), "grad_norm": float(grad_norm), **stats}
