"""The game's rules for many games at once: the one path the env and every learner share.

`AgonGame` holds a game's configuration (grader, reward scheme, summary channel, prompt
template, domain, answer format) and applies it to batches: prompts for both roles, the
summary the challenger reads, and the scored result of each game. The AEC env plays one
game at a time through it; learners play hundreds per step through the same object, so
every number in a table comes from the rules a user's own algorithm sees.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from numbers import Integral
from typing import TYPE_CHECKING, Sequence

from .grading import Grader, Verdict, default_grader
from .prompts import PromptTemplate, get_template
from .rules import SUMMARY_MODES, GameResult, RewardConfig, check_answer_format, drafter_reward, pay, summarize

if TYPE_CHECKING:  # pragma: no cover
    from problems.record import Problem


def _check_lengths(**named: Sequence) -> None:
    if len({len(v) for v in named.values()}) > 1:
        got = ", ".join(f"{len(v)} {k}" for k, v in named.items())
        raise ValueError(f"need equal lengths, got {got}")


def score_games(
    problems: Sequence["Problem"],
    drafts: Sequence[str],
    responses: Sequence[str],
    grader: Grader,
    rewards: RewardConfig = RewardConfig(),
) -> list[GameResult]:
    """Grade all drafts and responses in one batch and pay both players of each game."""
    _check_lengths(problems=problems, drafts=drafts, responses=responses)
    verdicts = grader.grade_batch(list(problems) * 2, list(drafts) + list(responses))
    n = len(problems)
    return [pay(rewards, verdicts[i].as_info(), verdicts[n + i].as_info()) for i in range(n)]


@dataclass(frozen=True)
class Round:
    """One round of games in which several responses may read the same draft.

    games: one per response, against the draft it read. drafter_rewards and
    drafter_correct: one per draft.
    """

    games: list[GameResult]
    drafter_rewards: list[float]
    drafter_correct: list[bool]


@dataclass
class AgonGame:
    """One configuration of the Agon game (see `agon_env.env` for what each option means).

    `answer_format` ("tags", "boxed" or "tags_or_boxed") sets how the default grader reads
    answers; None means the grader's own way (the default graders: "tags_or_boxed"). A
    grader you pass reads answers its own way: give it `answer_format` instead, or the same
    value here.
    """

    reward: str = "agon"
    format_weight: float = 0.5
    length_tiebreak: float = 0.0
    summary: str = "paper"
    template: str | PromptTemplate = "default"
    domain: str = "math"
    grader: Grader | None = field(default=None, repr=False)
    answer_format: str | None = None

    def __post_init__(self):
        if self.summary not in SUMMARY_MODES:
            raise ValueError(f"summary must be one of {SUMMARY_MODES}, got {self.summary!r}")
        self.rewards = RewardConfig(self.reward, self.format_weight, self.length_tiebreak)
        self.template = get_template(self.template)
        self.challenger_prompt("", "")  # a template that cannot say what this summary mode shows fails here
        if self.answer_format is not None:
            check_answer_format(self.answer_format)
        if self.grader is None:
            self.grader = default_grader(self.answer_format or "tags_or_boxed")
        own = getattr(self.grader, "answer_format", None)
        if self.answer_format is not None and own != self.answer_format:
            raise ValueError(f"answer_format={self.answer_format!r} but the grader reads {own!r}; "
                             f"pass answer_format to the grader, or leave it None here")
        self.answer_format = own

    def summarize(self, draft: str, domain: str | None = None) -> str:
        """What the challenger reads of `draft` (withholding by `domain`, default the game's)."""
        return summarize(draft, self.summary, domain=domain or self.domain)

    def drafter_prompts(self, problems: Sequence["Problem"]) -> list[str]:
        return [self.template.drafter_prompt(p.question) for p in problems]

    def challenger_prompt(self, question: str, summary: str) -> str:
        """The challenger's prompt for `question` and a summary made by this game's summary mode."""
        return self.template.challenger_prompt(question, summary, self.summary)

    def challenger_prompts(self, problems: Sequence["Problem"], drafts: Sequence[str]) -> list[str]:
        """The prompt each challenger reads: its problem and its own draft's summary, withheld by
        the problem's own domain (a code draft's program never reaches the challenger)."""
        return [self.challenger_prompt(p.question, self.summarize(d, p.domain)) for p, d in zip(problems, drafts)]

    def score(self, problems: Sequence["Problem"], drafts: Sequence[str], responses: Sequence[str]) -> list[GameResult]:
        """Grade every draft and response in one batch and pay both players."""
        return score_games(problems, drafts, responses, self.grader, self.rewards)

    def grade_solo(self, problems: Sequence["Problem"], completions: Sequence[str]) -> tuple[list[float], list[Verdict]]:
        """No rival (GRPO, evaluation): each completion is paid the drafter's reward 2c + λφ."""
        verdicts = self.grader.grade_batch(list(problems), list(completions))
        return [drafter_reward(v.correct, v.formatted, self.format_weight) for v in verdicts], verdicts

    def score_round(self, problems: Sequence["Problem"], drafts: Sequence[str], responses: Sequence[str],
                    read: Sequence[int] | None = None,
                    lengths: tuple[Sequence[int], Sequence[int]] | None = None) -> Round:
        """Grade a round and pay everyone, including drafts no response read.

        `problems[j]` is draft j's problem; response i read draft `read[i]` (default i) and
        answers its problem. Each response plays a game against the draft it read. A draft
        that was read is paid by the scheme through the game of the first response that read
        it; an unread draft (the shared-opponent ablation) is paid GRPO's 2c + λφ. Every
        text is graded once, in one batch. `lengths` (each draft's, each response's) is what
        the length tiebreak compares, e.g. sampled tokens as the paper counts them; without
        it, the texts' characters (the grader's `length`).
        """
        _check_lengths(problems=problems, drafts=drafts)
        read = list(range(len(responses))) if read is None else list(read)
        _check_lengths(responses=responses, read=read)
        if lengths is not None:
            _check_lengths(drafts=drafts, draft_lengths=lengths[0])
            _check_lengths(responses=responses, response_lengths=lengths[1])
        bad = [j for j in read if not isinstance(j, Integral) or not 0 <= j < len(drafts)]
        if bad:
            raise ValueError(f"read must hold draft indices in 0..{len(drafts) - 1}, got {bad[0]!r}")
        verdicts = self.grader.grade_batch(list(problems) + [problems[j] for j in read], list(drafts) + list(responses))
        own, answers = verdicts[:len(drafts)], verdicts[len(drafts):]
        own_info, answer_info = [v.as_info() for v in own], [v.as_info() for v in answers]
        if lengths is not None:
            for info, n in zip(own_info + answer_info, [*lengths[0], *lengths[1]]):
                info["length"] = int(n)
        games = [pay(self.rewards, own_info[j], a) for j, a in zip(read, answer_info)]
        first_reader: dict[int, int] = {}
        for i, j in enumerate(read):
            first_reader.setdefault(j, i)
        drafter_rewards = [games[first_reader[j]].drafter_reward if j in first_reader
                           else drafter_reward(v.correct, v.formatted, self.format_weight) for j, v in enumerate(own)]
        return Round(games, drafter_rewards, [v.correct for v in own])
