"""
# Agon

| Import             | `from agon_env import env, parallel_env, raw_env` |
|--------------------|---------------------------------------------------|
| Actions            | Text (the full completion)                        |
| Parallel API       | Yes (turn-based)                                  |
| Agents             | `agents = ["model_a", "model_b"]`                 |
| Action space       | `Text(max_chars)`, any BMP character              |
| Observation space  | `Dict(role, problem, summary, prompt, messages)`  |

Two LLM policies play one problem per episode (arXiv:2607.07690). The **drafter** writes
a solution. The **challenger** reads the draft's **summary** (private `<think>` reasoning
dropped, final answer withheld) and writes its own. Both then terminate and are paid.

## Episode
1. `reset()` picks the next problem and the drafter (roles alternate across episodes).
2. The drafter observes the problem and acts with its completion text.
3. The challenger observes the problem and the summary, and acts with its completion.
4. Both completions are graded in one batch; both agents terminate with rewards.

## Observation
A dict:
- `role`: 0 for the drafter, 1 for the challenger;
- `problem`: the question text;
- `summary`: what the challenger is shown of the draft ("" for the drafter, and for the
  challenger before the draft exists);
- `prompt`: the ready prompt for this agent from the template ("" while it is not this
  agent's turn). The challenger's prompt always holds the whole problem: a summary too
  long for `max_chars` is shortened to the room the template and problem leave, in both
  `summary` and `prompt`, and `infos[challenger]["summary_clipped"]` says so. Where the
  template and problem alone exceed `max_chars`, the summary is empty and the prompt is
  cut at `max_chars`, as the drafter's is;
- `messages`: the same prompt as chat messages (a tuple of `{"role", "content"}` dicts).

There is deliberately no `"observation"` key: the text fields are `Text` spaces, and
PettingZoo's dtype check under that key only fits numpy arrays.

Text of any length and any unicode is accepted as an action. It is graded as given, up to
`max_chars` characters (a longer completion is cut there and `infos[agent]["clipped"]` is
set). Observations always fit their space: characters outside the Basic Multilingual
Plane are shown as U+FFFD and text past `max_chars` is cut.

## Summary channel (`summary=`)
- `"paper"` (default): `<think>…</think>` dropped (an unclosed `<think>` runs to the end;
  text before a lone `</think>` is reasoning too) and the final answer withheld (every
  `<answer>` block and every `\\boxed{}`, whatever `answer_format` is).
- `"with_answer"`: thinking dropped, answer kept.  `"full"`: the whole draft.
The challenger's prompt says which (a template's `disclosure` line for the mode).

## Answers (`answer_format=`)
How the grader finds a completion's final answer, always outside the thinking (a tag or box
inside `<think>`, or in an unclosed `<think>` of a cut-off completion, is reasoning, not an answer):
- `"tags_or_boxed"` (default): the last closed `<answer>…</answer>` block, else the last
  `\\boxed{…}` with balanced braces. Several boxes: the last one counts.
- `"tags"`: the `<answer>` block only (the paper's evaluation). `"boxed"`: the box only.
A completion with neither (for example one cut off mid-reasoning) has no answer: c = 0,
whatever numbers its reasoning holds. It sets the default grader; a grader you pass reads
answers its own way (`MathGrader(answer_format=...)`).

## Rewards (`reward=`, `format_weight` λ = 0.5, `length_tiebreak` λ′ = 0)
c ∈ {0,1} is correctness, φ ∈ {0,1} the format term (exactly one non-empty `<answer>` outside
the thinking, whatever `answer_format` is: a boxed-only answer can be right, but earns no φ).
- drafter: R(a) = 2c(a) + λφ(a)   (under `zero_sum`: −R(b))
- challenger, `"agon"`: 2c(b) + c(b)(1 − c(a)) + λφ(b)   (the conversion bonus)
- `"cooperative"`: 2c(b) + λφ(b);  `"margin"`: c(b) − c(a) + λφ(b);
  `"zero_sum"`: +1 / −1 / 0 by who out-solved whom.
- optional: R(b) += λ′·c(b)·c(a)·1[|b| < |a|] (not under `zero_sum`, which stays zero-sum). The env
  has no tokenizer, so it counts characters; `AgonGame.score_round(..., lengths=)` takes token
  counts, which `baselines.agon_grpo` passes (the paper's lengths are tokens).

`infos[agent]` after the episode holds `role`, `problem_id`, `correct`, `formatted`,
`answer`, `length`, `verdict`, `pass_fraction`, `reward`, `converted`, `winner` and
`clipped`; the challenger's also holds `summary_clipped` (set once the draft exists).

## Roles (`roles=`)
`"alternate"` (default): the drafter is `AGENTS[(s + k) % 2]` (`rules.drafter_seat`), where
`s` is the last reset's seed (0 if never seeded) and `k` the episodes since that reset. So
`reset(seed=0)` then unseeded resets alternate, and so does `reset(seed=ep)` in a loop;
`reset(seed)` alone fixes the episode. `"fixed"`: model_a always drafts (the paper's
ablation). `reset(options={"drafter": "model_b"})` pins the drafter for one episode, and
`reset(options={"problem": p})` plays problem `p` (a `Problem` or dict) next.

## Arguments
`problems` (iterable of `Problem` or dicts; default: bundled `arith` train split),
`grader` (default: math-verify / code sandbox by domain), `reward`, `format_weight`,
`length_tiebreak`, `summary`, `answer_format`, `roles`, `template` (`"default"`, `"code"`, `"compact"` or a
`PromptTemplate`; default by domain), `domain` (`"math"` or `"code"`), `max_chars` (default 16384),
`render_mode` (`"ansi"` or `"human"`).

## Errors
Stepping before `reset()`, a non-`str` action, or an action other than `None` for a
terminated agent raise with a message naming the agent. Stepping `raw_env` after the
episode is over (no agents left) raises too; `env()` only warns there, as PettingZoo's
`OrderEnforcingWrapper` does. `reset` rejects a seed that is not
a non-negative int, options that are not a dict and bad option values (unknown option
names are ignored with a warning, as PettingZoo's api_test expects). A call that raises
changes nothing: seed, random state, counters, problem order and observations stay as
they were.
"""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers
from pettingzoo.utils.conversions import turn_based_aec_to_parallel

from problems.record import Problem

from . import spaces
from ._aec import AGENTS, AgonAEC
from .game import AgonGame
from .grading import Grader
from .prompts import PromptTemplate

__all__ = ["AGENTS", "env", "parallel_env", "raw_env"]


def env(**kwargs) -> AECEnv:
    """The Agon AEC environment with PettingZoo's standard wrappers."""
    e = raw_env(**kwargs)
    return wrappers.OrderEnforcingWrapper(e)


def parallel_env(**kwargs):
    """Parallel API: each step, only the agent whose turn it is acts; others' actions are ignored."""
    return turn_based_aec_to_parallel(env(**kwargs))


def _as_problem(p: Any, where: str) -> Problem:
    if isinstance(p, Problem):
        return p
    if isinstance(p, dict):
        try:
            return Problem.from_dict(p)
        except ValueError as e:
            raise ValueError(f"{where}: {e}") from None
    raise TypeError(f"{where} must be a Problem or dict, got {type(p).__name__}")


class raw_env(AgonAEC):
    metadata = {"name": "agon_v0", "render_modes": ["ansi", "human"], "is_parallelizable": True}
    reset_options = ("problem",)

    def __init__(
        self,
        problems: Iterable[Problem | dict] | None = None,
        grader: Grader | None = None,
        reward: str = "agon",
        format_weight: float = 0.5,
        length_tiebreak: float = 0.0,
        summary: str = "paper",
        roles: str = "alternate",
        template: str | PromptTemplate | None = None,
        domain: str = "math",
        max_chars: int = 16384,
        render_mode: str | None = None,
        answer_format: str | None = None,
    ):
        if problems is None:
            from problems import load

            problems = load("arith", split="train")
        self.problems = [_as_problem(p, f"problems[{i}]") for i, p in enumerate(problems)]
        if not self.problems:
            raise ValueError("problems is empty; the env needs at least one problem")
        wrong = [p.id for p in self.problems if p.domain != domain]
        if wrong:
            raise ValueError(f"domain={domain!r} but {len(wrong)} problem(s) are not, e.g. {wrong[0]!r}")
        if max_chars < 1:
            raise ValueError(f"max_chars must be positive, got {max_chars}")
        template = template or ("code" if domain == "code" else "default")
        super().__init__(roles, render_mode, spaces.observation_space(max_chars), spaces.text_space(max_chars))
        self.game = AgonGame(reward, format_weight, length_tiebreak, summary, template, domain, grader, answer_format)
        self.max_chars = max_chars
        self._order: np.ndarray = np.arange(len(self.problems))
        self._cursor = len(self.problems)  # forces a shuffle on the first reset

    # ------------------------------------------------------------------ episode flow
    def _seeded(self):
        self._cursor = len(self.problems)

    def _check_option(self, key, value):
        problem = _as_problem(value, "options['problem']")
        if problem.domain != self.game.domain:
            raise ValueError(f"options['problem'] {problem.id!r} is a {problem.domain} problem; "
                             f"this env plays {self.game.domain}")
        return problem

    def _begin(self, options):
        problem = options.get("problem")
        if problem is None:
            if self._cursor >= len(self.problems):
                self._order, self._cursor = self.np_random.permutation(len(self.problems)), 0
            problem = self.problems[self._order[self._cursor]]
            self._cursor += 1
        self.problem = problem
        self.draft: str | None = None
        self.response: str | None = None
        self.summary = ""
        self._clipped: dict[str, bool] = {}
        return {"problem_id": problem.id}

    def observe(self, agent):
        is_drafter = agent == self.drafter
        if is_drafter:
            prompt = self.game.drafter_prompts([self.problem])[0] if self.draft is None else ""
        else:
            prompt = "" if self.draft is None or self.response is not None else \
                self.game.challenger_prompt(self.problem.question, self.summary)
        fit = lambda s: spaces.fit_text(s, self.max_chars)  # noqa: E731
        prompt = fit(prompt)
        return {
            "role": np.int64(0 if is_drafter else 1),
            "problem": fit(self.problem.question),
            "summary": "" if is_drafter else fit(self.summary),
            "prompt": prompt,
            "messages": tuple({"role": m["role"], "content": fit(m["content"])} for m in self.game.template.messages(prompt))
            if prompt else (),
        }

    def _check_action(self, agent, action):
        if not isinstance(action, str):
            raise TypeError(f"action for {agent!r} must be str, got {type(action).__name__}")
        return action

    def _act(self, agent, action):
        clipped, action = len(action) > self.max_chars, action[: self.max_chars]
        if agent == self.drafter:
            self.draft, self._clipped[agent] = action, clipped
            summary = self.game.summarize(action, self.problem.domain)
            # The problem comes after the summary in the templates: shorten the summary, not the problem.
            room = self.max_chars - len(self.game.challenger_prompt(self.problem.question, ""))
            self.summary = summary[:max(room, 0)]
            self.infos[self.challenger]["summary_clipped"] = len(self.summary) < len(summary)
            self.agent_selection = self.challenger
            return None
        result = self.game.score([self.problem], [self.draft], [action])[0]  # may raise: nothing changed yet
        self.response, self._clipped[agent] = action, clipped
        return result, {a: {"clipped": c} for a, c in self._clipped.items()}

    # ------------------------------------------------------------------ rendering
    def _render_text(self) -> str:
        lines = [f"Problem {self.problem.id}: {self.problem.question}",
                 f"Drafter {self.drafter}:", _indent(self.draft if self.draft is not None else "(waiting)")]
        if self.draft is not None:
            lines += ["Summary shown to the challenger:", _indent(self.summary or "(empty)")]
        lines += [f"Challenger {self.challenger}:", _indent(self.response if self.response is not None else "(waiting)")]
        if self.result is not None:
            r = self.result
            for agent, role, i, reward in ((self.drafter, "drafter", r.drafter_info, r.drafter_reward),
                                           (self.challenger, "challenger", r.challenger_info, r.challenger_reward)):
                lines.append(f"{agent} ({role}): {i['verdict']}, answer={i['answer']!r}, "
                             f"format={int(i['formatted'])}, reward={reward:+.2f}")
            lines.append(f"Reference answer: {self.problem.answer}")
        return "\n".join(lines)


def _indent(text: str, width: int = 400) -> str:
    text = text if len(text) <= width else text[:width] + f"… [{len(text) - width} more chars]"
    return "\n".join("    " + line for line in text.splitlines()) or "    "
