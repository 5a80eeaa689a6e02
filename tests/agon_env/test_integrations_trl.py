"""TRL reward functions (issue 17, item 1): parity with `AgonGame`, and the columns they need.
`tests/examples/test_trl_grpo.py` runs them inside TRL's own `GRPOTrainer`."""

from __future__ import annotations

import itertools
import json

import pytest

from agon_env.game import AgonGame
from agon_env.grading import MathGrader
from agon_env.integrations import trl as agon_trl
from agon_env.integrations.trl import AgonRewards, challenger_dataset, completion_text, drafter_dataset
from agon_env.rules import REWARD_SCHEMES, game_rates
from problems import load
from problems.record import Problem


@pytest.fixture(scope="module")
def grader():
    g = MathGrader(workers=1)
    yield g
    g.close()


def _variants(p: Problem) -> list[str]:
    """Right, wrong, right but boxed (no φ), no answer, and right but longer: every (c, φ, length) case."""
    return [p.solution, p.solution.replace(f"<answer>{p.answer}</answer>", "<answer>-999</answer>"),
            p.solution.split("<answer>")[0] + f"\\boxed{{{p.answer}}}", "<think>cut off mid-reasoning",
            "<think>long</think>" + "checked twice. " * 5 + p.solution]


@pytest.fixture(scope="module")
def games():
    """Every draft variant against every response variant, on two hard arith problems and a fraction, plus LaTeX
    answers that only math-verify (the grader's worker path, not its exact fast path) can decide."""
    frac = Problem(id="frac", question="1/2+1/4", answer="3/4", solution="<think>2/4+1/4</think>d4<answer>3/4</answer>")
    problems = load("arith", split="train", tier="hard")[:2] + [frac]
    rows = [(p, d, r) for p in problems for d, r in itertools.product(_variants(p), _variants(p))]
    latex = "<think>2/4+1/4</think>d4<answer>\\frac{3}{4}</answer>"
    rows += [(frac, latex, "<answer>1</answer>"), (frac, "<answer>1</answer>", latex), (frac, latex, latex)]
    return [list(x) for x in zip(*rows)]


def _trl_call(fn, ds, completions, generations: int = 2, **extra):
    """Call `fn` as GRPOTrainer._calculate_rewards does: each row repeated per generation, every column but
    `prompt` as a keyword list, plus the trainer's own keywords."""
    rows = [ds[i] for i in range(len(ds)) for _ in range(generations)]
    kwargs = {k: [row[k] for row in rows] for k in rows[0] if k not in ("prompt", "completion", "completion_ids")}
    logged = {}
    out = fn(prompts=[row["prompt"] for row in rows], completions=[c for c in completions for _ in range(generations)],
             completion_ids=[[1, 2]] * len(rows), trainer_state=None, log_extra=lambda c, v: None,
             log_metric=logged.__setitem__, **kwargs, **extra)
    return out[::generations], logged


@pytest.mark.parametrize("scheme", REWARD_SCHEMES)
def test_challenger_reward_equals_the_env_pay(games, grader, scheme):
    problems, drafts, responses = games
    game = AgonGame(reward=scheme, length_tiebreak=0.25, template="compact", grader=grader)
    want = game.score(problems, drafts, responses)
    got, logged = _trl_call(AgonRewards(game).challenger_reward, challenger_dataset(problems, drafts, game), responses)
    assert got == [r.challenger_reward for r in want]
    assert len(set(got)) >= 3  # bonus, format, tiebreak and wrong answers: the batch is not one value
    rates = game_rates(want)
    assert logged == {f"agon/{k}": pytest.approx(rates[v]) for k, v in [
        ("pass", "challenger_pass"), ("conversion", "conversion"), ("keep", "keep"),
        ("win_challenger", "win_challenger"), ("win_drafter", "win_drafter")]}


@pytest.mark.parametrize("scheme", [s for s in REWARD_SCHEMES if s != "zero_sum"])
def test_drafter_reward_equals_the_env_pay_and_the_solo_grade(games, grader, scheme):
    problems, drafts, responses = games
    game = AgonGame(reward=scheme, template="compact", grader=grader)
    got, _ = _trl_call(AgonRewards(game).drafter_reward, drafter_dataset(problems, game), drafts)
    assert got == [r.drafter_reward for r in game.score(problems, drafts, responses)]
    assert got == game.grade_solo(problems, drafts)[0]
    assert len(set(got)) == 4  # 2c + λφ takes all four values here


def test_score_round_parity_with_several_readers_per_draft(games, grader):
    """Responses reading a shared draft (the round API): one dataset row per (problem, draft read)."""
    problems, drafts, responses = games
    game = AgonGame(template="compact", grader=grader)
    read = [i - i % 5 for i in range(len(responses))]
    played = game.score_round(problems, drafts, responses, read)
    ds = challenger_dataset(problems, [drafts[j] for j in read], game)
    assert _trl_call(AgonRewards(game).challenger_reward, ds, responses)[0] == [g.challenger_reward for g in played.games]


def test_conversational_and_answer_only_inputs_give_the_same_rewards(games, grader):
    problems, drafts, responses = games
    game = AgonGame(template="compact", grader=grader)
    rewards = AgonRewards(game)
    plain, _ = _trl_call(rewards.challenger_reward, challenger_dataset(problems, drafts, game), responses)
    chat_ds = challenger_dataset(problems, drafts, game, conversational=True)
    assert chat_ds[0]["prompt"] == [{"role": "user", "content": game.challenger_prompts(problems[:1], drafts[:1])[0]}]
    as_messages = [[{"role": "assistant", "content": r}] for r in responses]
    as_blocks = [[{"role": "assistant", "content": [{"type": "text", "text": r[:3]}, {"type": "text", "text": r[3:]}]}]
                 for r in responses]
    assert _trl_call(rewards.challenger_reward, chat_ds, as_messages)[0] == plain
    assert _trl_call(rewards.challenger_reward, chat_ds, as_blocks)[0] == plain
    # A dataset of one's own with only a reference answer grades math the same way.
    own = drafter_dataset(problems, game).remove_columns(["problem"])
    assert _trl_call(rewards.drafter_reward, own, drafts)[0] == game.grade_solo(problems, drafts)[0]


def test_the_draft_columns_decide_the_conversion_bonus(games, grader):
    """The comparison can fail: a draft verdict flipped in the dataset moves the reward off the env's."""
    problems, drafts, responses = games
    game = AgonGame(template="compact", grader=grader)
    ds = challenger_dataset(problems, drafts, game)
    flipped = ds.map(lambda row: {"draft_correct": not row["draft_correct"]})
    got, _ = _trl_call(AgonRewards(game).challenger_reward, flipped, responses)
    env = game.score(problems, drafts, responses)
    changed = [g != r.challenger_reward for g, r in zip(got, env)]
    assert changed == [r.challenger_info["correct"] for r in env] and any(changed)  # the bonus moves iff c(b) = 1


def test_module_functions_play_the_default_game(games, grader, monkeypatch):
    problems, drafts, responses = games
    game = AgonGame(grader=grader)
    monkeypatch.setattr(agon_trl, "_default", lambda: AgonRewards(game))
    ds = challenger_dataset(problems, drafts)
    assert ds[0]["prompt"] == AgonGame().challenger_prompts(problems[:1], drafts[:1])[0]
    assert _trl_call(agon_trl.challenger_reward, ds, responses)[0] == [r.challenger_reward for r in game.score(problems, drafts, responses)]
    assert _trl_call(agon_trl.drafter_reward, drafter_dataset(problems), drafts)[0] == game.grade_solo(problems, drafts)[0]
    assert "solution" not in json.loads(ds[0]["problem"])  # the worked solution never enters a trainer's data


# ---------------------------------------------------------------- bad input
def test_missing_columns_name_the_column_and_the_builder(grader):
    rewards = AgonRewards(AgonGame(grader=grader))
    with pytest.raises(ValueError, match=r"'problem'.*'answer'.*got columns \['draft_correct'\].*drafter_dataset\(problems, game\)"):
        rewards.drafter_reward(["p"], ["<answer>1</answer>"], draft_correct=[True], trainer_state=None, log_metric=print)
    for missing in ("draft_correct", "draft_formatted", "draft_length"):
        cols = {"answer": ["2"], "draft_correct": [True], "draft_formatted": [True], "draft_length": [5]}
        del cols[missing]
        with pytest.raises(ValueError, match=rf"needs the dataset column '{missing}'.*challenger_dataset\(problems, drafts, game\)"):
            rewards.challenger_reward(["p"], ["<answer>2</answer>"], **cols)
    with pytest.raises(ValueError, match="column 'answer' has 1 values for 2 completions"):
        rewards.drafter_reward(["p", "q"], ["a", "b"], answer=["2"])


def test_other_bad_input(grader):
    with pytest.raises(ValueError, match="zero_sum.*drafter is paid by its reader"):
        AgonRewards(AgonGame(reward="zero_sum", grader=grader)).drafter_reward(["p"], ["<answer>2</answer>"], answer=["2"])
    with pytest.raises(ValueError, match="one draft per problem, got 2 problems and 1 drafts"):
        challenger_dataset([Problem(id="a", question="q", answer="1")] * 2, ["d"], AgonGame(grader=grader))
    with pytest.raises(TypeError, match="must be a str or a list of message dicts"):
        completion_text({"content": "x"})
    assert completion_text([{"role": "assistant", "content": "a"}, {"role": "assistant", "content": "b"}]) == "b"
