"""The tiny pair: character tokenizer, reproducible build, and the shipped pair against its record."""

import json
import os

import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")
torch.set_num_threads(1)

from baselines.policy.hf import HFPolicy, _load_tokenizer  # noqa: E402
from baselines.policy.tiny import PAIR_DIR, TAGS, TinyConfig, build_tokenizer, load_tiny, load_tokenizer  # noqa: E402
from baselines.policy.tiny_build import BuildConfig, build, load_tiers, probe  # noqa: E402

TEXT = "Q:(47*7) mod 6\nA:<think>40*7=280 7*7=49</think>47*7=329<answer>5</answer>"


def test_tokenizer_round_trip(tmp_path):
    tok = build_tokenizer()
    ids = tok(TEXT, add_special_tokens=False)["input_ids"]
    assert tok.decode(ids) == TEXT
    assert len(ids) == len(TEXT) - sum(len(t) - 1 for t in TAGS)  # each tag is one token
    tok.save_pretrained(tmp_path)
    for loaded in (load_tokenizer(tmp_path), _load_tokenizer(str(tmp_path))):
        assert loaded(TEXT, add_special_tokens=False)["input_ids"] == ids
        assert loaded.decode(ids + [loaded.eos_token_id], skip_special_tokens=True) == TEXT
        assert (loaded.pad_token_id, loaded.eos_token_id) == (tok.pad_token_id, tok.eos_token_id)


def test_model_is_qwen3_of_about_a_million_parameters():
    from baselines.policy.tiny import new_model

    m = new_model(TinyConfig(), build_tokenizer(), seed=0)
    assert m.config.model_type == "qwen3" and 0.9e6 < m.num_parameters() < 5e6


MICRO = dict(seeds=[0, 1], drafter_steps=3, mixed_steps=3, batch_size=8, warmup=2, train_per_tier=30,
             drafts_per_tier=4, eval_per_tier=3, test_per_tier=0, probe_per_tier=1, max_new_tokens=16,
             model=TinyConfig(hidden=32, layers=2, heads=4, kv_heads=2, mlp=64))


@pytest.mark.slow
def test_build_reproduces_bit_for_bit_in_parallel_or_not(tmp_path):
    runs = [build(BuildConfig(out=str(tmp_path / f"r{w}"), workers=w, **MICRO), log=lambda m: None) for w in (1, 2)]
    for name in ("a", "b"):
        raw = [(tmp_path / f"r{w}" / name / "model.safetensors").read_bytes() for w in (1, 2)]
        assert raw[0] == raw[1]
    assert runs[0]["sha256"] == runs[1]["sha256"] and runs[0]["validation"] == runs[1]["validation"]
    stored = json.loads((tmp_path / "r1" / "metrics.json").read_text())
    assert stored["probe"] == runs[0]["probe"] and set(stored["checks"]) >= {"hard_gap_within_limit"}


def test_shipped_pair_matches_its_record():
    from baselines.policy.tiny_build import checks, file_hash

    meta = json.loads((PAIR_DIR / "metrics.json").read_text())
    assert meta["sha256"] == {n: file_hash(PAIR_DIR / n / "model.safetensors") for n in "ab"}
    a, b = (HFPolicy(*load_tiny(w), name=w) for w in "ab")
    assert a.model.num_parameters() == b.model.num_parameters() and a.model.config.model_type == "qwen3"
    n = len(next(iter(meta["probe"].values())))
    assert probe(a, b, load_tiers("test", n), meta["config"]["max_new_tokens"]) == meta["probe"]
    for split, key in (("validation", "checks"), ("test", "test_checks")):
        assert meta[key] == checks(meta[split], meta["config"]["max_hard_gap"])
        ok = meta[key]
        # hard tier inside the trained range and the pair comparable, on both splits
        assert ok["hard_gap_within_limit"] and ok["hard_above_zero"] and ok["hard_well_below_easy"]
        # the A-drafts/B-answers cascade is at least each model alone on hard (medium: see README)
        assert ok["cascade_A>B_at_least_each_alone_hard"]
