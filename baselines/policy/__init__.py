"""The policy layer: sampling with log-probs and the update's log-probs, behind one interface.

Modules, each importing only those above it in this list:
- `base`: the `Policy` interface, `SamplingParams`, `Generation`;
- `sampling`: the batched KV-cache sampler and log-prob recompute; `fast_decode`: its lean decoder;
- `tiny`: the shipped ~1M-parameter pair (character tokenizer, config, loading); `tiny_build`: its build;
- `hf`: `HFPolicy`, any transformers causal LM, and HF load/save;
- `lora`: two LoRA adapters on one frozen base (`LoraPolicy`);
- `spec`: `ModelSpec`, a parsed `--model` value; `vllm_backend`: a multi-LoRA vLLM engine;
  `server_backend`: generation on vLLM OpenAI servers over HTTP, adapters synced by path;
- `loading`: `load_pair` and `load_policy`, from a spec to policies.
"""

from .base import Generation, Policy, SamplingParams, child_seed
from .hf import HFPolicy, load_hf, resolve_device, save_hf, smollm2_gguf
from .loading import load_pair, load_policy
from .spec import ModelSpec

__all__ = ["Generation", "HFPolicy", "ModelSpec", "Policy", "SamplingParams", "child_seed", "load_hf", "load_pair", "load_policy",
           "resolve_device", "save_hf", "smollm2_gguf"]
