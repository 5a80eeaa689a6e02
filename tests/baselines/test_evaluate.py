"""Evaluation: Clopper-Pearson, the paired bootstrap, one model's pass@1, a cascade's conversion and keep,
chunked sampling, the direction choice."""

import json

import numpy as np
import pytest

from agon_env.game import AgonGame
from agon_env.grading import ExactMatchGrader
from baselines.config import EvalConfig
from baselines.evaluate import (
    CHUNK,
    choose_direction,
    chunk_seed,
    clopper_pearson,
    evaluate_cascade,
    evaluate_pair,
    evaluate_single,
    paired_bootstrap,
    summary_row,
)
from problems.record import Problem

from .scripted import ScriptedPolicy, ans


@pytest.mark.parametrize("k,n,lo,hi", [(0, 10, 0.0, 0.3085), (5, 10, 0.1871, 0.8129), (10, 10, 0.6915, 1.0),
                                       (1, 20, 0.0013, 0.2487)])
def test_clopper_pearson_known_values(k, n, lo, hi):
    got = clopper_pearson(k, n)
    assert got == pytest.approx((lo, hi), abs=1e-4)


def test_single_and_cascade_rows_count_what_was_right():
    game = AgonGame(template="compact", grader=ExactMatchGrader())
    ps = [Problem(id=str(i), question=f"q{i}", answer="1") for i in range(4)]
    drafter = ScriptedPolicy("A", lambda p: ans(1) if p.startswith("Q:q0") or p.startswith("Q:q1") else ans(0))
    answerer = ScriptedPolicy("B", lambda p: ans(1) if "Q:q0" in p or "Q:q2" in p else ans(0))
    single = evaluate_single(drafter, ps, game, EvalConfig(samples=2), 0)
    assert (single["pass@1"], single["n"], single["greedy"]) == (0.5, 8, 0.5)
    row = evaluate_cascade(drafter, answerer, ps, game, EvalConfig(samples=1, greedy=False), 0)
    # drafts right on q0, q1; the answerer right on q0 (keep) and q2 (conversion)
    assert (row["method"], row["pass@1"], row["drafter_pass"]) == ("A→B", 0.5, 0.5)
    assert (row["conversion"], row["keep"]) == (0.5, 0.5)


def test_choose_direction_needs_cascade_rows():
    assert choose_direction([{"method": "A→B", "pass@1": 0.2}, {"method": "B→A", "pass@1": 0.3}]) == "B→A"
    with pytest.raises(ValueError, match="cascade rows"):
        choose_direction([{"method": "A", "pass@1": 1.0}])


def test_paired_bootstrap_finds_a_known_shift():
    rng = np.random.default_rng(1)
    before = rng.random(400).tolist()
    after = [b + 0.1 + 0.05 * rng.standard_normal() for b in before]
    d = paired_bootstrap(before, after)
    assert d["delta"] == pytest.approx(0.1, abs=0.01) and d["n"] == 400
    assert d["ci_low"] < d["delta"] < d["ci_high"] and 0.09 < d["ci_low"] and d["ci_high"] < 0.11


def test_paired_bootstrap_of_identical_lists_is_zero_and_deterministic():
    xs = [0.0, 0.5, 1.0, 0.25]
    assert paired_bootstrap(xs, xs) == {"delta": 0.0, "ci_low": 0.0, "ci_high": 0.0, "n": 4}
    rng = np.random.default_rng(0)
    a, b = rng.random(50).tolist(), rng.random(50).tolist()
    assert paired_bootstrap(a, b, n_boot=500, seed=3) == paired_bootstrap(a, b, n_boot=500, seed=3)
    assert paired_bootstrap(a, b, n_boot=500, seed=3) != paired_bootstrap(a, b, n_boot=500, seed=4)


@pytest.mark.parametrize("before,after,msg", [([0.1, 0.2], [0.3], "got 2 before and 1 after"),
                                              ([], [], "got 0 before and 0 after")])
def test_paired_bootstrap_names_bad_lengths(before, after, msg):
    with pytest.raises(ValueError, match=msg):
        paired_bootstrap(before, after)


@pytest.mark.parametrize("kw,msg", [({"n_boot": 0}, "n_boot=0"), ({"n_boot": 2.5}, "n_boot=2.5"),
                                    ({"alpha": 0.0}, "alpha=0.0"), ({"alpha": 1.5}, "alpha=1.5")])
def test_paired_bootstrap_names_a_bad_resample_count_or_level(kw, msg):
    # numpy's own errors (an empty concatenate, a quantile outside [0, 1]) named neither option
    with pytest.raises(ValueError, match=msg):
        paired_bootstrap([0.0, 1.0], [1.0, 1.0], **kw)


class SeedRecorder(ScriptedPolicy):
    """Records each generate call's prompt count and seed."""

    def generate(self, prompts, n=1, params=None, seed=None):
        self.calls = getattr(self, "calls", []) + [(len(prompts), seed)]
        return super().generate(prompts, n, params, seed)


def test_evaluation_samples_in_seeded_chunks_and_keeps_per_problem_results():
    game = AgonGame(template="compact", grader=ExactMatchGrader())
    ps = [Problem(id=str(i), question=f"q{i}", answer="1") for i in range(2 * CHUNK + 2)]
    pol = SeedRecorder("A", lambda p: ans(1) if p.startswith("Q:q1") else ans(0))  # right on q1, q10-q19, q100-q129
    row = evaluate_single(pol, ps, game, EvalConfig(samples=3, greedy=False), 5, progress=False)
    assert pol.calls == [(CHUNK, 5), (CHUNK, chunk_seed(5, 1)), (2, chunk_seed(5, 2))]
    assert len({chunk_seed(5, i) for i in range(50)} | {chunk_seed(6, i) for i in range(50)}) == 100
    assert row["per_problem"] == [float(str(i).startswith("1")) for i in range(len(ps))]
    assert json.loads(json.dumps(row)) == row  # rows go into summary.json and metrics as they are
    cascade = evaluate_cascade(pol, pol, ps[:3], game, EvalConfig(samples=2, greedy=False), 5, progress=False)
    assert cascade["per_problem"] == [0.0, 0.0, 0.0] and cascade["n"] == 6  # the answerer reads a draft: "D:..."


def test_a_pair_samples_each_models_drafts_once_and_reports_what_separate_evaluations_do():
    """A model's own row and its cascade read the same draws (same prompts, chunks and seeds), so the pair's
    evaluation samples them once: the tiny pair's rows equal the four evaluations run one by one."""
    from baselines.config import LearnerArgs, policy_template
    from baselines.policy import load_pair

    args = LearnerArgs()
    a, b = load_pair(args.model_spec(), device="cpu", seed=0, backend="hf", reference=False)
    ps = args.load("test", "hard", 12)
    game = args.game(ps[0].domain, policy_template([a, b]))
    cfg = EvalConfig(samples=2, greedy=True)
    calls = []
    for pol in (a, b):
        pol.generate = (lambda gen, name: lambda *x, **k: calls.append(name) or gen(*x, **k))(pol.generate, pol.name)
    pair = evaluate_pair(a, b, ps, game, cfg, 3, progress=False)
    assert sorted(calls) == ["A"] * 4 + ["B"] * 4  # drafts sampled and greedy, answers sampled and greedy
    calls.clear()
    alone = [evaluate_single(a, ps, game, cfg, 3, False), evaluate_single(b, ps, game, cfg, 3, False),
             evaluate_cascade(a, b, ps, game, cfg, 3, False), evaluate_cascade(b, a, ps, game, cfg, 3, False)]
    assert len(calls) == 12 and pair == alone
    assert 0 < pair[0]["pass@1"] < 1 and pair[2]["conversion"] + pair[2]["keep"] > 0  # real draws, graded


def test_summary_row_refuses_a_ragged_sample_count():
    with pytest.raises(ValueError, match="3 results are not a whole number of groups of 2"):
        summary_row("M", [True, False, True], [1, 1, 1], None, samples=2)
