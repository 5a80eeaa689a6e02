"""The game's rules for many games at once: the one path the env and every learner share.

`AgonGame` holds a game's configuration (grader, reward scheme, summary channel, prompt
template, domain) and applies it to batches: prompts for both roles, the summary the
challenger reads, and the scored result of each game. The AEC env plays one game at a
time through it; learners play hundreds per step through the same object, so every
number in a table comes from the rules a user's own algorithm sees.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Sequence

from .grading import Grader, Verdict, default_grader
from .prompts import PromptTemplate, get_template
from .rules import SUMMARY_MODES, GameResult, RewardConfig, drafter_reward, score_games, summarize

if TYPE_CHECKING:  # pragma: no cover
    from problems.record import Problem


@dataclass
class AgonGame:
    """One configuration of the Agon game (see `agon_env.env` for what each option means)."""

    reward: str = "agon"
    format_weight: float = 0.5
    length_tiebreak: float = 0.0
    summary: str = "paper"
    template: str | PromptTemplate = "default"
    domain: str = "math"
    grader: Grader | None = field(default=None, repr=False)

    def __post_init__(self):
        if self.summary not in SUMMARY_MODES:
            raise ValueError(f"summary must be one of {SUMMARY_MODES}, got {self.summary!r}")
        self.rewards = RewardConfig(self.reward, self.format_weight, self.length_tiebreak)
        self.template = get_template(self.template)
        if self.grader is None:
            self.grader = default_grader()

    def summarize(self, draft: str, domain: str | None = None) -> str:
        """What the challenger reads of `draft` (withholding by `domain`, default the game's)."""
        return summarize(draft, self.summary, domain=domain or self.domain)

    def drafter_prompts(self, problems: Sequence["Problem"]) -> list[str]:
        return [self.template.drafter_prompt(p.question) for p in problems]

    def challenger_prompts(self, problems: Sequence["Problem"], drafts: Sequence[str]) -> list[str]:
        """The prompt each challenger reads: its problem and its own draft's summary, withheld by
        the problem's own domain (a code draft's program never reaches the challenger)."""
        return [self.template.challenger_prompt(p.question, self.summarize(d, p.domain)) for p, d in zip(problems, drafts)]

    def score(self, problems: Sequence["Problem"], drafts: Sequence[str], responses: Sequence[str]) -> list[GameResult]:
        """Grade every draft and response in one batch and pay both players."""
        return score_games(problems, drafts, responses, self.grader, self.rewards)

    def grade_solo(self, problems: Sequence["Problem"], completions: Sequence[str]) -> tuple[list[float], list[Verdict]]:
        """No rival (GRPO, evaluation): each completion is paid the drafter's reward 2c + λφ."""
        verdicts = self.grader.grade_batch(list(problems), list(completions))
        return [drafter_reward(v.correct, v.formatted, self.format_weight) for v in verdicts], verdicts
