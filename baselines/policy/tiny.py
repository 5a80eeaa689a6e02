"""The offline tiny model pair: a character tokenizer, a ~1M-parameter Qwen3 config, loading.

Both tiny models share one tokenizer: every printable ASCII character and newline is a
token, and so are the four tags of the completion format (`<think>`, `</think>`,
`<answer>`, `</answer>`), which keeps sequences short. It is built here in code and
saved as a `tokenizer.json`; load it with `PreTrainedTokenizerFast.from_pretrained(dir)`
(transformers 5's `AutoTokenizer` ignores a saved custom tokenizer for qwen model types
and builds a BPE one instead).

The pair itself is shipped in `baselines/policy/tiny_pair/{a,b}` and rebuilt exactly by
`python -m baselines.policy.tiny_build build` (see `tiny_build.py`); `python -m
baselines.policy.tiny_build eval` prints per-tier accuracy of A, B and both cascades.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

SPECIAL = ["<pad>", "<eos>", "<unk>"]
TAGS = ["<think>", "</think>", "<answer>", "</answer>"]
CHARS = ["\n"] + [chr(c) for c in range(32, 127)]
PAIR_DIR = Path(__file__).with_name("tiny_pair")


def build_tokenizer():
    """The character tokenizer as a `PreTrainedTokenizerFast` (pad, eos, unk are special)."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {t: i for i, t in enumerate(SPECIAL + TAGS + CHARS)}
    tk = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    tk.decoder = decoders.Fuse()
    tk.add_special_tokens(SPECIAL)
    tk.add_tokens(TAGS)  # matched whole, before the per-character split
    return PreTrainedTokenizerFast(
        tokenizer_object=tk, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>",
        clean_up_tokenization_spaces=False, model_max_length=1024,
    )


def load_tokenizer(path: str | Path):
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast.from_pretrained(str(path))


@dataclass
class TinyConfig:
    """Shape of a tiny Qwen3-style model (defaults: about 1.0M parameters)."""

    hidden: int = 128
    """hidden size"""
    layers: int = 4
    """decoder layers"""
    heads: int = 4
    """attention heads"""
    kv_heads: int = 2
    """key/value heads (grouped-query attention)"""
    mlp: int = 512
    """MLP inner size"""
    max_len: int = 512
    """longest sequence (prompt + completion) the rotary embedding is set up for"""

    def hf_config(self, tokenizer):
        from transformers import Qwen3Config

        return Qwen3Config(
            vocab_size=len(tokenizer), hidden_size=self.hidden, num_hidden_layers=self.layers,
            num_attention_heads=self.heads, num_key_value_heads=self.kv_heads, head_dim=self.hidden // self.heads,
            intermediate_size=self.mlp, max_position_embeddings=self.max_len, tie_word_embeddings=True,
            rope_theta=10000.0, pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
            bos_token_id=None,
        )


def new_model(cfg: TinyConfig, tokenizer, seed: int):
    """A freshly initialised tiny model (deterministic in `seed`)."""
    import torch
    from transformers import Qwen3ForCausalLM

    torch.manual_seed(seed)
    return Qwen3ForCausalLM(cfg.hf_config(tokenizer))


def load_tiny(which: str = "a", root: str | Path = PAIR_DIR):
    """(model, tokenizer) of the shipped tiny model `a` or `b`."""
    from transformers import Qwen3ForCausalLM

    path = Path(root) / which
    if not (path / "model.safetensors").exists():
        raise FileNotFoundError(f"no tiny model at {path}; build the pair with `python -m baselines.policy.tiny_build build`")
    return Qwen3ForCausalLM.from_pretrained(str(path)).eval(), load_tokenizer(path)


def is_tiny_tokenizer(tokenizer) -> bool:
    """True for this module's character tokenizer, wherever it was loaded from: the tiny
    models were trained on the compact prompt, so the prompt follows the model, not its name."""
    return len(tokenizer) == len(_tiny_vocab()) and tokenizer.get_vocab() == _tiny_vocab()


@functools.cache
def _tiny_vocab() -> dict[str, int]:
    return build_tokenizer().get_vocab()
