"""The update both learners make: AdamW with a warm-up/decay schedule, one clipped GRPO step."""

from __future__ import annotations

from typing import Sequence

import torch

from .config import LearnerArgs
from .grpo_loss import policy_loss
from .policy import Generation, Policy


def make_optimizer(policy: Policy, args: LearnerArgs):
    opt = torch.optim.AdamW(policy.parameters(), lr=args.lr, weight_decay=0.0)
    warm = max(1, int(args.warmup_frac * args.steps))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: (s + 1) / warm if s < warm else max(0.0, (args.steps - s) / max(1, args.steps - warm)))
    return opt, sched


def grpo_update(policy: Policy, opt, sched, gens: Sequence[Generation], advantages: torch.Tensor,
                args: LearnerArgs) -> dict[str, float]:
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
                              args.eps_high, ref, args.beta, args.sampling.max_new_tokens)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    grad_norm = torch.nn.utils.clip_grad_norm_(policy.parameters(), args.max_grad_norm)
    opt.step()
    sched.step()
    return {"loss": loss.item(), "grad_norm": float(grad_norm), **stats}
