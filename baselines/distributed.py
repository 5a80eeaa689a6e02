"""Data parallel over the processes `torchrun` starts: the few collectives both learners use.

    torchrun --nproc-per-node 2 -m baselines.agon_grpo --problems-per-step 16 --threads 1

Why a run's numbers do not depend on how many processes it has:
- problems: every rank draws the step's whole batch (`batch_for_step`, a function of the step alone)
  and keeps its contiguous block (`shard`). A problem's group, and in Agon its drafts and the answers to
  them, stay on one rank, so group advantages need no communication, and a resume draws the same batches.
- sampling: each problem draws from its own generator, seeded by (the step's seed, its index in the
  global batch) (`Rollouts.sample(..., index=...)`, `Policy.generate_seeded`), so its tokens do not depend
  on its rank or on the other problems batched with it. Their logits (and the sampler's log-probs, the
  ratio's old side) can differ in the last bits, which flips a sampled token only if a draw lands that
  close to a boundary; after a few AdamW steps the weights agree to about 1e-5 (test_distributed). A
  plain `python -m` run keeps one batched call per step with one seed: its numbers are unchanged, and
  differ from a torchrun run's at any world size, 1 included.
- generation on vLLM servers (`--backend server`): every rank sends its own problems' requests, and
  rank 0 alone sends each new adapter version to the servers (`ServerPolicy.sync`).
- gradients: each rank scales its loss by its share of the normaliser over the global batch (`loss_share`:
  tokens for 'dapo', sequences for 'grpo' and 'dr_grpo'), so the summed gradients are those of the
  one-process loss; one SUM all-reduce of the trainable gradients in a flat buffer, then clipping and the
  optimizer step run alike everywhere. Not DDP: a LoRA pair is two policies on one module switching
  adapters, which DDP's per-module hooks do not model, and at LoRA's size overlapping the all-reduce
  with backward saves little. No FSDP: every rank holds the whole base (the paper's 0.6B–4B bases fit
  one GPU). FSDP gathers each layer's weights inside its forward, a collective, so every rank would have
  to run the same forwards in step; here a rank's sampling stops when its own rows finish, and its update
  runs as many micro-batches as its own live completions need.
- metrics and evaluation: the per-rollout values a step logs are all-gathered in problem order
  (`all_cat`), and evaluation chunks are dealt round-robin and gathered (`gather_chunks`), so every rank
  computes the same numbers. Rank 0 alone writes metrics, TensorBoard, plots and checkpoints; every
  rank resumes from them.
Collectives use gloo on CPU and NCCL on CUDA (one GPU per process, `LOCAL_RANK`).
"""

from __future__ import annotations

import os
import time
from typing import Sequence

import torch
import torch.distributed as dist

_comm = [0.0]  # seconds spent inside collectives, waiting for slower ranks included


def launched() -> bool:
    """Started by torchrun (or another launcher that sets WORLD_SIZE)."""
    return "WORLD_SIZE" in os.environ


def active() -> bool:
    return dist.is_available() and dist.is_initialized()


def rank() -> int:
    return dist.get_rank() if active() else 0


def world() -> int:
    return dist.get_world_size() if active() else 1


def is_main() -> bool:
    return rank() == 0


def comm_clock() -> float:
    """Seconds spent in this module's collectives so far."""
    return _comm[0]


def check_launch(problems_per_step: int, backend: str, device: str) -> None:
    """Fail before any work when a launch cannot run as asked, naming the fix (nothing to check without one)."""
    if not launched():
        return
    missing = [k for k in ("RANK", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT") if k not in os.environ]
    if missing:
        raise SystemExit(f"error: WORLD_SIZE is set but {', '.join(missing)} not: launch with "
                         f"`torchrun --nproc-per-node K -m ...`, or unset WORLD_SIZE to run one process")
    n = int(os.environ["WORLD_SIZE"])
    if problems_per_step % n:
        raise SystemExit(f"error: --problems-per-step {problems_per_step} does not split over WORLD_SIZE={n} processes: "
                         f"set --problems-per-step to a multiple of {n}, or launch a number of processes that "
                         f"divides {problems_per_step}")
    if backend == "vllm":
        raise SystemExit("error: --backend vllm does not run under torchrun (one in-process engine per process "
                         "would hold the base once more on each GPU): use --backend server with vLLM servers, or hf")
    per_node = int(os.environ.get("LOCAL_WORLD_SIZE", n))
    if _wants_cuda(device) and torch.cuda.device_count() < per_node:
        raise SystemExit(f"error: {per_node} processes on this node but {torch.cuda.device_count()} GPUs visible "
                         f"(one each): use --nproc-per-node {torch.cuda.device_count()} or --device cpu")


def sampling_backend(backend: str) -> str:
    """The backend a learner samples with: under torchrun 'auto' is HF (an in-process vLLM engine per process
    would hold the base once more on each GPU; vLLM servers are --backend server); otherwise as asked."""
    return "hf" if launched() and backend == "auto" else backend


def _wants_cuda(device: str) -> bool:
    return device == "cuda" or (device == "auto" and torch.cuda.is_available())


def init(device: str) -> None:
    """Join the process group the launcher set up (gloo on CPU, NCCL on CUDA); nothing in one process."""
    if not launched() or active():
        return
    if _wants_cuda(device):
        torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))  # so 'cuda' below means this process's GPU
    dist.init_process_group("nccl" if _wants_cuda(device) else "gloo")


def shard(items: Sequence) -> tuple[list, list[int] | None]:
    """This rank's contiguous block of a step's global batch, and each item's index in that batch
    (None in one process, whose sampling stays as it was)."""
    if not active():
        return list(items), None
    k = len(items) // world()
    lo = rank() * k
    return list(items[lo:lo + k]), list(range(lo, lo + k))


def _timed(fn, *args):
    t = time.perf_counter()
    out = fn(*args)
    _comm[0] += time.perf_counter() - t
    return out


def _all_gather(obj) -> list:
    out = [None] * world()
    _timed(dist.all_gather_object, out, obj)
    return out


def _device() -> torch.device:
    return torch.device("cuda", torch.cuda.current_device()) if dist.get_backend() == "nccl" else torch.device("cpu")


def all_cat(*parts):
    """Each part (a tensor, joined along dim 0, or a list) joined over ranks in rank order, which is
    problem order; the parts as given in one process."""
    if not active():
        return parts
    return tuple(torch.cat(xs) if isinstance(xs[0], torch.Tensor) else [v for x in xs for v in x]
                 for xs in zip(*_all_gather(parts)))


def all_counts(n: int) -> list[int]:
    """Every rank's `n`, in rank order."""
    return _all_gather(n) if active() else [n]


def first_n_mine(counts: list[list[int]], n: int) -> int:
    """How many of this rank's items are among the first `n` of the global order, where counts[k][r] items
    came from rank r in round k and the order is round by round, rank by rank (dynamic sampling's refills)."""
    left, mine = n, 0
    for row in counts:
        for r, c in enumerate(row):
            take = min(c, left)
            left -= take
            mine += take if r == rank() else 0
    return mine


def from_main(obj):
    """Rank 0's `obj` on every rank; `obj` in one process."""
    return _all_gather(obj)[0] if active() else obj


def all_sum(values: list[float]) -> list[float]:
    """Element-wise sums over ranks (in float64); `values` in one process."""
    if not active():
        return values
    t = torch.tensor(values, dtype=torch.float64, device=_device())
    _timed(dist.all_reduce, t)
    return t.tolist()


def loss_share(sequences: int, tokens: int, loss_type: str) -> float:
    """This rank's part of the loss's normaliser over the global batch: tokens for 'dapo' (a token mean),
    sequences otherwise (a mean over sequences, or a sum over sequences · max tokens); 1.0 in one process."""
    if not active():
        return 1.0
    seqs, toks = all_sum([sequences, tokens])
    return tokens / max(toks, 1) if loss_type == "dapo" else sequences / max(seqs, 1)


def global_stats(loss: float, means: dict[str, float], tokens: int) -> tuple[float, dict[str, float]]:
    """The update's loss (the sum of every rank's share) and its per-token `means` (clip_frac, kl, ...)
    over the global batch; as given in one process."""
    if not active():
        return loss, means
    total, *sums, n = all_sum([loss, *(v * tokens for v in means.values()), tokens])
    return total, {k: v / max(n, 1) for k, v in zip(means, sums)}


def all_reduce_grads(params: Sequence[torch.Tensor]) -> None:
    """Sum the gradients of `params` over ranks in one flat all-reduce."""
    if not active():
        return
    grads = [p.grad for p in params]
    flat = torch.cat([g.reshape(-1) for g in grads])
    _timed(dist.all_reduce, flat)
    for p, g in zip(params, flat.split([g.numel() for g in grads])):
        p.grad = g.view_as(p).to(p.dtype)


def broadcast_params(policies: dict) -> None:
    """Rank 0's trainable weights on every rank: they start equal from the seed, and this makes it certain."""
    if not active():
        return
    with torch.no_grad():
        for pol in policies.values():
            for p in pol.parameters():
                _timed(dist.broadcast, p.data, 0)


def gather_chunks(parts: dict[int, tuple[list, ...]]) -> tuple[list, ...]:
    """{chunk index: (list, ...)} of this rank's evaluation chunks → each field's lists joined in chunk
    order over all ranks (in one process, over its own chunks)."""
    if active():
        parts = {k: v for d in _all_gather(parts) for k, v in d.items()}
    rows = [parts[k] for k in sorted(parts)]
    return tuple([v for row in rows for v in row[f]] for f in range(len(rows[0])))


def my_chunk(index: int) -> bool:
    """Whether evaluation chunk `index` is this rank's (dealt round-robin)."""
    return index % world() == rank()
