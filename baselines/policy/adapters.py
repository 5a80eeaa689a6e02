"""What vLLM's LoRA loader accepts: checked on a saved PEFT adapter before a server or engine is asked."""

from __future__ import annotations

import json
import re
from pathlib import Path

_LORA_KEY = re.compile(r"^base_model\.model\.(?:.+\.)?([^.]+)\.lora_[AB]\.weight$")
VLLM_MAX_LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)  # vLLM's LoRAConfig refuses any other max_lora_rank


def vllm_max_lora_rank(rank: int) -> int:
    """The smallest `max_lora_rank` vLLM accepts that holds adapters of `rank` (4 → 8; 16 stays 16)."""
    fit = [r for r in VLLM_MAX_LORA_RANKS if r >= rank]
    if not fit:
        raise ValueError(f"LoRA rank {rank} is above vLLM's largest max_lora_rank, {VLLM_MAX_LORA_RANKS[-1]}")
    return fit[0]


def check_vllm_adapter(path: str | Path) -> dict:
    """The adapter config at `path`, or ValueError naming every part vLLM's LoRA loader would refuse."""
    from safetensors import safe_open

    path = Path(path)
    cfg_file, weights = path / "adapter_config.json", path / "adapter_model.safetensors"
    missing = [f.name for f in (cfg_file, weights) if not f.exists()]
    if missing:
        raise ValueError(f"{path}: not a vLLM LoRA adapter, missing {', '.join(missing)}")
    cfg = json.loads(cfg_file.read_text())
    problems = [f"{k} is missing" for k in ("r", "lora_alpha", "target_modules") if k not in cfg]
    if cfg.get("peft_type", "LORA") != "LORA":
        problems.append(f"peft_type is {cfg['peft_type']!r}, expected 'LORA'")
    if cfg.get("modules_to_save"):
        problems.append(f"modules_to_save is {cfg['modules_to_save']} (vLLM supports only None)")
    if cfg.get("use_dora"):
        problems.append("use_dora is set (vLLM does not support DoRA)")
    if cfg.get("bias", "none") != "none":
        problems.append(f"bias is {cfg['bias']!r} (vLLM needs 'none' unless served with bias enabled)")
    targets = cfg.get("target_modules")
    with safe_open(str(weights), framework="pt") as f:
        for key in f.keys():
            m = _LORA_KEY.match(key)
            if m is None:
                problems.append(f"weight {key!r} is not a base_model.model.<module>.lora_A/B.weight tensor")
            elif isinstance(targets, list) and m.group(1) not in targets:
                problems.append(f"weight {key!r} is on {m.group(1)!r}, not one of target_modules {targets}")
    if problems:
        raise ValueError(f"{path}: vLLM would refuse this adapter: " + "; ".join(problems))
    return cfg
