"""The update both learners make: the optimiser and its schedule, one clipped GRPO step."""

from __future__ import annotations

import math
from typing import Sequence

import torch

from . import distributed as dist
from .config import LearnerArgs
from .grpo_loss import policy_loss, truncated_is_weights
from .policy import Generation, Policy


def lr_factor(step: int, args: LearnerArgs) -> float:
    """The learning rate at `step` as a fraction of `--lr`: linear warm-up, then `--lr-schedule`."""
    warm = max(1, int(args.warmup_frac * args.steps))
    if step < warm:
        return (step + 1) / warm
    if args.lr_schedule == "constant":
        return 1.0
    left = (args.steps - step) / max(1, args.steps - warm)  # 1 at the end of warm-up, 1/(steps-warm) at the last step
    shape = left if args.lr_schedule == "linear" else 0.5 * (1 - math.cos(math.pi * left))
    shape = max(0.0, shape)
    return shape if not args.lr_floor else args.lr_floor + (1 - args.lr_floor) * shape


def make_optimizer(policy: Policy, args: LearnerArgs):
    if args.optimizer == "sgd":
        opt = torch.optim.SGD(policy.parameters(), lr=args.lr, momentum=0.9)
    else:
        opt = torch.optim.AdamW(policy.parameters(), lr=args.lr, weight_decay=0.0)
    return opt, torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_factor(s, args))


def grpo_update(policy: Policy, opt, sched, gens: Sequence[Generation], advantages: torch.Tensor,
                args: LearnerArgs) -> dict[str, float]:
    """One clipped policy-gradient step on `gens` with their advantages. Under torchrun `gens` are this
    rank's share of the batch, and the step is the one the whole batch would make in one process.
    The per-token stats (clip_frac, kl, sampler_gap) are over the completions scored."""
    keep = [i for i, g in enumerate(gens) if g.completion_ids]
    gens, adv = [gens[i] for i in keep], advantages[keep]
    policy.train()
    opt.zero_grad(set_to_none=True)
    tokens = sum(len(g.completion_ids) for g in gens)
    share = dist.loss_share(len(gens), tokens, args.loss_type)  # 1.0 in one process: an exact no-op
    # Without a KL term a completion of advantage exactly 0 (an all-equal group) adds exactly 0 to the gradient, so
    # its forward/backward is skipped; it still counts in the loss's normaliser, so the step is the same.
    live = [i for i, nonzero in enumerate((adv != 0).tolist()) if nonzero or args.beta]
    live_tokens = sum(len(gens[i].completion_ids) for i in live)
    loss, stats = 0.0, {"clip_frac": 0.0, "kl": 0.0, "sampler_gap": 0.0}
    size = args.micro_batch or max(len(live), 1)
    for lo in range(0, len(live), size):
        idx = live[lo:lo + size]
        part = [gens[i] for i in idx]
        part_tokens = sum(len(g.completion_ids) for g in part)
        # each loss is a mean over its own part: weigh it by the part's share of this batch's normaliser
        weight = part_tokens / tokens if args.loss_type == "dapo" else len(part) / len(gens)
        part_loss, part_stats = _loss(policy, part, adv[idx], args)
        (part_loss * (share * weight)).backward()
        loss += part_loss.item() * weight
        for k, v in part_stats.items():  # per-token means over the completions computed
            stats[k] += v * part_tokens / live_tokens
    for p in policy.parameters():  # nothing computed still steps on zeros: Adam's momentum moves the weights
        if p.grad is None:
            p.grad = torch.zeros_like(p)
    # every rank joins the all-reduce, also one with nothing to update
    dist.all_reduce_grads(policy.parameters())
    grad_norm = torch.nn.utils.clip_grad_norm_(policy.parameters(), args.max_grad_norm)
    opt.step()
    sched.step()
    policy.publish()
    total, means = dist.global_stats(loss * share, stats, live_tokens)
    return {"loss": total, "grad_norm": float(grad_norm), **means}


def _loss(policy: Policy, gens: Sequence[Generation], adv: torch.Tensor, args: LearnerArgs):
    """(the clipped loss over `gens`, its clip_frac, kl and sampler_gap).

    sampler_gap: mean |trainer − sampler| log-prob per token, how far the numbers the sampler (this
    process, a vLLM engine or server) returned are from the recompute; with --tempered-logprobs the
    two are at different temperatures, so it is 0 there and means nothing."""
    pids, cids = [g.prompt_ids for g in gens], [g.completion_ids for g in gens]
    temp = args.sampling.temperature if args.tempered_logprobs else 1.0
    logp, mask = policy.token_logprobs(pids, cids, temperature=temp, share_prompts=args.share_prompts)
    weight, gap = None, 0.0
    if args.tempered_logprobs:  # one update per batch is exactly on-policy: the old policy is this one (TRL's choice too)
        old = logp.detach()
    else:
        old = torch.zeros_like(logp)
        for i, g in enumerate(gens):
            old[i, :len(g.logprobs)] = torch.tensor(g.logprobs)
        old = old.to(logp.device)
        gap = float(((logp.detach() - old).abs() * mask).sum() / mask.sum().clamp(min=1))
        if args.is_cap:  # TRL's vLLM correction: on-policy ratio, each token weighted by trainer / sampler
            weight = truncated_is_weights(logp, old, mask, args.is_cap)
            old = logp.detach()
    ref = policy.reference_logprobs(pids, cids, temperature=temp, share_prompts=args.share_prompts) if args.beta else None
    ref = ref[0] if isinstance(ref, tuple) else ref
    loss, stats = policy_loss(logp, old, adv.to(logp.device), mask, args.loss_type, args.eps_low,
                              args.eps_high, ref, args.beta, args.sampling.max_new_tokens, weight)
    return loss, {**stats, "sampler_gap": gap}
