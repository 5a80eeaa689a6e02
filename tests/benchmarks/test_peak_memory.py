"""The measured peak-memory benchmark on the tiny model: fresh workers, sane figures, an honest target line."""

import json

import pytest

from benchmarks import peak_memory

SMALL = dict(model="tiny", setups="full,two-full", mmap_setups="full", sequences=2, completion_tokens=8, steps=1, threads=1)


@pytest.mark.slow  # three fresh interpreters importing torch: ~14 s
def test_workers_measure_two_full_models_above_one(tmp_path):
    out = peak_memory.main(peak_memory.Args(**SMALL, results_dir=str(tmp_path)))
    assert {p.name for p in tmp_path.iterdir()} == {"peak_memory.json", "peak_memory.md"}
    report = json.loads((tmp_path / "peak_memory.json").read_text())
    assert report["workers"] == out["workers"] and report["versions"]["torch"]
    workers = {(w["setup"], w["allocator"]): w for w in report["workers"]}
    assert list(workers) == [("full", peak_memory.DEFAULT), ("two-full", peak_memory.DEFAULT), ("full", peak_memory.FIXED)]
    for w in workers.values():
        assert 0 < w["baseline_mib"] < w["loaded_mib"] <= w["peak_mib"]
    full, two = workers["full", peak_memory.DEFAULT], workers["two-full", peak_memory.DEFAULT]
    assert two["trainable_params"] == 2 * full["trainable_params"]
    own = [w["peak_mib"] - w["baseline_mib"] for w in workers.values()]
    # the second model's fp32 weights, gradients and two AdamW moments (16 B a parameter) must show, half of them at least
    assert own[1] - own[0] > 0.5 * 16 * full["trainable_params"] / 2**20
    assert [r["peak − baseline (MiB)"] for r in report["rows"]] == pytest.approx(own)
    assert report["targets"] == {} and "Target" not in (tmp_path / "peak_memory.md").read_text()  # needs adapter and pair
    assert "| two full models |" in (tmp_path / "peak_memory.md").read_text()


def _worker(setup, baseline, peak, allocator=peak_memory.DEFAULT):
    return {"setup": setup, "allocator": allocator, "baseline_mib": baseline, "loaded_mib": baseline, "peak_mib": peak,
            "trainable_params": 1}


@pytest.mark.parametrize("pair_peak, met", [(1210, True), (1211, False)])
def test_target_is_the_pair_over_the_wide_adapter_above_baseline_per_allocator(pair_peak, met):
    fixed = peak_memory.FIXED
    rows, targets = peak_memory.rows_and_targets([
        _worker("adapter", 900, 1000), _worker("wide-adapter", 900, 1100), _worker("pair", 1000, pair_peak),
        _worker("adapter", 900, 950, fixed), _worker("pair", 900, 960, fixed), _worker("full", 900, 2000, "other")])
    # the target needs the wide adapter under the same allocator: none for `fixed`
    assert list(targets) == [peak_memory.DEFAULT] and targets[peak_memory.DEFAULT]["met"] is met
    assert targets[peak_memory.DEFAULT]["pair_over_wide_adapter"] == pytest.approx((pair_peak - 1000) / 200)
    assert [r["vs one model + one adapter"] for r in rows] == pytest.approx([1, 2, (pair_peak - 1000) / 100, 1, 1.2, "—"])
    assert [r["vs one model + rank-2r adapter"] for r in rows][:3] == pytest.approx([0.5, 1, (pair_peak - 1000) / 200])
    assert [r["vs one model + rank-2r adapter"] for r in rows][3:] == ["—"] * 3


@pytest.mark.parametrize("bad, option", [({"setups": "full,three-full"}, "--setups"), ({"mmap_setups": "pair,x"}, "--mmap-setups"),
                                         ({"steps": 0}, "--steps"), ({"worker": "nope"}, "--worker")])
def test_bad_options_name_themselves(tmp_path, bad, option):
    with pytest.raises(SystemExit, match=option):
        peak_memory.main(peak_memory.Args(**{**SMALL, **bad}, results_dir=str(tmp_path)))
    assert not any(tmp_path.iterdir())


def test_the_file_names_the_command_that_made_it(tmp_path, monkeypatch):
    monkeypatch.setattr(peak_memory, "measure", lambda args, setup, fixed: {**_worker(setup, 900, 1000), "prompt_tokens": 9})
    peak_memory.main(peak_memory.Args(**SMALL, results_dir=str(tmp_path)))
    command = (tmp_path / "peak_memory.md").read_text().split("by `")[-1]
    assert all(flag in command for flag in ("--model tiny", "--setups full,two-full", "--steps 1", "--threads 1"))
