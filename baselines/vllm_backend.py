"""vLLM backend (GPU, optional extra `agon[vllm]`): work in progress, HF fallback for now."""

from __future__ import annotations

import importlib.util
import logging

import torch

log = logging.getLogger("agon.policy")
BACKENDS = ("auto", "hf", "vllm")


def vllm_available() -> tuple[bool, str]:
    """(usable, reason): vLLM needs CUDA and the vllm package; the import itself is deferred."""
    if not torch.cuda.is_available():
        return False, "no CUDA device"
    if importlib.util.find_spec("vllm") is None:
        return False, "the vllm package is not installed (pip install 'agon[vllm]')"
    return True, "CUDA and vllm present"


def pick_backend(backend: str, model: str) -> str:
    """'vllm' or 'hf' for `backend` in BACKENDS; logs why when auto falls back to HF."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if backend == "hf":
        return "hf"
    ok, why = vllm_available()
    if backend == "vllm" and not ok:
        raise RuntimeError(f"backend='vllm' requested but unusable: {why}")
    if ok and model.startswith("tiny"):
        log.info("policy backend: HF (the tiny character-level models are not served by vLLM)")
        return "hf"
    log.info("policy backend: %s (%s)", "vLLM" if ok else "HF", why if ok else f"vLLM unavailable: {why}")
    return "vllm" if ok else "hf"


def wrap_vllm(policies):
    raise NotImplementedError("the vLLM policy wrapper is not finished yet; use backend='hf'")
