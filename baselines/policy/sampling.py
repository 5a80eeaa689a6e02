"""Batched autoregressive sampling with a KV cache, and the log-probs the update recomputes.

Both use one layout (prompts left-padded, completions right-padded), so sampling-time and
update-time log-probs agree to float precision.
"""

from __future__ import annotations

import inspect

import torch

from .base import SamplingParams


def _eos_ids(model, tokenizer) -> set[int]:
    ids = set()
    for src in (getattr(model.generation_config, "eos_token_id", None), tokenizer.eos_token_id):
        if src is not None:
            ids |= set(src) if isinstance(src, (list, tuple)) else {int(src)}
    if not ids:
        raise ValueError(f"tokenizer {type(tokenizer).__name__} and the model's generation config have no eos_token_id")
    return ids


def _left_pad(seqs: list[list[int]], pad: int, device) -> tuple[torch.Tensor, torch.Tensor]:
    L = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), L), pad, dtype=torch.long)
    mask = torch.zeros((len(seqs), L), dtype=torch.long)
    for i, s in enumerate(seqs):
        if s:
            ids[i, L - len(s):] = torch.tensor(s)
            mask[i, L - len(s):] = 1
    return ids.to(device), mask.to(device)


def _cache_key(model) -> str:
    """The forward's KV-cache argument: transformers 5.2x renamed `past_key_values` to `cache`."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    return "cache" if "cache" in inspect.signature(type(base).forward).parameters else "past_key_values"


def _pick(logits: torch.Tensor, params: SamplingParams, gen) -> torch.Tensor:
    if params.greedy or params.temperature <= 0:
        return logits.argmax(-1)
    probs = torch.softmax(logits / params.temperature, -1)
    if params.top_p < 1.0:
        sp, si = probs.sort(-1, descending=True)
        drop = sp.cumsum(-1) - sp > params.top_p  # keep tokens until the mass before them reaches top_p
        probs = torch.zeros_like(probs).scatter(-1, si, sp.masked_fill(drop, 0.0))
    if isinstance(gen, torch.Generator):
        return torch.multinomial(probs, 1, generator=gen).squeeze(-1)
    return torch.cat([torch.multinomial(probs[rows], 1, generator=g) for rows, g in gen]).squeeze(-1)


@torch.no_grad()
def sample(model, prompt_ids: list[list[int]], params: SamplingParams, eos: set[int], pad: int,
           gen, compact: float = 0.75) -> list[tuple[list[int], list[float], bool]]:
    """Autoregressive sampling with a KV cache over a left-padded batch.

    `gen` is one `torch.Generator` for every row, or a list of (row slice, generator) covering the
    rows in order: each slice then draws from its own generator, as it would in a batch of its own.

    Returns (completion ids, raw-logit log-probs, finished) per row.

    Finished rows leave the decoding batch once the running ones fall to `compact` of it (the batch
    waits on its longest row otherwise; 1.0: leave at once, 0: never). Every step still draws for
    every row, the finished ones from placeholder logits, so each generator's stream does not depend
    on when rows leave; a running row's logits can differ in the last bits (a smaller batch may take
    other matmul kernels), so its tokens are the same unless a draw falls within rounding of a boundary.
    """
    from .fast_decode import Decoder, supports

    # refused as vLLM refuses them (top_p <= 0 would otherwise sample greedily or fail inside torch)
    if params.max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be at least 1, got {params.max_new_tokens}")
    if not (params.greedy or params.temperature <= 0) and not 0 < params.top_p <= 1:
        raise ValueError(f"top_p must be in (0, 1], got {params.top_p}")
    device = next(model.parameters()).device
    ids, mask = _left_pad(prompt_ids, pad, device)
    pos = (mask.cumsum(-1) - 1).clamp(min=0)
    if supports(model):
        dec = Decoder(model, ids.shape[1] + params.max_new_tokens)
        step = lambda ids, mask, pos: dec.forward(ids, pos, mask).float()  # noqa: E731
        select = dec.select
    else:
        from transformers import DynamicCache

        kw = {_cache_key(model): DynamicCache(), "use_cache": True}
        step = lambda ids, mask, pos: model(input_ids=ids, attention_mask=mask, position_ids=pos,  # noqa: E731
                                            **kw).logits[:, -1].float()
        select = kw[_cache_key(model)].batch_select_indices
    logits = step(ids, mask, pos)
    B = len(prompt_ids)
    eos_t = torch.tensor(sorted(eos), device=device)
    done = torch.zeros(B, dtype=torch.bool, device=device)
    rows = torch.arange(B, device=device)  # the rows in the decoding batch, in order
    toks, lps, alive = [], [], []
    full = logits  # [B, V]: a row that left keeps its last logits as a placeholder, drawn from, never used
    for t in range(params.max_new_tokens):
        tok = _pick(full, params, gen)
        toks.append(tok)
        lps.append((full.gather(-1, tok[:, None]).squeeze(-1) - full.logsumexp(-1)))
        alive.append(~done)
        done = done | torch.isin(tok, eos_t)
        if bool(done.all()) or t == params.max_new_tokens - 1:
            break
        running = ~done[rows]
        if int(running.sum()) < len(rows) and int(running.sum()) <= compact * len(rows):
            keep = running.nonzero().squeeze(-1)
            select(keep)
            rows, mask, pos = rows[keep], mask[keep], pos[keep]
        feed = tok[rows].masked_fill(done[rows], pad)
        mask = torch.cat([mask, torch.ones((len(rows), 1), dtype=mask.dtype, device=device)], 1)
        pos = pos[:, -1:] + 1
        logits = step(feed[:, None], mask, pos)
        full = logits if len(rows) == B else full.index_copy_(0, rows, logits)
    toks_t, lps_t, alive_t = (torch.stack(x, 1).cpu() for x in (toks, lps, alive))
    out = []
    for i in range(B):
        k = int(alive_t[i].sum())
        c = toks_t[i, :k].tolist()
        out.append((c, lps_t[i, :k].tolist(), bool(c) and c[-1] in eos))
    return out


def completion_logprobs(model, prompt_ids: list[list[int]], completion_ids: list[list[int]], pad: int,
                        temperature: float = 1.0, share_prompts: bool = False):
    """(logp [B, T], mask [B, T]) of completion tokens; prompts left-padded, completions right-padded.

    `temperature` != 1 scores under logits / temperature (TRL's convention: the sampler's
    distribution at that temperature, without top-p).

    That layout is the sampler's, so the two agree to float precision, and only the last
    T+1 positions go through the LM head (a big vocabulary times a long prompt is costly).

    `share_prompts`: each distinct prompt goes through the model once, and its completions attend
    to its (differentiable) KV cache, so a GRPO group's prompt is computed once rather than once
    per completion. The same function; its numbers differ from the unshared ones in the last bits.
    """
    if len(prompt_ids) != len(completion_ids):
        raise ValueError(f"token_logprobs needs as many prompts as completions, got {len(prompt_ids)} and {len(completion_ids)}")
    if any(len(c) == 0 for c in completion_ids):
        raise ValueError("token_logprobs got an empty completion; every completion needs at least one token")
    device = next(model.parameters()).device
    T = max(len(c) for c in completion_ids)
    cids = torch.full((len(completion_ids), T), pad, dtype=torch.long, device=device)
    cmask = torch.zeros((len(completion_ids), T), dtype=torch.long, device=device)
    for i, c in enumerate(completion_ids):
        cids[i, :len(c)] = torch.tensor(c, device=device)
        cmask[i, :len(c)] = 1
    distinct: dict[tuple[int, ...], int] = {}
    which = [distinct.setdefault(tuple(p), len(distinct)) for p in prompt_ids]
    if share_prompts and len(distinct) < len(prompt_ids):
        logits = _shared_prompt_logits(model, [list(p) for p in distinct], which, cids, cmask, pad)
    else:
        pids, pmask = _left_pad(prompt_ids, pad, device)
        ids, mask = torch.cat([pids, cids], 1), torch.cat([pmask, cmask], 1)
        pos = (mask.cumsum(-1) - 1).clamp(min=0)
        logits = model(input_ids=ids, attention_mask=mask, position_ids=pos, logits_to_keep=T + 1).logits[:, :-1].float()
    if temperature != 1.0:
        if temperature <= 0:
            raise ValueError(f"token_logprobs temperature must be positive, got {temperature}")
        logits = logits / temperature
    logp = logits.gather(-1, cids[..., None]).squeeze(-1) - logits.logsumexp(-1)
    m = cmask.to(logp.dtype)
    return logp * m, m


def _shared_prompt_logits(model, prompts, which, cids, cmask, pad):
    """The [B, T, V] next-token logits at each completion position, the prompts computed once:
    row i's completion continues prompt `which[i]`'s cache, at the positions it would have had."""
    from transformers import DynamicCache

    device = cids.device
    pids, pmask = _left_pad(prompts, pad, device)
    cache = DynamicCache()
    first = model(input_ids=pids, attention_mask=pmask, position_ids=(pmask.cumsum(-1) - 1).clamp(min=0),
                  use_cache=True, logits_to_keep=1, **{_cache_key(model): cache}).logits[:, -1]
    rows = torch.tensor(which, device=device)
    if cids.shape[1] == 1:
        return first[rows, None].float()
    cache.batch_select_indices(rows)  # indexing: the gradient of each shared prompt sums over its rows
    mask = torch.cat([pmask[rows], cmask], 1)
    pos = pmask.sum(-1)[rows, None] + torch.arange(cids.shape[1], device=device)
    rest = model(input_ids=cids[:, :-1], attention_mask=mask[:, :-1], position_ids=pos[:, :-1], use_cache=True,
                 **{_cache_key(model): cache}).logits
    return torch.cat([first[rows, None], rest], 1).float()
