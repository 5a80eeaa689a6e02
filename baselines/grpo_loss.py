"""GRPO's two pieces of arithmetic: group-relative advantages and the clipped loss.

Every learner imports these; the rewards themselves come from `agon_env`.
"""

from __future__ import annotations

import torch

LOSS_TYPES = ("grpo", "dapo", "dr_grpo")


def group_advantages(rewards: torch.Tensor, scale_std: bool = True, eps: float = 1e-4,
                     by: torch.Tensor | None = None) -> torch.Tensor:
    """A_i = (r_i − mean(group)) / (std(group) + eps) over the last dim (one row per group).

    `scale_std=False` keeps only the centring (Dr. GRPO). A group whose rewards are all
    equal gets exactly zero advantage, so it adds no gradient: tested as max == min, because
    equal rewards such as 0.7 have a mean a rounding away from them, which the std (also
    rounding-sized) would scale up to ~1e-3. `by` (rewards' shape, integer keys) splits each
    row further: r_i is compared only with its row's rewards of the same key (a key held by
    one element gives it zero advantage).
    """
    if by is not None:
        out = torch.zeros_like(rewards)
        for key in by.unique():
            m = by == key
            n = m.sum(-1, keepdim=True).clamp(min=1)
            centred = rewards - (rewards * m).sum(-1, keepdim=True) / n
            if scale_std:
                centred = centred / (((centred ** 2) * m).sum(-1, keepdim=True) / n).sqrt().add(eps)
            spread = (rewards.masked_fill(~m, -torch.inf).amax(-1, keepdim=True)
                      > rewards.masked_fill(~m, torch.inf).amin(-1, keepdim=True))
            out = torch.where(m & spread, centred, out)
        return out
    centred = rewards - rewards.mean(dim=-1, keepdim=True)
    if scale_std:
        centred = centred / (rewards.std(dim=-1, keepdim=True, unbiased=False) + eps)
    return torch.where(rewards.amax(-1, keepdim=True) > rewards.amin(-1, keepdim=True), centred, 0.0)


def policy_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    loss_type: str = "grpo",
    eps_low: float = 0.2,
    eps_high: float = 0.2,
    ref_logp: torch.Tensor | None = None,
    beta: float = 0.0,
    max_tokens: int | None = None,
    token_weight: torch.Tensor | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """The clipped surrogate with an optional k3 KL term, reduced per `loss_type`.

    logp, old_logp, ref_logp, mask: [B, T] per completion token; advantages: [B].
    - grpo:    mean over each sequence's tokens, then over sequences;
    - dapo:    mean over every token in the batch;
    - dr_grpo: sum over tokens divided by the constant B · max_tokens.
    `token_weight` [B, T] (e.g. `truncated_is_weights`) multiplies each token's surrogate; None: none.
    """
    if loss_type not in LOSS_TYPES:
        raise ValueError(f"loss_type must be one of {LOSS_TYPES}, got {loss_type!r}")
    mask = mask.to(logp.dtype)
    ratio = torch.exp(logp - old_logp)
    adv = advantages.unsqueeze(-1)
    surrogate = torch.minimum(ratio * adv, torch.clamp(ratio, 1 - eps_low, 1 + eps_high) * adv)
    per_token = -surrogate if token_weight is None else -surrogate * token_weight
    kl = torch.zeros_like(logp)
    if ref_logp is not None and beta:
        delta = ref_logp - logp
        kl = torch.exp(delta) - delta - 1  # k3: unbiased, always ≥ 0
        per_token = per_token + beta * kl
    if loss_type == "grpo":
        loss = ((per_token * mask).sum(-1) / mask.sum(-1).clamp(min=1)).mean()
    elif loss_type == "dapo":
        loss = (per_token * mask).sum() / mask.sum().clamp(min=1)
    else:
        loss = (per_token * mask).sum() / (logp.shape[0] * (max_tokens or logp.shape[1]))
    n = mask.sum().clamp(min=1)
    clipped = ((ratio < 1 - eps_low) & (adv < 0)) | ((ratio > 1 + eps_high) & (adv > 0))
    stats = {"clip_frac": float((clipped.to(mask.dtype) * mask).sum() / n),
             "kl": float((kl.detach() * mask).sum() / n)}
    return loss, stats


def truncated_is_weights(train_logp: torch.Tensor, sampler_logp: torch.Tensor, mask: torch.Tensor,
                         cap: float = 3.0) -> torch.Tensor:
    """min(exp(logp_train − logp_sampler), cap) per token, without gradient: truncated importance
    sampling for a sampler (a vLLM server) whose numbers differ from the trainer's.

    TRL's `vllm_importance_sampling_mode="token_truncate"` with `vllm_importance_sampling_clip_max`
    = `cap` (its deprecated `vllm_importance_sampling_cap`): padding (mask 0) gets exactly 1.
    """
    diff = ((train_logp.detach() - sampler_logp) * mask.to(train_logp.dtype)).nan_to_num(0.0)
    return torch.exp(diff).clamp(max=cap)
