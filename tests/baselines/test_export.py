"""Exported runs open without this project: PEFT adapters in vLLM's layout, full models in transformers."""

import json
import os
import time

import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")
torch.set_num_threads(1)  # the CPU is shared: extra threads only spin

from baselines.export import Args, check_vllm_adapter, export_run, main  # noqa: E402
from baselines.policy import HFPolicy, load_pair, load_policy  # noqa: E402
from baselines.policy.tiny import TinyConfig, build_tokenizer, new_model  # noqa: E402
from baselines.runlog import save_checkpoint  # noqa: E402

PROMPT, COMPLETION = "Q:12+34\nA:", "<think>10+30=40</think>s<answer>46</answer>"


def _ids(pol):
    return [pol.encode_prompt(PROMPT)], [pol.tokenizer(COMPLETION, add_special_tokens=False)["input_ids"]]


def _logprobs(pol, ids):
    with torch.no_grad():
        return pol.token_logprobs(*ids)[0]


def _fake_training(policies, seed=0):
    """Move every trainable tensor, as a run's steps would (A's zero lora_B included)."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for pol in policies.values():
            for p in pol.parameters():
                p.add_(torch.randn(p.shape, generator=gen) * 0.02)


def _write_run(path, model, policies, **cfg):
    """What a learner leaves: config.json, metrics.jsonl and its final checkpoint/state.pt."""
    path.mkdir(parents=True)
    (path / "config.json").write_text(json.dumps({"steps": 3, "model": model, "seed": 0, **cfg}))
    (path / "metrics.jsonl").write_text("")
    save_checkpoint(path, 3, policies, {}, {}, {})
    return path


@pytest.fixture
def small_base(tmp_path):
    tok = build_tokenizer()
    new_model(TinyConfig(hidden=64, layers=2, heads=4, kv_heads=2, mlp=128), tok, seed=0).save_pretrained(tmp_path / "base")
    tok.save_pretrained(tmp_path / "base")
    return str(tmp_path / "base")


def test_lora_run_exports_peft_adapters_in_vllms_layout(small_base, tmp_path, capsys):
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    a, b = load_pair(small_base, lora_rank=4, device="cpu", backend="hf")
    trained = {"A": a, "B": b}
    _fake_training(trained)
    run = _write_run(tmp_path / "run", small_base, trained, group_size=2, lora_rank=4)
    manifest = main(Args(run=str(run), out=str(tmp_path / "out"), base_name="Qwen/Qwen3-0.6B"))
    out = tmp_path / "out"
    for name, pol in trained.items():
        assert {"adapter_config.json", "adapter_model.safetensors"} <= {f.name for f in (out / name).iterdir()}
        cfg = check_vllm_adapter(out / name)
        assert cfg["base_model_name_or_path"] == "Qwen/Qwen3-0.6B" and cfg["r"] == 4
        reloaded = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(small_base), out / name)
        ids = _ids(pol)
        torch.testing.assert_close(_logprobs(HFPolicy(reloaded, pol.tokenizer), ids), _logprobs(pol, ids),
                                   atol=1e-5, rtol=0)
    assert manifest["vllm_serve"] == (f"vllm serve Qwen/Qwen3-0.6B --enable-lora --max-loras 2 "
                                      f"--lora-modules A={out / 'A'} B={out / 'B'}")
    assert json.loads((out / "export.json").read_text()) == manifest
    assert "vLLM: vllm serve" in capsys.readouterr().out


def test_vllm_check_names_what_vllm_refuses(small_base, tmp_path):
    a, _ = load_pair(small_base, lora_rank=4, device="cpu", backend="hf")
    a.save(tmp_path / "A")
    cfg_file = tmp_path / "A" / "adapter_config.json"
    cfg = json.loads(cfg_file.read_text())
    cfg_file.write_text(json.dumps({**cfg, "use_dora": True, "modules_to_save": ["lm_head"]}))
    with pytest.raises(ValueError, match="modules_to_save is \\['lm_head'\\].*use_dora is set"):
        check_vllm_adapter(tmp_path / "A")
    (tmp_path / "A" / "adapter_model.safetensors").unlink()
    with pytest.raises(ValueError, match="missing adapter_model.safetensors"):
        check_vllm_adapter(tmp_path / "A")


@pytest.mark.parametrize("learner", ["agon_grpo", "grpo"])
def test_tiny_runs_export_plain_transformers_checkpoints(tmp_path, learner):
    from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedTokenizerFast

    if learner == "agon_grpo":
        trained = dict(zip("AB", load_pair("tiny", device="cpu", backend="hf", reference=False)))
        cfg = {"group_size": 2, "lora_rank": 16}
    else:
        trained = {"policy": load_policy("tiny:b", device="cpu", backend="hf", reference=False)}
        cfg = {"policy": "b", "lora_rank": 16}
    _fake_training(trained)
    manifest = export_run(_write_run(tmp_path / "run", "tiny", trained, **cfg), tmp_path / "out")
    assert "vllm_serve" not in manifest
    for (name, entry), pol in zip(manifest["policies"].items(), trained.values()):
        assert entry["format"] == "transformers" and name in ("A", "B", "GRPO")
        path = tmp_path / "out" / entry["path"]
        model = AutoModelForCausalLM.from_pretrained(path)
        want = pol.tokenizer(COMPLETION, add_special_tokens=False)["input_ids"]
        for tok in (PreTrainedTokenizerFast.from_pretrained(path), AutoTokenizer.from_pretrained(path)):
            assert tok(COMPLETION, add_special_tokens=False)["input_ids"] == want
            assert tok.decode(tok(COMPLETION)["input_ids"]) == COMPLETION  # the character tokenizer, not a BPE
        ids = _ids(pol)
        torch.testing.assert_close(_logprobs(HFPolicy(model, pol.tokenizer), ids), _logprobs(pol, ids), atol=1e-6, rtol=0)


@pytest.mark.slow
def test_smollm2_adapters_round_trip_through_plain_peft(tmp_path):
    """The real pretrained base (GGUF): both trained adapters reload with PeftModel.from_pretrained alone."""
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    from baselines.policy import load_hf

    t = time.time()
    a, b = load_pair("smollm2", lora_rank=8, device="cpu", backend="hf", seed=0)
    trained = {"A": a, "B": b}
    _fake_training(trained)
    run = _write_run(tmp_path / "run", "smollm2", trained, group_size=2, lora_rank=8)
    manifest = export_run(run, tmp_path / "out", with_base=True)
    print(f"SmolLM2 pair load + export with base: {time.time() - t:.1f}s")
    out = tmp_path / "out"
    assert manifest["base"] == str(out / "base") and manifest["serves_as_is"]
    ids = ([a.encode_prompt("What is 2+3?")], [a.tokenizer(" 2+3=5.", add_special_tokens=False)["input_ids"]])
    want = {n: _logprobs(p, ids) for n, p in trained.items()}
    gguf_base, _ = load_hf("smollm2")  # the run's own base, and the exported transformers copy vLLM would serve
    for name, base in (("A", gguf_base), ("B", AutoModelForCausalLM.from_pretrained(out / "base"))):
        check_vllm_adapter(out / name)
        reloaded = PeftModel.from_pretrained(base, out / name)
        got = _logprobs(HFPolicy(reloaded, a.tokenizer), ids)
        assert (got - want[name]).abs().max().item() < 1e-4, name
    assert (want["A"] - want["B"]).abs().max().item() > 1e-3  # two different adapters, each reloaded as itself


def test_with_base_writes_the_runs_own_base_even_when_the_adapters_name_a_hub_base(small_base, tmp_path):
    from transformers import AutoModelForCausalLM

    a, b = load_pair(small_base, lora_rank=4, device="cpu", backend="hf")
    run = _write_run(tmp_path / "run", small_base, {"A": a, "B": b}, group_size=2, lora_rank=4)
    # offline, loading the hub name failed; online it would have written a different model as the base
    manifest = export_run(run, tmp_path / "out", base_name="Qwen/Qwen3-0.6B", with_base=True)
    assert manifest["base"] == str(tmp_path / "out" / "base") and manifest["policies"]["A"]["base"] == "Qwen/Qwen3-0.6B"
    want = AutoModelForCausalLM.from_pretrained(small_base).state_dict()
    got = AutoModelForCausalLM.from_pretrained(tmp_path / "out" / "base").state_dict()
    assert want.keys() == got.keys() and all(torch.equal(want[k], got[k]) for k in want)


@pytest.mark.parametrize("opts", [dict(with_base=True), dict(base_name="Qwen/Qwen3-0.6B")])
def test_base_options_on_a_full_model_run_are_refused(tmp_path, opts):
    trained = {"policy": load_policy("tiny:a", device="cpu", backend="hf", reference=False)}
    run = _write_run(tmp_path / "run", "tiny", trained, policy="a", lora_rank=16)
    with pytest.raises(SystemExit, match="--base-name / --with-base are for LoRA runs"):
        export_run(run, tmp_path / "out", **opts)
    assert not (tmp_path / "out").exists()  # refused before anything is written


def test_a_directory_that_is_not_a_run_is_refused_by_name(tmp_path):
    (tmp_path / "model").mkdir()
    with pytest.raises(SystemExit, match="'.*model' is not a learner's run directory"):
        export_run(tmp_path / "model", tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_a_non_empty_out_is_refused_and_overwrite_replaces_only_an_earlier_export(tmp_path):
    """A full-model export, then another run into the same OUT: without --overwrite nothing is
    touched; with it, no file of the first export is left beside the second's."""
    full = {"policy": load_policy("tiny:a", device="cpu", backend="hf", reference=False)}
    run = _write_run(tmp_path / "run", "tiny", full, policy="a", lora_rank=16)
    out = tmp_path / "out"
    export_run(run, out)
    (out / "GRPO" / "stale.bin").write_bytes(b"from an earlier export")
    before = sorted(p.relative_to(out) for p in out.rglob("*"))
    with pytest.raises(SystemExit, match="is not empty; .* --overwrite"):
        export_run(run, out)
    assert sorted(p.relative_to(out) for p in out.rglob("*")) == before
    export_run(run, out, overwrite=True)
    assert not (out / "GRPO" / "stale.bin").exists() and (out / "export.json").exists()

    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("not an export")
    with pytest.raises(SystemExit, match="no export.json"):
        export_run(run, tmp_path / "mine", overwrite=True)
    assert (tmp_path / "mine" / "notes.txt").read_text() == "not an export"
