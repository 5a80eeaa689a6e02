"""From a model spec to policies: `load_pair` (the two Agon players) and `load_policy` (one)."""

from __future__ import annotations

import copy
import os
from typing import Sequence

import torch

from .base import Policy
from .hf import HFPolicy, load_hf, resolve_device, torch_dtype
from .spec import ModelSpec
from .tiny import load_tiny


def _full_policy(path: str, name: str, device: str, reference: bool, system: str | None,
                 dtype: str = "float32") -> HFPolicy:
    if path == "tiny":
        raise ValueError("'tiny' is a pair; use load_pair('tiny') or 'tiny:a' / 'tiny:b'")
    if path in ("tiny:a", "tiny:b"):
        m, tok = load_tiny(path[-1])
        m = m.to(device, torch_dtype(dtype))
    else:
        m, tok = load_hf(path, device, dtype)
    return HFPolicy(m, tok, name, copy.deepcopy(m) if reference else None, system)


def load_pair(model: str | ModelSpec = "tiny", lora_rank: int = 16, b_init_std: float = 1e-2, device: str = "auto",
              backend: str = "auto", seed: int = 0, reference: bool = True,
              system: str | None = None, servers: Sequence[str] = (),
              adapter_dir: str | None = None, dtype: str = "float32") -> tuple[Policy, Policy]:
    """The two Agon policies (A, B).

    - `"tiny"`: the shipped offline pair, two separate ~1M-parameter models trained fully
      (LoRA on a 1M model would train a few thousand weights and mostly measure rank);
    - `"a_path,b_path"`: two separate full models, e.g. from different families, or two
      adapters saved by `LoraPolicy.save`, which go back onto one shared base;
    - anything else (a local HF dir, a dir with a .gguf, `smollm2`, a hub name): two LoRA
      adapters on ONE frozen base, A zero-initialised (an exact no-op) and B with its
      `lora_B` weights drawn from N(0, b_init_std²) so the two differ from step one.
    `reference`: full-model policies keep a frozen copy for the KL reference (LoRA
    policies use the base with adapters off, at no cost). `backend="server"` generates on
    the vLLM OpenAI `servers`, loading adapters saved under `adapter_dir` (`server_backend`).
    `dtype` is the weights' ('float32' or 'bfloat16'); peft keeps LoRA adapters in float32 on a bf16 base.
    """
    from .lora import load_adapter_pair, lora_pair

    spec = (model if isinstance(model, ModelSpec) else ModelSpec.parse(model)).as_pair()
    device = resolve_device(device)
    torch.manual_seed(seed)
    if spec.parts == ("tiny",):
        pair = tuple(_full_policy(f"tiny:{w}", w.upper(), device, reference, None, dtype) for w in "ab")
    elif len(spec.parts) == 2:
        if all(os.path.exists(os.path.join(p, "adapter_config.json")) for p in spec.parts):
            pair = load_adapter_pair(list(spec.parts), device, system=system, dtype=dtype)  # back onto one shared base
        else:
            pair = tuple(_full_policy(p, n, device, reference, system, dtype) for p, n in zip(spec.parts, "AB"))
    else:
        base, tok = load_hf(spec.parts[0], device, dtype)
        pair = lora_pair(base, tok, rank=lora_rank, b_init_std=b_init_std, seed=seed, system=system)
    return _with_backend(pair, backend, spec, servers, adapter_dir)


def load_policy(model: str | ModelSpec = "tiny:a", device: str = "auto", backend: str = "auto", seed: int = 0,
                reference: bool = True, system: str | None = None, lora_rank: int = 0, servers: Sequence[str] = (),
                adapter_dir: str | None = None, dtype: str = "float32") -> Policy:
    """One policy (for GRPO, MoA). `tiny:a`/`tiny:b` are the shipped tiny models; a directory
    saved by `LoraPolicy.save` (it has adapter_config.json) loads base plus adapter;
    `lora_rank > 0` puts a fresh zero-initialised adapter on any other model (never on tiny ones)."""
    from .lora import load_adapter_policy, lora_pair

    spec = model if isinstance(model, ModelSpec) else ModelSpec.parse(model)
    if len(spec.parts) != 1:
        raise ValueError(f"load_policy takes one model, got {str(spec)!r}")
    path = spec.parts[0]
    device = resolve_device(device)
    torch.manual_seed(seed)
    if os.path.exists(os.path.join(path, "adapter_config.json")):
        pol = load_adapter_policy(path, device, system=system, dtype=dtype)
    elif lora_rank > 0 and not spec.tiny:
        base, tok = load_hf(path, device, dtype)
        pol = lora_pair(base, tok, rank=lora_rank, seed=seed, system=system, names=("A",))[0]
    else:
        pol = _full_policy(path, "policy", device, reference, system, dtype)
    return _with_backend((pol,), backend, spec, servers, adapter_dir)[0]


def _with_backend(policies: tuple, backend: str, spec: ModelSpec, servers: Sequence[str] = (),
                  adapter_dir: str | None = None):
    if backend == "hf":
        return policies
    if backend == "server":
        from .server_backend import wrap_server

        return wrap_server(policies, str(spec), servers, adapter_dir)
    from .vllm_backend import pick_backend, wrap_vllm

    chosen = pick_backend(backend, spec)
    return wrap_vllm(policies, str(spec)) if chosen == "vllm" else policies
