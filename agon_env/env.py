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
  agent's turn);
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
  `<answer>` block and `\\boxed{}`).
- `"with_answer"`: thinking dropped, answer kept.  `"full"`: the whole draft.

## Rewards (`reward=`, `format_weight` λ = 0.5, `length_tiebreak` λ′ = 0)
c ∈ {0,1} is correctness, φ ∈ {0,1} the format term (exactly one non-empty `<answer>`).
- drafter: R(a) = 2c(a) + λφ(a)   (under `zero_sum`: −R(b))
- challenger, `"agon"`: 2c(b) + c(b)(1 − c(a)) + λφ(b)   (the conversion bonus)
- `"cooperative"`: 2c(b) + λφ(b);  `"margin"`: c(b) − c(a) + λφ(b);
  `"zero_sum"`: +1 / −1 / 0 by who out-solved whom.
- optional: R(b) += λ′·c(b)·c(a)·1[|b| < |a|] (lengths in characters).

`infos[agent]` after the episode holds `role`, `problem_id`, `correct`, `formatted`,
`answer`, `length`, `verdict`, `pass_fraction`, `reward`, `converted` and `winner`.

## Roles (`roles=`)
`"alternate"` (default): model_a drafts on even episodes, model_b on odd ones, counted from
the last seeded reset. `"fixed"`: model_a always drafts (the paper's ablation).
`reset(options={"drafter": "model_b"})` pins the drafter for one episode, and
`reset(options={"problem": p})` plays problem `p` next.

## Arguments
`problems` (iterable of `Problem` or dicts; default: bundled `arith` train split),
`grader` (default: math-verify / code sandbox by domain), `reward`, `format_weight`,
`length_tiebreak`, `summary`, `roles`, `template` (`"default"`, `"code"`, `"compact"` or a
`PromptTemplate`; default by domain), `domain` (`"math"` or `"code"`), `max_chars` (default 16384),
`render_mode` (`"ansi"` or `"human"`).

## Errors
Stepping before `reset()`, a non-`str` action, or an action other than `None` for a
terminated agent raise with a message naming the agent; the env is left as it was.
"""

from __future__ import annotations

import warnings
from typing import Any, Iterable

import numpy as np
from pettingzoo import AECEnv
from pettingzoo.utils import AgentSelector, wrappers
from pettingzoo.utils.conversions import turn_based_aec_to_parallel

from problems.record import Problem

from . import spaces
from .game import AgonGame
from .grading import Grader
from .prompts import PromptTemplate
from .rules import drafter_seat

AGENTS = ("model_a", "model_b")
ROLES = ("drafter", "challenger")


def env(**kwargs) -> AECEnv:
    """The Agon AEC environment with PettingZoo's standard wrappers."""
    e = raw_env(**kwargs)
    return wrappers.OrderEnforcingWrapper(e)


def parallel_env(**kwargs):
    """Parallel API: each step, only the agent whose turn it is acts; others' actions are ignored."""
    return turn_based_aec_to_parallel(env(**kwargs))


def _as_problem(p: Any, i: int) -> Problem:
    if isinstance(p, Problem):
        return p
    if isinstance(p, dict):
        try:
            return Problem.from_dict(p)
        except ValueError as e:
            raise ValueError(f"problems[{i}]: {e}") from None
    raise TypeError(f"problems[{i}] must be a Problem or dict, got {type(p).__name__}")


class raw_env(AECEnv):
    metadata = {"name": "agon_v0", "render_modes": ["ansi", "human"], "is_parallelizable": True}

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
    ):
        super().__init__()
        if problems is None:
            from problems import load

            problems = load("arith", split="train")
        self.problems = [_as_problem(p, i) for i, p in enumerate(problems)]
        if not self.problems:
            raise ValueError("problems is empty; the env needs at least one problem")
        wrong = [p.id for p in self.problems if p.domain != domain]
        if wrong:
            raise ValueError(f"domain={domain!r} but {len(wrong)} problem(s) are not, e.g. {wrong[0]!r}")
        if roles not in ("alternate", "fixed"):
            raise ValueError(f"roles must be 'alternate' or 'fixed', got {roles!r}")
        if render_mode not in (None, *self.metadata["render_modes"]):
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']} or None, got {render_mode!r}")
        if max_chars < 1:
            raise ValueError(f"max_chars must be positive, got {max_chars}")
        template = template or ("code" if domain == "code" else "default")
        self.game = AgonGame(reward, format_weight, length_tiebreak, summary, template, domain, grader)
        self.roles = roles
        self.max_chars, self.render_mode = max_chars, render_mode

        self.possible_agents = list(AGENTS)
        self._obs_space = spaces.observation_space(max_chars)
        self._act_space = spaces.text_space(max_chars)
        self._episode = 0
        self._order: np.ndarray = np.arange(len(self.problems))
        self._cursor = len(self.problems)  # forces a shuffle on the first reset
        self.np_random = np.random.default_rng()

    def observation_space(self, agent):
        return self._obs_space

    def action_space(self, agent):
        return self._act_space

    # ------------------------------------------------------------------ episode flow
    def reset(self, seed: int | None = None, options: dict | None = None):
        options = dict(options or {})
        if seed is not None:
            self.np_random = np.random.default_rng(seed)
            self._episode, self._cursor = 0, len(self.problems)
        drafter = options.pop("drafter", None)
        problem = options.pop("problem", None)
        if options:
            warnings.warn(f"agon reset: ignoring unknown options {sorted(options)}", stacklevel=2)
        if drafter is not None and drafter not in AGENTS:
            raise ValueError(f"options['drafter'] must be one of {AGENTS}, got {drafter!r}")
        if problem is not None:
            problem = _as_problem(problem, 0)
            if problem.domain != self.game.domain:
                raise ValueError(f"options['problem'] {problem.id!r} is a {problem.domain} problem; this env plays {self.game.domain}")
        else:
            if self._cursor >= len(self.problems):
                self._order, self._cursor = self.np_random.permutation(len(self.problems)), 0
            problem = self.problems[self._order[self._cursor]]
            self._cursor += 1
        if drafter is None:
            drafter = AGENTS[drafter_seat(self._episode, self.roles == "fixed")]
        self._episode += 1

        self.problem = problem
        self.drafter = drafter
        self.challenger = AGENTS[1 - AGENTS.index(drafter)]
        self.draft: str | None = None
        self.response: str | None = None
        self.summary = ""
        self.result = None
        self.agents = self.possible_agents[:]
        self.rewards = {a: 0.0 for a in self.agents}
        self._cumulative_rewards = {a: 0.0 for a in self.agents}
        self.terminations = {a: False for a in self.agents}
        self.truncations = {a: False for a in self.agents}
        self.infos = {a: {"role": self.role(a), "problem_id": problem.id} for a in self.agents}
        self._selector = AgentSelector([self.drafter, self.challenger])
        self.agent_selection = self._selector.reset()

    def role(self, agent: str) -> str:
        return "drafter" if agent == self.drafter else "challenger"

    def observe(self, agent):
        is_drafter = agent == self.drafter
        if is_drafter:
            prompt = self.game.drafter_prompts([self.problem])[0] if self.draft is None else ""
        else:
            prompt = "" if self.draft is None or self.response is not None else \
                self.game.challenger_prompts([self.problem], [self.draft])[0]
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

    def step(self, action):
        if not hasattr(self, "agents") or not hasattr(self, "problem"):
            raise RuntimeError("agon: call reset() before step()")
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            if action is not None:
                raise ValueError(f"agent {agent!r} is done; the only valid action is None, got {type(action).__name__}")
            return self._was_dead_step(action)
        if not isinstance(action, str):
            raise TypeError(f"action for {agent!r} must be str, got {type(action).__name__}")
        clipped = len(action) > self.max_chars
        action = action[: self.max_chars]
        self._cumulative_rewards[agent] = 0.0
        if agent == self.drafter:
            self.draft, self._draft_clipped = action, clipped
            self.summary = self.game.summarize(action, self.problem.domain)
            self.agent_selection = self._selector.next()
            return
        self.response = action
        self._finish(clipped)
        self.agent_selection = self._selector.next()
        self._accumulate_rewards()
        if self.render_mode == "human":
            self.render()

    def _finish(self, response_clipped: bool):
        r = self.game.score([self.problem], [self.draft], [self.response])[0]
        self.result = r
        for agent, reward, info, clipped in (
            (self.drafter, r.drafter_reward, r.drafter_info, self._draft_clipped),
            (self.challenger, r.challenger_reward, r.challenger_info, response_clipped),
        ):
            self.rewards[agent] = reward
            self.terminations[agent] = True
            self.infos[agent] = {
                "role": self.role(agent), "problem_id": self.problem.id, **info, "reward": reward,
                "clipped": clipped, "converted": r.converted,
                "winner": {None: None, "drafter": self.drafter, "challenger": self.challenger}[r.winner],
            }

    # ------------------------------------------------------------------ rendering
    def render(self):
        if self.render_mode is None:
            warnings.warn("render() called without a render_mode; pass render_mode='ansi' or 'human'")
            return None
        text = self._render_text()
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def _render_text(self) -> str:
        if not hasattr(self, "problem"):
            return "agon: not reset yet"
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

    def close(self):
        pass


def _indent(text: str, width: int = 400) -> str:
    text = text if len(text) <= width else text[:width] + f"… [{len(text) - width} more chars]"
    return "\n".join("    " + line for line in text.splitlines()) or "    "
