"""The ours-vs-CoMLRL pair benchmark: our worker's step on the tiny pair, the table's arithmetic, and its errors.

The end-to-end run needs CoMLRL's own virtualenv (`make bench-comlrl` builds it), so it is a
benchmark, not a test; what runs here is everything on our side of the comparison."""

import pytest

from benchmarks import pair_vs_comlrl as pvc


def _record(seconds, tokens, generate_s=0.0, completions=8):
    return {"seconds": seconds, "tokens": tokens, "generate_s": generate_s, "completions": completions}


def test_summary_leaves_out_the_warm_up_and_takes_medians():
    s = pvc.summarize([_record(100.0, 1), _record(2.0, 100, 1.0), _record(4.0, 100, 2.0), _record(1.0, 100, 0.5)])
    assert s["s_per_step"] == 2.0 and s["steps_per_s"] == 0.5
    assert s["tokens_per_s"] == 50.0  # median of 50, 25, 100
    assert s["generate_share"] == pytest.approx(3.5 / 7.0)
    assert s["tokens_per_step"] == 100 and s["completions_per_step"] == 8


@pytest.mark.parametrize("ours_peak, met", [(600.0, True), (601.0, False)])
def test_table_ratios_are_ours_over_comlrl(ours_peak, met):
    summary = {"ours": pvc.summarize([_record(9, 9), _record(1.0, 300)]),
               "comlrl": pvc.summarize([_record(9, 9), _record(2.0, 200)])}
    memory = {"ours": {"peak": ours_peak, "base": 400.0}, "comlrl": {"peak": 1000.0, "base": 500.0}}
    rows, ratio = pvc.table(summary, memory, {"ours": "o", "comlrl": "c"})
    assert ratio["tokens_per_s"] == pytest.approx(3.0) and ratio["steps_per_s"] == pytest.approx(2.0)
    assert (ratio["peak_rss"] <= pvc.TARGET_MEMORY) is met
    assert [r["learner"] for r in rows] == ["o", "c", "ours / CoMLRL"]
    assert rows[2]["completion tokens/s"] == 3.0 and rows[2]["s/step"] == 0.5


def test_report_names_one_file_per_model():
    assert pvc.report_name(pvc.Args(results_dir="/tmp/x")) == ("pair_vs_comlrl", "python -m benchmarks.pair_vs_comlrl")
    name, command = pvc.report_name(pvc.Args(model="smollm2", steps=3, micro_batch=0))
    assert name == "pair_vs_comlrl_smollm2"
    assert command == "python -m benchmarks.pair_vs_comlrl --model smollm2 --steps 3 --micro-batch 0"
    assert pvc.report_name(pvc.Args(model="/tmp/my-model.v2"))[0] == "pair_vs_comlrl_my_model_v2"


@pytest.mark.parametrize("bad, option", [({"steps": 0}, "--steps"), ({"group": 1}, "--group"),
                                         ({"comlrl_python": "/nonexistent/python"}, "--comlrl-python")])
def test_bad_options_name_themselves_and_write_nothing(tmp_path, bad, option):
    with pytest.raises(SystemExit, match=option):
        pvc.main(pvc.Args(**bad, results_dir=str(tmp_path)))
    assert not any(tmp_path.iterdir())


def test_unknown_worker_role_is_refused(tmp_path):
    spec = tmp_path / "spec.json"
    spec.write_text("{}")
    with pytest.raises(SystemExit, match="--worker"):
        pvc.worker_main(pvc.Args(worker="nope", spec=str(spec)))


def test_distinct_pad_replaces_a_pad_token_that_the_prompts_contain():
    from baselines.policy import load_pair

    pa, _ = load_pair("tiny", device="cpu", seed=0, backend="hf", reference=False)
    model, tok = pa.model, pa.tokenizer
    text = "1 + 1 = ?" + tok.pad_token
    assert tok.pad_token_id in tok(text)["input_ids"]
    before = tok.pad_token
    note = pvc.distinct_pad(model, tok, [text])
    assert before in note and tok.pad_token != before
    assert tok.pad_token_id not in tok(text)["input_ids"] and model.generation_config.pad_token_id == tok.pad_token_id
    assert pvc.distinct_pad(model, tok, [text]).startswith("kept")


@pytest.mark.slow  # loads the tiny pair and runs two Agon steps in this process: a few seconds
def test_our_worker_counts_every_generated_token_and_steps_the_same_problems():
    b = dict(steps=1, problems_per_step=2, group=2, max_new_tokens=8, temperature=0.7, lr=1e-4, lora_rank=4, micro_batch=0,
             seed=0, threads=1)
    side = pvc.OursSide({"bench": b, "ours_model": "tiny"})
    ready = side.ready()
    assert len(ready["order"]) == 2 and all(len(ids) == 2 for ids in ready["order"]) and not ready["lora"]
    for s in range(2):
        rec = side.step(s)  # raises if the counted tokens disagree with the step's own length metrics
        assert rec["problems"] == ready["order"][s]
        assert rec["completions"] == 2 * 2 * 2  # problems x N drafts + problems x N answers
        assert 0 < rec["generate_s"] < rec["seconds"] and 0 < rec["tokens"] <= rec["completions"] * 8
        assert rec["drafter"] == "AB"[s % 2] and len(rec["prompt_tokens"]) == 2
