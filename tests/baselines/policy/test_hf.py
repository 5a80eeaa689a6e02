"""The policy layer on a small random Qwen3 model: log-probs, seeding, LoRA pair, saving."""

import os

import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")
torch.set_num_threads(1)  # the CPU is shared: extra threads only spin

from baselines.policy import Generation, HFPolicy, SamplingParams, load_pair, load_policy  # noqa: E402
from baselines.policy.lora import lora_pair  # noqa: E402
from baselines.policy.tiny import TinyConfig, build_tokenizer, new_model  # noqa: E402

PROMPTS = ["Q:12+34\nA:", "Q:7*8\nA:", "D:add the units\nQ:123+9\nA:"]
SMALL = TinyConfig(hidden=64, layers=2, heads=4, kv_heads=2, mlp=128)


@pytest.fixture(scope="module")
def tok():
    return build_tokenizer()


@pytest.fixture
def model(tok):
    return new_model(SMALL, tok, seed=0)


def _check_logprobs(pol, gens, tol=1e-4):
    flat = [g for row in gens for g in row]
    lp, mask = pol.token_logprobs([g.prompt_ids for g in flat], [g.completion_ids for g in flat])
    assert lp.requires_grad
    for i, g in enumerate(flat):
        assert mask[i].sum().item() == len(g.completion_ids)
        torch.testing.assert_close(lp[i, :len(g.logprobs)].detach(), torch.tensor(g.logprobs), atol=tol, rtol=0)


@pytest.mark.parametrize("greedy", [True, False])
def test_sampling_logprobs_match_recomputed(model, tok, greedy):
    from baselines.policy.fast_decode import supports

    assert supports(model)  # the tiny model samples through the lean decoder
    pol = HFPolicy(model, tok, "A")
    gens = pol.generate(PROMPTS, n=3, params=SamplingParams(temperature=0.8, max_new_tokens=40, greedy=greedy), seed=1)
    assert [len(r) for r in gens] == [3, 3, 3]
    assert all(isinstance(g, Generation) and g.completion_ids for r in gens for g in r)
    _check_logprobs(pol, gens)


def test_generation_fields_and_seeding(model, tok):
    pol = HFPolicy(model, tok, "A")
    p = SamplingParams(temperature=1.0, max_new_tokens=30)
    a, b, c = (pol.generate(PROMPTS, n=4, params=p, seed=s) for s in (5, 5, 6))
    ids = lambda gs: [g.completion_ids for r in gs for g in r]  # noqa: E731
    assert ids(a) == ids(b) and ids(a) != ids(c)
    for g in (g for r in a for g in r):
        assert g.prompt_ids == tok(g.prompt, add_special_tokens=False)["input_ids"]
        assert g.text == tok.decode(g.completion_ids, skip_special_tokens=True)
        assert g.finished == (g.completion_ids[-1] == tok.eos_token_id)
        assert g.finished or len(g.completion_ids) == 30
        assert tok.eos_token_id not in g.completion_ids[:-1]


def test_seeded_calls_batched_sample_what_each_call_samples_alone(model, tok):
    """What torchrun's per-problem seeds rest on: batching calls changes no call's tokens."""
    from baselines.policy import Policy

    pol = HFPolicy(model, tok, "A", batch_size=8)
    p = SamplingParams(temperature=1.0, max_new_tokens=30)
    # n = 2: 2, 4, 12 (over the batch: alone), 6, 2 rows -> batches [2, 4], [12], [6, 2]
    calls = [(PROMPTS[:1], 11), (PROMPTS[1:], 12), (PROMPTS * 2, 15), (PROMPTS, 13), (PROMPTS[2:], 14)]
    alone = Policy.generate_seeded(pol, calls, 2, p)  # the interface's default: one generate call each
    batched = pol.generate_seeded(calls, 2, p)
    swapped = pol.generate_seeded(calls[::-1], 2, p)  # other neighbours, other padding
    ids = lambda gs: [[g.completion_ids for g in r] for r in gs]  # noqa: E731
    assert ids(batched) == ids(alone) and ids(swapped) == ids([g for c in calls[::-1] for g in pol.generate(*c[:1], 2, p, c[1])])
    assert [g.prompt for r in batched for g in r] == [q for ps, _ in calls for q in ps for _ in range(2)]
    assert ids(batched)[0] != ids(batched)[3]  # PROMPTS[0] under seeds 11 and 15: each call has its own draws
    for x, y in zip((g for r in batched for g in r), (g for r in alone for g in r)):
        torch.testing.assert_close(torch.tensor(x.logprobs), torch.tensor(y.logprobs), atol=1e-5, rtol=0)


def test_tiny_top_p_keeps_only_the_top_token(model, tok):
    pol = HFPolicy(model, tok, "A")
    greedy = pol.generate(PROMPTS, params=SamplingParams(max_new_tokens=20, greedy=True))
    nucleus = pol.generate(PROMPTS, params=SamplingParams(temperature=1.5, top_p=1e-6, max_new_tokens=20), seed=3)
    assert [r[0].completion_ids for r in greedy] == [r[0].completion_ids for r in nucleus]


def test_chat_template_is_applied(model, tok):
    tok = build_tokenizer()
    tok.chat_template = "{% for m in messages %}<{{ m.role }}>{{ m.content }}\n{% endfor %}{% if add_generation_prompt %}A:{% endif %}"
    pol = HFPolicy(model, tok, "A")
    g = pol.generate(["hi"], params=SamplingParams(max_new_tokens=3, greedy=True))[0][0]
    assert tok.decode(g.prompt_ids) == "<user>hi\nA:" and g.prompt == "hi"


def test_full_model_reference_is_frozen_copy(model, tok):
    import copy

    pol = HFPolicy(model, tok, "A", reference=copy.deepcopy(model))
    gens = pol.generate(PROMPTS, params=SamplingParams(max_new_tokens=10), seed=0)
    args = ([g.prompt_ids for r in gens for g in r], [g.completion_ids for r in gens for g in r])
    before = pol.reference_logprobs(*args)[0]
    with torch.no_grad():
        for p in pol.parameters():
            p.add_(0.05)
    assert not pol.reference_logprobs(*args)[0].requires_grad
    torch.testing.assert_close(pol.reference_logprobs(*args)[0], before)
    assert not torch.allclose(pol.token_logprobs(*args)[0].detach(), before)
    assert HFPolicy(model, tok, "A").reference_logprobs(*args) is None


def test_token_logprobs_rejects_bad_input(model, tok):
    pol = HFPolicy(model, tok, "A")
    with pytest.raises(ValueError, match="as many prompts"):
        pol.token_logprobs([[5]], [[6], [7]])
    with pytest.raises(ValueError, match="empty completion"):
        pol.token_logprobs([[5]], [[]])


def test_sampling_refuses_what_vllm_refuses(model, tok):
    """top_p outside (0, 1] and no new tokens fail by name, as on a vLLM server; top_p 0 sampled greedily before."""
    pol = HFPolicy(model, tok, "A")
    for top_p in (0.0, -0.5, 1.5):
        with pytest.raises(ValueError, match=rf"top_p must be in \(0, 1\], got {top_p}"):
            pol.generate(PROMPTS, params=SamplingParams(top_p=top_p, max_new_tokens=5), seed=0)
    with pytest.raises(ValueError, match="max_new_tokens must be at least 1, got 0"):
        pol.generate(PROMPTS, params=SamplingParams(max_new_tokens=0), seed=0)
    assert pol.generate(PROMPTS, params=SamplingParams(greedy=True, top_p=0.0, max_new_tokens=5))  # greedy ignores it


def test_model_spec_expands_home(model, tok, tmp_path, monkeypatch):
    from baselines.policy import ModelSpec

    model.save_pretrained(tmp_path / "m")
    tok.save_pretrained(tmp_path / "m")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert ModelSpec.parse("~/m").parts == (str(tmp_path / "m"),)
    assert load_policy("~/m", device="cpu", backend="hf", reference=False).model.num_parameters() == model.num_parameters()


# ---------------------------------------------------------------- LoRA pair
def _ids(pol, n=2):
    gens = pol.generate(PROMPTS, n=n, params=SamplingParams(temperature=1.0, max_new_tokens=12), seed=0)
    return [g.prompt_ids for r in gens for g in r], [g.completion_ids for r in gens for g in r]


def test_lora_a_is_exact_noop_and_b_differs(model, tok):
    base_pol = HFPolicy(model, tok, "base")
    args = _ids(base_pol)
    with torch.no_grad():
        base_lp = base_pol.token_logprobs(*args)[0]
    a, b = lora_pair(model, tok, rank=4, b_init_std=0.05, seed=0)
    assert torch.equal(a.token_logprobs(*args)[0].detach(), base_lp)
    assert not torch.allclose(b.token_logprobs(*args)[0].detach(), base_lp, atol=1e-4)
    torch.testing.assert_close(b.reference_logprobs(*args)[0], base_lp, atol=0, rtol=0)
    # the transformers (peft) sampling path agrees with its own recomputation too
    from baselines.policy.fast_decode import supports

    assert not supports(b.model)
    _check_logprobs(b, b.generate(PROMPTS, n=2, params=SamplingParams(max_new_tokens=15), seed=2))


def test_lora_shared_prompts_give_the_same_logprobs_and_gradient(model, tok):
    """--share-prompts through peft: the adapter's gradient flows through the shared prompt cache too."""
    a, b = lora_pair(model, tok, rank=4, b_init_std=0.05, seed=0)
    args = _ids(b, n=3)
    grads = []
    for share in (False, True):
        lp, mask = b.token_logprobs(*args, share_prompts=share)
        (lp.sum() / mask.sum()).backward()
        grads.append([p.grad.clone() for p in b.parameters()])
        for p in b.parameters():
            p.grad = None
    for x, y in zip(*grads):
        torch.testing.assert_close(y, x, rtol=1e-4, atol=1e-6)
    torch.testing.assert_close(b.reference_logprobs(*args, share_prompts=True)[0], b.reference_logprobs(*args)[0],
                               rtol=0, atol=1e-5)


def test_one_step_updates_both_adapters(model, tok):
    a, b = lora_pair(model, tok, rank=4, seed=0)
    frozen = [p for p in model.parameters() if not p.requires_grad]
    assert frozen and not set(map(id, a.parameters())) & set(map(id, b.parameters()))
    before = [p.detach().clone() for p in a.parameters() + b.parameters()]
    base_before = [p.detach().clone() for p in frozen]
    opt = torch.optim.AdamW(a.parameters() + b.parameters(), lr=1e-2)
    args = _ids(a)
    loss = -(a.token_logprobs(*args)[0].sum() + b.token_logprobs(*args)[0].sum())
    loss.backward()
    opt.step()
    after = a.parameters() + b.parameters()
    na = len(a.parameters())
    assert all(not torch.equal(x, y) for x, y in zip(before[na:], after[na:]))  # every B tensor moved
    # A's lora_A gets no gradient while lora_B is zero, but A's lora_B must move
    assert any(not torch.equal(x, y) for x, y in zip(before[:na], after[:na]))
    assert all(torch.equal(x, y) for x, y in zip(base_before, frozen))


def test_lora_save_load_round_trip(model, tok, tmp_path):
    from peft import PeftModel
    from transformers import Qwen3ForCausalLM

    model.save_pretrained(tmp_path / "base")
    tok.save_pretrained(tmp_path / "base")
    a, b = load_pair(str(tmp_path / "base"), lora_rank=4, b_init_std=0.05, device="cpu", backend="hf")
    args = _ids(b)
    want = b.token_logprobs(*args)[0].detach()
    b.save(tmp_path / "b")
    b.save_merged(tmp_path / "b_merged")
    assert (tmp_path / "b" / "adapter_model.safetensors").exists()
    loaded = load_policy(str(tmp_path / "b"), device="cpu", backend="hf")
    torch.testing.assert_close(loaded.token_logprobs(*args)[0].detach(), want, atol=1e-5, rtol=0)
    peft_m = PeftModel.from_pretrained(Qwen3ForCausalLM.from_pretrained(tmp_path / "base"), tmp_path / "b")
    torch.testing.assert_close(HFPolicy(peft_m, tok).token_logprobs(*args)[0].detach(), want, atol=1e-5, rtol=0)
    merged = load_policy(str(tmp_path / "b_merged"), device="cpu", backend="hf", reference=False)
    torch.testing.assert_close(merged.token_logprobs(*args)[0].detach(), want, atol=1e-4, rtol=0)
    # a's adapter saved before training is still an exact no-op; both reload onto one base
    a.save(tmp_path / "a")
    a2, b2 = load_pair(f"{tmp_path / 'a'},{tmp_path / 'b'}", device="cpu", backend="hf")
    assert a2.model is b2.model and len(a2.parameters()) == len(b2.parameters()) > 0
    torch.testing.assert_close(b2.token_logprobs(*args)[0].detach(), want, atol=1e-5, rtol=0)
    torch.testing.assert_close(load_policy(str(tmp_path / "a"), device="cpu", backend="hf").token_logprobs(*args)[0],
                               HFPolicy(Qwen3ForCausalLM.from_pretrained(tmp_path / "base"), tok).token_logprobs(*args)[0])


def test_adapters_load_from_a_dotted_dir_and_refuse_two_bases(model, tok, tmp_path):
    for name, seed in (("base", 0), ("other", 1)):
        new_model(SMALL, tok, seed=seed).save_pretrained(tmp_path / name)
        tok.save_pretrained(tmp_path / name)
        load_pair(str(tmp_path / name), lora_rank=4, device="cpu", backend="hf")[1].save(tmp_path / f"{name}.v1")
    pol = load_policy(str(tmp_path / "base.v1"), device="cpu", backend="hf")  # "." is no module name for torch
    assert pol.name == "base_v1" and pol.parameters()
    with pytest.raises(ValueError, match="name different bases"):  # other's adapter would sit on base's weights
        load_pair(f"{tmp_path / 'base.v1'},{tmp_path / 'other.v1'}", device="cpu", backend="hf")


def test_full_pair_from_two_paths(model, tok, tmp_path):
    model.save_pretrained(tmp_path / "m")
    tok.save_pretrained(tmp_path / "m")
    a, b = load_pair(f"{tmp_path / 'm'},{tmp_path / 'm'}", device="cpu", backend="hf")
    assert a.model is not b.model and a.name == "A" and b.name == "B"
    assert a.tokenizer.decode(a.tokenizer("x<think>y")["input_ids"]) == "x<think>y"  # not swapped for a BPE
    a.save(tmp_path / "a")
    assert load_policy(str(tmp_path / "a"), device="cpu", backend="hf").model.num_parameters() == model.num_parameters()


@pytest.mark.parametrize("family", ["llama", "qwen2"])
def test_fast_decoder_matches_other_families(tok, family):
    from transformers import AutoConfig, AutoModelForCausalLM

    from baselines.policy.fast_decode import supports

    cfg = AutoConfig.for_model(family, vocab_size=len(tok), hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                               num_key_value_heads=2, intermediate_size=128, eos_token_id=tok.eos_token_id,
                               pad_token_id=tok.pad_token_id)
    torch.manual_seed(0)
    m = AutoModelForCausalLM.from_config(cfg)
    assert supports(m)
    pol = HFPolicy(m, tok, family)
    _check_logprobs(pol, pol.generate(PROMPTS, n=2, params=SamplingParams(max_new_tokens=20), seed=0))


def test_lean_decoder_samples_the_transformers_tokens(monkeypatch):
    """The lean decoder (fused projections, matmul attention for one-token steps) is a pure speed-up: on a
    GRPO-sized batch of the shipped model (16 problems × 16 samples) it samples exactly the tokens the
    transformers forward samples from the same seed, with log-probs equal to float tolerance."""
    from agon_env import AgonGame
    from baselines.policy import fast_decode, load_policy
    from problems import load

    pol = load_policy("tiny:a", backend="hf", reference=False)
    prompts = AgonGame(template="compact").drafter_prompts(load("arith", split="train", tier="hard")[:16])
    params = SamplingParams(temperature=0.7, max_new_tokens=128)
    lean = [g for row in pol.generate(prompts, n=16, params=params, seed=4) for g in row]
    monkeypatch.setattr(fast_decode, "supports", lambda m: False)
    plain = [g for row in pol.generate(prompts, n=16, params=params, seed=4) for g in row]
    assert [g.completion_ids for g in lean] == [g.completion_ids for g in plain]
    gap = max(abs(a - b) for x, y in zip(lean, plain) for a, b in zip(x.logprobs, y.logprobs))
    assert gap < 1e-4


@pytest.mark.parametrize("lean", [True, False])
def test_finished_rows_leaving_the_batch_change_no_token(monkeypatch, lean):
    """Finished rows leave the decoding batch (`compact`) as a pure speed-up: on a GRPO-sized batch of the shipped
    model, whichever share triggers it, every row samples the tokens it samples when no row leaves, with log-probs
    equal within float rounding (a smaller batch can take other matmul kernels), through the lean decoder and the
    transformers forward alike."""
    import functools

    from agon_env import AgonGame
    from baselines.policy import fast_decode, load_policy, sampling
    from problems import load

    pol = load_policy("tiny:a", backend="hf", reference=False)
    if not lean:
        monkeypatch.setattr(fast_decode, "supports", lambda m: False)
    prompts = AgonGame(template="compact").drafter_prompts(load("arith", split="train", tier="hard")[:8])
    params = SamplingParams(temperature=0.7, max_new_tokens=128)
    rows = []  # the batch size of every decoding step
    pol.model.lm_head.register_forward_pre_hook(lambda m, x: rows.append(x[0].shape[0]))
    out, fed = {}, {}
    for compact in (0.0, 0.75, 1.0):
        monkeypatch.setattr("baselines.policy.hf.sample", functools.partial(sampling.sample, compact=compact))
        rows.clear()
        out[compact] = [(g.completion_ids, g.logprobs) for row in pol.generate(prompts, n=8, params=params, seed=4)
                        for g in row]
        fed[compact] = sum(rows)
    lengths = [len(c) for c, _ in out[0.0]]
    assert fed[0.0] == 64 * max(lengths) and fed[1.0] == sum(lengths) < fed[0.75] < fed[0.0]
    for compact in (0.75, 1.0):
        assert [c for c, _ in out[compact]] == [c for c, _ in out[0.0]]
        gap = max(abs(a - b) for (_, x), (_, y) in zip(out[compact], out[0.0]) for a, b in zip(x, y))
        assert gap < 1e-5
