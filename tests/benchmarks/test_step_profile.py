"""The step profile: nesting-aware timers that put everything back, and a tiny real run of both learners."""

import json

import pytest
import torch

from agon_env.game import AgonGame
from baselines.rollouts import Rollouts
from benchmarks import step_profile
from benchmarks.step_profile import MISSING, PHASES, PhaseTimer

TINY = dict(problems_per_step=2, group=2, steps=1, max_new_tokens=64,  # 24 truncates every answer: all-equal groups,
            threads=1)  # whose update is skipped, would leave no backward to time; 1 thread: a busy CI box


class _Work:
    clock = [0.0]

    def outer(self):
        self.clock[0] += 1
        self.inner()
        self.clock[0] += 3
        return "done"

    def inner(self):
        self.clock[0] += 2


def test_nested_time_counts_once_and_originals_come_back():
    work = _Work()
    before = {n: vars(_Work)[n] for n in ("outer", "inner")}
    timer = PhaseTimer([(_Work, "outer", "grading"), (_Work, "inner", "generation"), (work, "outer", "grading")],
                       clock=lambda: _Work.clock[0])
    with timer:
        assert work.outer() == "done"
        with timer.phase("logging"):
            _Work.clock[0] += 5
        got = timer.take()
    assert got["grading"] == 4 and got["generation"] == 2 and got["logging"] == 5
    assert sum(got.values()) == 11 and timer.take()["grading"] == 0  # take() starts afresh
    assert {n: vars(_Work)[n] for n in ("outer", "inner")} == before and "outer" not in vars(work)


def test_a_failing_seam_restores_the_ones_already_patched():
    before = vars(_Work)["outer"]
    with pytest.raises(AttributeError):
        with PhaseTimer([(_Work, "outer", "grading"), (_Work, "no_such_method", "grading")]):
            pass
    assert vars(_Work)["outer"] is before
    with pytest.raises(ValueError, match="phase"):
        PhaseTimer([(_Work, "outer", "sleeping")])


def test_tiny_run_of_both_learners(tmp_path):
    seams = {(Rollouts, "sample"): vars(Rollouts)["sample"], (torch.Tensor, "backward"): vars(torch.Tensor)["backward"],
             (AgonGame, "grade_solo"): vars(AgonGame)["grade_solo"]}
    out = step_profile.main(step_profile.Args(**TINY, results_dir=str(tmp_path)))
    assert {p.name for p in tmp_path.iterdir()} == {"step_profile.json", "step_profile.md"}
    report = json.loads((tmp_path / "step_profile.json").read_text())
    assert report["versions"]["torch"] and report["threads"] == 1 and set(report["targets"]) >= {"a_met", "b_met"}
    for name, prof in report["profiles"].items():
        assert set(prof["share_pct"]) == set(PHASES)
        assert sum(prof["share_pct"].values()) == pytest.approx(100, abs=0.5), name
        assert prof["phase_s"]["generation"] > 0 and prof["phase_s"]["backward"] > 0, name
        assert prof["phase_s"]["other"] >= 0 and len(prof["steps"]) == 1
    assert report["profiles"]["GRPO"]["rollouts_per_step"] == report["profiles"]["Agon GRPO"]["rollouts_per_step"] == 8
    # every patched attribute is the original object again (an inherited one is gone from its owner)
    assert len(out["patched"]) > len(seams)
    for owner, name, raw in out["patched"]:
        assert vars(owner).get(name, MISSING) is raw, (owner, name)
    assert all(vars(owner)[name] is raw for (owner, name), raw in seams.items())
    assert {(o, n) for o, n, _ in out["patched"]} >= set(seams)
    assert "| step |" in (tmp_path / "step_profile.md").read_text()


@pytest.mark.parametrize("tied", [True, False])
def test_the_flop_count_takes_the_lm_head_and_not_the_lookup_or_lora(tied):
    """6 · matmul_params · tokens: a tied LM head still multiplies every token (it is a quarter of Qwen3-0.6B),
    the input embedding is a lookup, and LoRA's own parameters are not the base's."""
    from peft import LoraConfig, get_peft_model
    from transformers import Qwen3Config, Qwen3ForCausalLM

    cfg = Qwen3Config(vocab_size=300, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                      num_key_value_heads=1, head_dim=16, tie_word_embeddings=tied)
    model = Qwen3ForCausalLM(cfg)
    total = sum(p.numel() for p in model.parameters())  # a tied head is one tensor, counted once
    vocab_matrix = 300 * 32
    expected = total if tied else total - vocab_matrix
    assert step_profile.matmul_params(model) == expected
    lora = get_peft_model(model, LoraConfig(r=4, target_modules=["q_proj", "v_proj"]))
    assert sum(p.numel() for n, p in lora.named_parameters() if "lora_" in n) > 0
    assert step_profile.matmul_params(lora) == expected
