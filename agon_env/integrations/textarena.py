"""
# Agon-v0 for TextArena

| Import        | `import agon_env.integrations.textarena` (registers the ids below) |
|---------------|--------------------------------------------------------------------|
| Make          | `textarena.make("Agon-v0", **options)`                             |
| Players       | 2 (player 0 is the PettingZoo env's `model_a`, player 1 `model_b`)  |
| Actions       | text: the full completion                                          |
| Rewards       | `env.close()` → ({pid: Agon reward}, {pid: game info})             |

The Agon draft/challenge game (arXiv:2607.07690) as a TextArena two-player game, for
self-play stacks built on TextArena. It is a shell over `agon_env.env.raw_env`: every
reset, step, summary and payment goes through that env, so the problem order, the role
rotation, the summary channel and each reward are the PettingZoo env's for the same
options, seed and texts (tested); `**options` are its arguments (`problems`, `grader`,
`reward`, `summary`, `template`, `max_chars`, ...), except `render_mode`: TextArena
renders through its own wrappers (`get_board_str` is the env's text view).

## Protocol
1. `reset(num_players=2, seed=None)` picks the problem and the drafter as the env does:
   roles alternate across episodes (`roles="fixed"`: player 0 always drafts).
2. The drafter's only observation is its prompt; its action is its completion.
3. The challenger then receives its prompt: the problem and the draft's **summary**
   (thinking dropped, final answer withheld). It never sees the draft itself.
4. Its completion ends the game. Both texts are graded and both players are paid the
   env's rewards (e.g. drafter 2c(a) + λφ(a), challenger 2c(b) + c(b)(1 − c(a)) + λφ(b)).

`game_info[pid]` holds the env's infos (`role`, `correct`, `formatted`, `answer`,
`verdict`, `reward`, `converted`, ...), with `winner` as a player id or None.

## Registered ids and observations
- `Agon-v0`: TextArena's `LLMObservationWrapper`, the history as `[GAME] …` lines.
- `Agon-v0-train`: `PromptObservationWrapper`, the player's prompt alone, exactly as the
  PettingZoo env's `observe(agent)["prompt"]` (what a policy trained on Agon reads).
- `Agon-v0-raw`: no wrapper; observations are TextArena message lists.

## Bad input
An action that is not a `str` is an invalid move, handled by TextArena's own
`TwoPlayerState.set_invalid_move`: the mover is told why and acts again (up to
`error_allowance` times, default 1); past that TextArena ends the game, −1 to the mover
and +1 to the other. A step after the game is over changes nothing and returns
`(True, info)`, as TextArena's own `State.step` does on a finished game.

    import textarena as ta
    import agon_env.integrations.textarena  # noqa: F401  (registers Agon-v0)

    env = ta.make("Agon-v0")
    env.reset(num_players=2, seed=0)
    done = False
    while not done:
        player_id, observation = env.get_observation()
        done, info = env.step(action=agents[player_id](observation))
    rewards, game_info = env.close()
"""

from __future__ import annotations

from typing import Callable

try:
    import textarena as ta
    from textarena.envs.registration import ENV_REGISTRY, register_with_versions
except ImportError as e:  # the core package never imports this module
    raise ImportError("agon_env.integrations.textarena needs TextArena: pip install 'agon[textarena]'") from e

from ..env import AGENTS, raw_env

__all__ = ["ENV_ID", "AgonTextArenaEnv", "FunctionAgent", "PromptObservationWrapper"]

ENV_ID = "Agon-v0"
_PROMPT, _ACTION, _ADMIN = ta.ObservationType.PROMPT, ta.ObservationType.PLAYER_ACTION, ta.ObservationType.GAME_ADMIN


class AgonTextArenaEnv(ta.Env):
    """One Agon game per episode on TextArena's `TwoPlayerState`; `options` go to `raw_env`."""

    def __init__(self, error_allowance: int = 1, **options):
        if "render_mode" in options:
            raise TypeError("Agon-v0 renders through TextArena's wrappers; drop render_mode")
        self.aec = raw_env(render_mode="ansi", **options)
        self.error_allowance = error_allowance

    def reset(self, num_players: int, seed: int | None = None):
        if num_players != 2:
            raise ValueError(f"Agon-v0 is a two-player game, got num_players={num_players}")
        self.aec.reset(seed=seed)  # validates the seed; picks the problem and the drafter
        drafter = AGENTS.index(self.aec.drafter)
        self.state = ta.TwoPlayerState(num_players=2, seed=seed, error_allowance=self.error_allowance)
        self.state.reset(
            game_state={"problem_id": self.aec.problem.id, "question": self.aec.problem.question,
                        "draft": None, "summary": None, "response": None},
            role_mapping={0: "Player 0", 1: "Player 1"},
            secret_roles={drafter: "drafter", 1 - drafter: "challenger"},
        )
        self.state.manually_set_current_player_id(drafter)
        self._send_prompt(drafter)

    def step(self, action) -> tuple[bool, ta.Info]:
        if not hasattr(self, "state"):
            raise RuntimeError("Agon-v0: call reset(num_players=2) before step()")
        st = self.state
        if st.done:
            return True, st.step_info
        pid = st.current_player_id
        if not isinstance(action, str):
            st.set_invalid_move(reason=f"action for Player {pid} must be str, got {type(action).__name__}")
            return st.step()
        is_drafter = self.aec.agent_selection == self.aec.drafter
        self.aec.step(action)  # grades and pays when the challenger acts
        st.add_observation(from_id=pid, to_id=pid, message=action, observation_type=_ACTION)
        if is_drafter:
            st.game_state.update(draft=self.aec.draft, summary=self.aec.summary)
            self._send_prompt(1 - pid)
        else:
            st.game_state["response"] = self.aec.response
            self._finish()
        return st.step()  # hands the turn to the challenger, or closes the game

    def _send_prompt(self, pid: int):
        """The env's own prompt for the player (the challenger's holds the summary, never the draft)."""
        prompt = self.aec.observe(AGENTS[pid])["prompt"]
        self.state.add_observation(to_id=pid, message=prompt, observation_type=_PROMPT)

    def _finish(self):
        st, r = self.state, self.aec.result
        verdicts = f"drafter {r.drafter_info['verdict']}, challenger {r.challenger_info['verdict']}"
        st.rewards = {pid: float(self.aec.rewards[a]) for pid, a in enumerate(AGENTS)}
        for pid, agent in enumerate(AGENTS):
            info = dict(self.aec.infos[agent])
            info["winner"] = None if info["winner"] is None else AGENTS.index(info["winner"])
            st.game_info[pid].update(info, reason=verdicts)
        st.add_observation(message=f"Game over: {verdicts}. Rewards: {st.rewards}.", observation_type=_ADMIN)
        st.done = True

    def get_board_str(self) -> str:
        """The env's text view of the game (problem, draft, summary, response, verdicts)."""
        return self.aec.render()


class PromptObservationWrapper(ta.ObservationWrapper):
    """The player's latest prompt alone: the PettingZoo env's `observe(agent)["prompt"]`.

    Admin messages (an invalid-move notice) and the player's own echoed action are dropped,
    so a retried move reads the same prompt again.
    """

    def __init__(self, env):
        super().__init__(env)
        self.prompts: dict[int, str] = {}

    def reset(self, num_players: int, seed: int | None = None):
        self.prompts = {}  # the wrapped env's reset never calls this wrapper's observation()
        return self.env.reset(num_players=num_players, seed=seed)

    def observation(self, player_id, observation):
        for _, message, kind in observation or ():
            if kind == _PROMPT:
                self.prompts[player_id] = message
        return self.prompts.get(player_id, "")


class FunctionAgent(ta.Agent):
    """Any `str -> str` callable as a TextArena agent: a scripted player, or a policy's sampler.

    `system_prompt` is there for TextArena's agent wrappers, which read and set it.
    """

    def __init__(self, fn: Callable[[str], str], system_prompt: str = ""):
        self.fn, self.system_prompt = fn, system_prompt

    def __call__(self, observation: str) -> str:
        return self.fn(observation)


if ENV_ID not in ENV_REGISTRY:  # a re-import (importlib.reload) must not raise "already registered"
    register_with_versions(id=ENV_ID, entry_point=AgonTextArenaEnv,
                           wrappers={"default": [ta.wrappers.LLMObservationWrapper],
                                     "-train": [PromptObservationWrapper]})
