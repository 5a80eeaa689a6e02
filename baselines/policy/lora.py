"""Two LoRA policies on one frozen base: the paper's pair (rank 16, about 2% extra weights).

Both adapters live in one `PeftModel`. A policy computes under its own adapter by
pointing every LoRA layer's active adapter at it for the duration of a call, instead of
calling peft's `set_adapter`: that one also sets `requires_grad=False` on every other
adapter, so after A's forward pass B would silently stop training. Here both adapters
stay trainable, and one optimizer step over `A.parameters() + B.parameters()` updates
both (tested).

Initialisation: A is peft's default (lora_B = 0), an exact no-op on the base. B's
lora_B is drawn from N(0, b_init_std²) so the two policies differ from step one; the
paper gives no scale, so `b_init_std` is an option (default 1e-2).
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import shutil
import tempfile
from pathlib import Path

import torch

from .hf import HFPolicy, load_hf, save_hf

TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


@contextlib.contextmanager
def adapter_active(peft_model, name: str):
    """Run the model under adapter `name` without touching any adapter's requires_grad."""
    from peft.tuners.tuners_utils import BaseTunerLayer

    layers = [m for m in peft_model.modules() if isinstance(m, BaseTunerLayer)]
    before = [m._active_adapter for m in layers]
    for m in layers:
        m._active_adapter = [name]
    try:
        yield
    finally:
        for m, a in zip(layers, before):
            m._active_adapter = a


@contextlib.contextmanager
def adapters_disabled(peft_model):
    """Run the bare base. peft's `disable_adapter()` re-enables through `set_adapter` on exit,
    which would freeze every adapter but the model-level active one."""
    from peft.tuners.tuners_utils import BaseTunerLayer

    layers = [m for m in peft_model.modules() if isinstance(m, BaseTunerLayer)]
    before = [m._disable_adapters for m in layers]
    for m in layers:
        m._disable_adapters = True
    try:
        yield
    finally:
        for m, d in zip(layers, before):
            m._disable_adapters = d


class LoraPolicy(HFPolicy):
    """One adapter of a shared `PeftModel`; the reference is the base with adapters disabled."""

    def __init__(self, peft_model, tokenizer, adapter: str, system: str | None = None):
        super().__init__(peft_model, tokenizer, name=adapter, reference=None, system=system)
        self.adapter = adapter

    def _active(self):
        return adapter_active(self.model, self.adapter)

    def _reference(self):
        return self.model, adapters_disabled(self.model)

    def parameters(self):
        keys = (f"lora_A.{self.adapter}.", f"lora_B.{self.adapter}.")
        return [p for n, p in self.model.named_parameters() if any(k in n for k in keys)]

    def save(self, path):
        """This adapter in peft format (`PeftModel.from_pretrained(base, path)` opens it) plus the tokenizer."""
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory() as tmp:
            self.model.save_pretrained(tmp, selected_adapters=[self.adapter])
            src = Path(tmp) / self.adapter if self.adapter != "default" else Path(tmp)
            for f in src.iterdir():
                shutil.move(str(f), path / f.name)
        self.tokenizer.save_pretrained(path)

    def save_merged(self, path):
        """A plain transformers model with this adapter merged into a copy of the base (vLLM, HF)."""
        merged = copy.deepcopy(self.model).merge_and_unload(adapter_names=[self.adapter])
        save_hf(merged, self.tokenizer, path)


def lora_config(base, rank: int = 16, alpha: int | None = None, targets: list[str] | None = None):
    """The adapters' `LoraConfig`: rank `rank`, `alpha` (default 2·rank), no dropout, on `targets`
    (default: every attention and MLP projection `base` has)."""
    from peft import LoraConfig

    if rank <= 0:
        raise ValueError(f"lora_rank must be positive, got {rank}")
    present = {n.rsplit(".", 1)[-1] for n, _ in base.named_modules()}
    targets = targets or [t for t in TARGETS if t in present]
    if not targets:
        raise ValueError(f"none of the LoRA targets {TARGETS} is a module of {type(base).__name__}")
    return LoraConfig(r=rank, lora_alpha=alpha or 2 * rank, lora_dropout=0.0, target_modules=targets, task_type="CAUSAL_LM")


def lora_pair(base, tokenizer, rank: int = 16, alpha: int | None = None, b_init_std: float = 1e-2,
              seed: int = 0, system: str | None = None, names: tuple[str, ...] = ("A", "B"),
              targets: list[str] | None = None) -> tuple[LoraPolicy, ...]:
    """Adapters `names` on one frozen `base`: the first zero-init, the others with noisy lora_B.

    `alpha` defaults to 2·rank. Targets: every attention and MLP projection present.
    """
    from peft import get_peft_model

    cfg = lora_config(base, rank, alpha, targets)
    torch.manual_seed(seed)
    model = get_peft_model(base, cfg, adapter_name=names[0])
    for extra in names[1:]:
        model.add_adapter(extra, cfg)
    gen = torch.Generator().manual_seed(seed + 1)
    for n, p in model.named_parameters():
        if "lora_" in n:
            p.requires_grad_(True)  # add_adapter froze the newcomers; both must train
        if any(f"lora_B.{extra}." in n for extra in names[1:]):
            with torch.no_grad():
                p.copy_(torch.randn(p.shape, generator=gen) * b_init_std)
    return tuple(LoraPolicy(model, tokenizer, n, system) for n in names)


def load_adapter_policy(path: str, device: str = "cpu", base: str | None = None, system: str | None = None,
                        dtype: str = "float32") -> LoraPolicy:
    """A policy saved by `LoraPolicy.save`: its base (from adapter_config.json unless given) plus the adapter."""
    name = os.path.basename(os.path.normpath(path)).replace(".", "_") or "adapter"  # torch refuses "." in a module name
    return load_adapter_pair([path], device, base, system, names=(name,), dtype=dtype)[0]


def load_adapter_pair(paths: list[str], device: str = "cpu", base: str | None = None, system: str | None = None,
                      names: tuple[str, ...] = ("A", "B"), dtype: str = "float32") -> tuple[LoraPolicy, ...]:
    """Saved adapters back onto ONE base (the one their configs name, unless given), all trainable."""
    from peft import PeftModel

    bases = [json.loads(Path(p, "adapter_config.json").read_text()).get("base_model_name_or_path") for p in paths]
    if not base:
        if not bases[0]:
            raise ValueError(f"{paths[0]}/adapter_config.json names no base_model_name_or_path; pass base=")
        same = {os.path.realpath(b) if os.path.exists(b) else b for b in bases if b}
        if len(same) > 1:  # the others would go silently onto the first one's base
            raise ValueError(f"adapters {', '.join(paths)} name different bases ({', '.join(map(str, bases))}); "
                             f"they go onto one shared base (base= chooses it)")
        base = bases[0]
    m, tok = load_hf(base, device, dtype)
    model = PeftModel.from_pretrained(m, paths[0], adapter_name=names[0], is_trainable=True)
    for path, name in zip(paths[1:], names[1:]):
        model.load_adapter(path, adapter_name=name, is_trainable=True)
    for n, p in model.named_parameters():
        if "lora_" in n:
            p.requires_grad_(True)  # loading an adapter freezes the others
    return tuple(LoraPolicy(model, tok, n, system) for n in names[:len(paths)])
