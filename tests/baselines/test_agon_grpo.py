"""Agon GRPO: the conversion bonus, own groups, role swaps, both policies updating, the CLI."""

import json
import time
from dataclasses import replace

import pytest
import torch

from agon_env.game import AgonGame
from agon_env.grading import ExactMatchGrader
from baselines import agon_grpo
from baselines.config import EvalConfig
from baselines.grpo_loss import group_advantages
from baselines.policy import Generation, SamplingParams, load_pair
from baselines.rollouts import Rollouts
from baselines.update import make_optimizer
from problems.record import Problem

from .cli import cli

TINY = dict(sampling=SamplingParams(max_new_tokens=48), eval=EvalConfig(problems=8, samples=1, max_new_tokens=48),
            eval_every=0, progress=False, threads=1, problems_per_step=2, group_size=4)


def _gens(texts):
    return [Generation("", t, [0], [1], [0.0], True) for t in texts]


def test_conversion_bonus_reaches_challenger_and_groups_are_own():
    game = AgonGame(grader=ExactMatchGrader())
    p1, p2 = Problem(id="1", question="q1", answer="1"), Problem(id="2", question="q2", answer="2")
    ans = lambda x: f"<answer>{x}</answer>"  # noqa: E731
    drafts = Rollouts([p1, p2], 2, _gens([ans(0), ans(1), ans(2), ans(2)]))  # group 1: wrong, right; group 2: right, right
    responses = [ans(1), ans(1), ans(2), ans(0)]  # converts the wrong draft; keeps; keeps; misses
    played = game.score_round(drafts.each_problem, drafts.texts, responses)
    r_d, r_c = drafts.grid(played.drafter_rewards), drafts.grid([g.challenger_reward for g in played.games])
    assert r_c.tolist() == [[3.5, 2.5], [2.5, 0.5]]  # 2c + bonus + λφ: the bonus only for the conversion
    assert r_d.tolist() == [[0.5, 2.5], [2.5, 2.5]]
    adv_c = group_advantages(r_c)
    assert adv_c[0, 0] > 0 and torch.allclose(adv_c.sum(-1), torch.zeros(2), atol=1e-5)  # centred per own group
    assert torch.equal(group_advantages(r_d)[1], torch.zeros(2))  # the drafter's all-right group: no signal
    coop = AgonGame(reward="cooperative", grader=ExactMatchGrader()).score_round(drafts.each_problem, drafts.texts, responses)
    assert drafts.grid([g.challenger_reward for g in coop.games])[0].tolist() == [2.5, 2.5]  # no bonus: no gradient


def test_shared_opponent_pays_unread_drafts_grpo_reward():
    game = AgonGame(grader=ExactMatchGrader())
    p = Problem(id="1", question="q1", answer="1")
    ans = lambda x: f"<answer>{x}</answer>"  # noqa: E731
    drafts = Rollouts([p], 3, _gens([ans(0), ans(1), "no answer"]))
    read = [0, 0, 0]  # every challenger reads the group's first draft
    played = game.score_round(drafts.each_problem, drafts.texts, [ans(1)] * 3, read)
    assert [g.challenger_reward for g in played.games] == [3.5] * 3  # all convert the wrong draft they read
    assert played.drafter_rewards == [0.5, 2.5, 0.0]  # unread drafts: 2c + λφ, as in GRPO
    assert played.drafter_correct == [False, True, False]


def test_step_metrics_credit_each_rate_to_the_model_in_that_role():
    """B drafts, A challenges; two problems of two games: (drafter right, challenger right) =
    (1, 0), (0, 1) | (0, 1), (0, 0). Wins, passes and rewards go to the model that played the role."""
    from agon_env.rules import RewardConfig, pay

    verdict = lambda c: {"correct": bool(c), "formatted": True}  # noqa: E731
    games = [pay(RewardConfig("agon"), verdict(a), verdict(b)) for a, b in ((1, 0), (0, 1), (0, 1), (0, 0))]
    r_d = torch.tensor([[g.drafter_reward for g in games[:2]], [g.drafter_reward for g in games[2:]]])
    r_c = torch.tensor([[g.challenger_reward for g in games[:2]], [g.challenger_reward for g in games[2:]]])
    stats = {"clip_frac": 0.0, "kl": 0.0, "sampler_gap": 0.0, "grad_norm": 1.0, "loss": 0.0}
    m = agon_grpo.step_metrics("B", "A", games, [True, False, False, False], r_d, r_c, ["", ""], [4, 6, 8, 2],
                               [1, 1, 1, 1], group_advantages(r_c), torch.zeros(2, 2), stats, stats, 1e-3, 0.1)
    assert (m["drafter"], m["win/B"], m["win/A"], m["tie"]) == ("B", 0.25, 0.5, 0.25)
    assert (m["pass/B"], m["pass/A"], m["pass/drafter"], m["pass/challenger"]) == (0.25, 0.5, 0.25, 0.5)
    assert (m["conversion"], m["keep"]) == (2 / 3, 0.0)
    assert m["reward/B_drafter_mean"] == pytest.approx((2.5 + 0.5 * 3) / 4)
    assert m["reward/A_challenger_mean"] == pytest.approx((0.5 + 3.5 + 3.5 + 0.5) / 4)
    assert "reward/A_drafter_mean" not in m and "reward/B_challenger_mean" not in m
    assert m["length/drafter"] == 5.0


@pytest.fixture(scope="module")
def pair_setup():
    args = agon_grpo.Args(**{**TINY, "group_size": 8, "problems_per_step": 8})  # at T=0.7 most groups are all-right or all-wrong
    args.seed_everything()
    train = args.load("train", args.train_tiers)
    a, b = load_pair("tiny", reference=False, backend="hf")
    game = args.game(model_template=a.template)
    return args, game, train, {"A": a, "B": b}


def test_roles_swap_and_both_policies_update_every_step(pair_setup):
    args, game, train, pols = pair_setup
    opts, scheds = {}, {}
    for k, p in pols.items():
        opts[k], scheds[k] = make_optimizer(p, replace(args, steps=4))
    drafters = []
    for step in range(3):
        before = {k: [t.detach().clone() for t in p.parameters()] for k, p in pols.items()}
        m = agon_grpo.agon_step(step, args, game, train, pols, opts, scheds)
        drafters.append(m["drafter"])
        for k, p in pols.items():
            changed = any(not torch.equal(x, y) for x, y in zip(before[k], p.parameters()))
            assert changed, f"policy {k} did not change at step {step}"
    assert drafters == ["A", "B", "A"]
    fixed = replace(args, fixed_roles=True)
    assert [agon_grpo.agon_step(s, fixed, game, train, pols, opts, scheds)["drafter"] for s in range(2)] == ["A", "A"]


def test_the_length_tiebreak_compares_sampled_tokens(pair_setup, monkeypatch):
    """The learner hands the game each rollout's sampled token count (the paper's length), not
    its characters, for λ′; a right answer shorter in tokens than the right draft it read earns it."""
    args, game, train, pols = pair_setup
    args = replace(args, length_tiebreak=0.25, problems_per_step=2, group_size=2)
    game = replace(game, length_tiebreak=0.25)
    opts, scheds = {}, {}
    for k, p in pols.items():
        opts[k], scheds[k] = make_optimizer(p, replace(args, steps=1))
    seen, sample = [], Rollouts.sample
    monkeypatch.setattr(Rollouts, "sample", lambda *a, **kw: seen.append(sample(*a, **kw)) or seen[-1])
    score = game.score_round
    monkeypatch.setattr(game, "score_round", lambda *a: seen.append((a, score(*a))) or seen[-1][1])
    agon_grpo.agon_step(0, args, game, train, pols, opts, scheds)
    drafts, answers, (call, played) = seen
    assert call[4] == ([len(g.completion_ids) for g in drafts.gens], [len(g.completion_ids) for g in answers.gens])
    for g, nd, na in zip(played.games, *call[4]):
        ca, cb, fb = g.drafter_info["correct"], g.challenger_info["correct"], g.challenger_info["formatted"]
        assert (g.drafter_info["length"], g.challenger_info["length"]) == (nd, na)
        assert g.challenger_reward == pytest.approx(2 * cb + cb * (1 - ca) + 0.5 * fb + 0.25 * (ca and cb and na < nd))


@pytest.mark.parametrize("baseline", ["group", "draft"])
def test_challenger_baseline_decides_whether_a_right_drafts_credit_reaches_its_reader(pair_setup, monkeypatch, baseline):
    args, game, train, pols = pair_setup
    args = replace(args, challenger_baseline=baseline, sampling=replace(args.sampling, max_new_tokens=64))  # mixed groups
    opts, scheds = {}, {}
    for k, p in pols.items():
        opts[k], scheds[k] = make_optimizer(p, replace(args, steps=4))
    seen, update, score = [], agon_grpo.grpo_update, game.score_round
    monkeypatch.setattr(agon_grpo, "grpo_update", lambda *a: seen.append(a[4]) or update(*a))
    monkeypatch.setattr(game, "score_round", lambda *a: seen.append(score(*a)) or seen[-1])
    m = agon_grpo.agon_step(0, args, game, train, pols, opts, scheds)
    played, _, adv_c = seen
    right = torch.tensor(played.drafter_correct).view(-1, args.group_size)
    adv_c = adv_c.view_as(right)
    rewards = torch.tensor([g.challenger_reward for g in played.games]).view_as(right)
    mixed = (right.any(-1) & ~right.all(-1))  # problems whose drafts were partly right
    assert mixed.sum() >= 2, "the fixture's step has too few problems with right and wrong drafts"
    plain = group_advantages(rewards)
    assert (plain * right).sum(-1)[mixed].abs().max() > 0.1, "no step signal: the test could not tell the baselines apart"
    within = [(adv_c * (right == k)).sum(-1)[mixed] for k in (False, True)]
    if baseline == "draft":  # centred within each kind of draft read
        assert all(torch.allclose(w, torch.zeros_like(w), atol=1e-3) for w in within)
    else:  # the paper's: one baseline per problem, so reading a right draft pays
        assert torch.allclose(adv_c.sum(-1), torch.zeros(len(right)), atol=1e-3)
        assert torch.equal(adv_c, plain)
    credit, read = m["credit/right_draft"], m["read/right_draft"]
    assert read == pytest.approx(float(right.float().mean()))
    pos = adv_c.clamp(min=0)
    assert credit == pytest.approx(float((pos * right).sum() / pos.sum()), abs=1e-6)


@pytest.mark.slow
def test_cli_end_to_end_outputs(tmp_path):
    r = cli("baselines.agon_grpo", tmp_path, "--steps", "2", "--group-size", "2", "--checkpoint-every", "0")
    assert r.returncode == 0, r.stderr[-2000:]
    run = tmp_path / "run"
    for f in ("metrics.jsonl", "summary.md", "summary.json", "win_rates.png", "rewards.png", "heldout.png", "config.json"):
        assert (run / f).exists(), f
    assert any(p.name.startswith("events") for p in (run / "tb").iterdir())
    assert f"outputs in {run}" in r.stdout and "(chosen on validation)" in r.stdout
    rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    assert rows[0]["step"] == 0 and "eval/A→B" in rows[0]  # the before-training evaluation
    rows = [r for r in rows if "step_time" in r]
    for key in ("win/A", "win/B", "conversion", "keep", "reward/A_drafter_mean", "length/drafter",
                "zero_std/challenger", "clip_frac", "kl", "step_time"):
        assert key in rows[0], key
    summary = json.loads((run / "summary.json").read_text())
    assert [r["method"] for r in summary["after"]] == ["A", "B", "A→B", "B→A"]


@pytest.mark.parametrize("extra, msg", [
    (("--model", "/no/such/model"), "--model: model '/no/such/model' is not"),
    (("--group-size", "1"), "--group-size must be at least 2"),
    (("--reward", "bogus"), "--reward"),
    (("--sampling.temperature", "hot"), "--sampling.temperature"),
    (("--model", "smollm2", "--lora-rank", "0"), "agon_grpo trains two LoRA adapters (rank >= 1)"),
    (("--lora-rank", "-1"), "--lora-rank must be at least 0"),
    (("--sampling.top-p", "0"), "--sampling.top-p must be in (0, 1] and --sampling.temperature above 0, got 0.0"),
    (("--sampling.temperature", "0"), "--sampling.top-p must be in (0, 1] and --sampling.temperature above 0"),
    (("--eval.top-p", "1.5"), "--eval.top-p must be in (0, 1] and --eval.temperature at least 0, got 1.5"),
])
def test_bad_config_fails_before_any_work(tmp_path, extra, msg):
    t = time.time()
    r = cli("baselines.agon_grpo", tmp_path, *extra)
    assert r.returncode != 0 and msg in r.stderr
    assert not (tmp_path / "run").exists()  # nothing was written
    assert time.time() - t < 60


@pytest.mark.parametrize("module", ["baselines.agon_grpo", "baselines.grpo"])
def test_a_fresh_run_on_an_earlier_runs_name_is_refused(tmp_path, module):
    """Its checkpoint would be resumed later under the new run's options: refused before any work, untouched."""
    (tmp_path / "run" / "checkpoint-000004").mkdir(parents=True)
    (tmp_path / "run" / "config.json").write_text('{"steps": 4}')
    r = cli(module, tmp_path, "--steps", "10")
    assert r.returncode != 0 and "already holds a run: --resume" in r.stderr and "--overwrite replaces it" in r.stderr
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == ["checkpoint-000004", "config.json"]
    assert (tmp_path / "run" / "config.json").read_text() == '{"steps": 4}'


