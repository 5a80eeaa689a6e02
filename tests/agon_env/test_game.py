"""AgonGame: batch scoring, the one pay rule for rounds (shared opponent included), answer formats."""

import random

import pytest

from agon_env.game import AgonGame, Round, score_games
from agon_env.grading import ExactMatchGrader, MathGrader, default_grader
from agon_env.rules import REWARD_SCHEMES, game_rates
from problems.record import Problem

P = Problem(id="p", question="1+1?", answer="2")
RIGHT, WRONG = "<answer>2</answer>", "<answer>3</answer>"


def test_score_games_pays_conversion_bonus():
    res = score_games([P] * 4, [WRONG, WRONG, RIGHT, RIGHT], [RIGHT, WRONG, RIGHT, WRONG], ExactMatchGrader())
    assert [r.challenger_reward for r in res] == [3.5, 0.5, 2.5, 0.5]
    assert [r.drafter_reward for r in res] == [0.5, 0.5, 2.5, 2.5]
    assert [r.converted for r in res] == [True, False, False, False]
    assert [r.winner for r in res] == ["challenger", None, None, "drafter"]
    with pytest.raises(ValueError, match="equal lengths, got 1 problems, 2 drafts, 1 responses"):
        score_games([P], [RIGHT, RIGHT], [RIGHT], ExactMatchGrader())


def _old_agon_step_pay(game, reps, drafts, responses, shared, N):
    """What baselines/agon_grpo.py's agon_step computed before score_round existed."""
    shown = [drafts[i - i % N] for i in range(len(drafts))] if shared else drafts
    seen = game.score(reps, shown, responses)
    if shared:
        r_own, verdicts = game.grade_solo(reps, drafts)
        drafter_pass = sum(v.correct for v in verdicts) / len(verdicts)
    else:
        r_own, drafter_pass = [g.drafter_reward for g in seen], None
    rates = game_rates(seen)
    return seen, r_own, rates["drafter_pass"] if drafter_pass is None else drafter_pass


@pytest.mark.parametrize("scheme, shared", [(s, sh) for s in REWARD_SCHEMES for sh in (False, True)
                                             if not (sh and s == "zero_sum")])  # agon_grpo refuses that pair
def test_score_round_is_what_the_learner_computed(scheme, shared):
    rng = random.Random(0)
    problems = [Problem(id=str(k), question="q", answer=str(k)) for k in range(5)]
    texts = lambda k: [f"<answer>{k}</answer>", f"<answer>{k + 1}</answer>", f"\\boxed{{{k}}}", "no answer",  # noqa: E731
                       f"<think>x</think><answer>{k}</answer>", f"<answer>{k}</answer><answer>{k}</answer>"]
    game = AgonGame(reward=scheme, length_tiebreak=0.25, grader=ExactMatchGrader())
    N = 4
    reps = [p for p in problems for _ in range(N)]
    drafts = [rng.choice(texts(int(p.id))) for p in reps]
    responses = [rng.choice(texts(int(p.id))) for p in reps]
    read = [i - i % N for i in range(len(drafts))] if shared else None
    played = game.score_round(reps, drafts, responses, read)
    games, r_own, drafter_pass = _old_agon_step_pay(game, reps, drafts, responses, shared, N)
    assert isinstance(played, Round) and played.games == games
    assert played.drafter_rewards == r_own
    assert sum(played.drafter_correct) / len(played.drafter_correct) == drafter_pass


def test_score_round_pays_a_read_draft_through_its_first_game():
    game = AgonGame(reward="zero_sum", grader=ExactMatchGrader())
    played = game.score_round([P, P], [WRONG, RIGHT], [RIGHT, WRONG, WRONG], read=[0, 0, 1])
    assert [g.challenger_reward for g in played.games] == [1.0, 0.0, -1.0]
    assert played.drafter_rewards == [-1.0, 1.0]  # draft 0 by its first game (not the tie), draft 1 by its own
    unread = game.score_round([P, P], [WRONG, RIGHT], [RIGHT], read=[0])
    assert unread.drafter_rewards == [-1.0, 2.5] and unread.drafter_correct == [False, True]


def test_the_length_tiebreak_compares_the_lengths_given_else_characters():
    """A learner passes sampled tokens: an answer longer in characters but shorter in tokens
    than the right draft it read earns λ′, and one longer in tokens does not."""
    game = AgonGame(length_tiebreak=0.25, grader=ExactMatchGrader())
    long_draft, longer_answer = "<think>x</think>" + RIGHT, "<think>xxxxxxxx</think>" + RIGHT
    by_chars = game.score_round([P, P], [long_draft, long_draft], [longer_answer, RIGHT])
    assert [g.challenger_reward for g in by_chars.games] == [2.5, 2.75]
    by_tokens = game.score_round([P, P], [long_draft, long_draft], [longer_answer, RIGHT], lengths=([9, 9], [4, 12]))
    assert [g.challenger_reward for g in by_tokens.games] == [2.75, 2.5]
    with pytest.raises(ValueError, match="equal lengths, got 2 responses, 1 response_lengths"):
        game.score_round([P, P], [RIGHT, RIGHT], [RIGHT, RIGHT], lengths=([1, 1], [1]))


@pytest.mark.parametrize("kw, msg", [
    ({"read": [0, 2]}, r"read must hold draft indices in 0\.\.1, got 2"),
    ({"read": [0]}, "equal lengths, got 2 responses, 1 read"),
    ({"problems": [P]}, "equal lengths, got 1 problems, 2 drafts"),
])
def test_score_round_errors(kw, msg):
    args = {"problems": [P, P], "drafts": [RIGHT, WRONG], "responses": [RIGHT, RIGHT], **kw}
    with pytest.raises(ValueError, match=msg):
        AgonGame(grader=ExactMatchGrader()).score_round(**args)


def test_answer_format_threads_to_the_grader():
    boxed = "<think>t</think>The sum is \\boxed{2}."
    for fmt, ok in (("tags", False), ("boxed", True), ("tags_or_boxed", True)):
        game = AgonGame(grader=ExactMatchGrader(fmt))
        assert game.answer_format == fmt
        assert game.score([P], [boxed], [RIGHT])[0].drafter_info["correct"] is ok
        assert game.grade_solo([P], [boxed])[1][0].formatted is False  # φ needs the tags
    assert AgonGame(grader=ExactMatchGrader("boxed"), answer_format="boxed").answer_format == "boxed"
    with pytest.raises(ValueError, match="answer_format='tags' but the grader reads 'boxed'"):
        AgonGame(grader=ExactMatchGrader("boxed"), answer_format="tags")
    with pytest.raises(ValueError, match="answer_format must be one of"):
        AgonGame(answer_format="latex")


def test_default_grader_per_answer_format():
    assert AgonGame().answer_format == "tags_or_boxed"
    g = AgonGame(answer_format="tags").grader
    assert g is default_grader("tags") and g is not default_grader() and g.answer_format == "tags"
    assert isinstance(g.graders["math"], MathGrader) and g.graders["code"] is default_grader().graders["code"]


def test_summary_withholds_boxes_and_tags_whatever_the_format():
    draft = "<think>2</think>Added. \\boxed{2} <answer>2</answer>"
    for fmt in ("tags", "boxed"):
        game = AgonGame(grader=ExactMatchGrader(fmt))
        assert game.summarize(draft) == "Added."
        assert "Added." in game.challenger_prompts([P], [draft])[0]


@pytest.mark.parametrize("template", ["default", "code"])
def test_the_challenger_is_told_what_its_summary_mode_shows(template):
    draft = "<think>one and one</think>Added. <answer>2</answer>"
    said = {}
    for mode in ("paper", "with_answer", "full"):
        (prompt,) = AgonGame(summary=mode, template=template, grader=ExactMatchGrader()).challenger_prompts([P], [draft])
        said[mode] = prompt.split("\n")[0]
        assert ("<answer>2</answer>" in prompt) == (mode != "paper") and ("one and one" in prompt) == (mode == "full")
    assert "hidden" in said["paper"] and ("answer" in said["paper"] or "code" in said["paper"])
    assert "thinking is hidden" in said["with_answer"] and "are below" in said["with_answer"]
    assert "hidden" not in said["full"] and "thinking included" in said["full"]


def test_a_template_that_cannot_say_what_a_mode_shows_is_refused():
    from agon_env.prompts import PromptTemplate

    mine = PromptTemplate("mine", "{question}", "{disclosure} {summary} {question}", disclosure=(("paper", "hidden"),))
    assert AgonGame(template=mine).challenger_prompt("q", "s") == "hidden s q"
    with pytest.raises(ValueError, match="template 'mine' has no disclosure for summary mode 'full'"):
        AgonGame(template=mine, summary="full")
    plain = PromptTemplate("plain", "{question}", "{summary}|{question}")  # no {disclosure}: as before
    assert AgonGame(template=plain, summary="full").challenger_prompt("q", "s") == "s|q"
