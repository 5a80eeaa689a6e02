"""A single-agent Gymnasium view of the discrete Agon game, with the rival embedded.

The learner holds seat `model_a`; the rival (`model_b`) is a policy `(obs, rng) -> action`:
a fixed heuristic, a frozen snapshot of the learner, or any callable. Given a list of
rivals, one is drawn per episode (a snapshot pool for self-play).

`role` says which part the learner trains: `"drafter"`, `"challenger"`, or `"both"`
(the default: the discrete env's own alternation, `rules.drafter_seat` of the last reset
seed plus the episodes since, so the learner drafts after `reset(seed=0)` and challenges
after `reset(seed=1)`). A `reset` that raises, even from inside the rival (which acts first
when it drafts), changes nothing in the wrapper or the env (the rival's own state aside). A
`step` whose action is not in `action_space` raises before anything changes.

Rewards are attributed to the learner in both roles. The drafter's pay only exists once the
challenger has answered, after the drafter's last action; PettingZoo's SB3 tutorial wrapper
returns the mover's reward and so drops it. Here each `step` returns everything the learner
was paid since its previous action (the AEC env's cumulative reward), so the drafter's
answer step returns its reward together with `terminated=True`.
"""

from __future__ import annotations

from typing import Sequence

import gymnasium as gym

from .discrete import AGENTS, Policy, raw_env

LEARNER, RIVAL = AGENTS
TRAINED_ROLES = ("drafter", "challenger", "both")


class SingleAgentEnv(gym.Env):
    metadata = {"render_modes": ["ansi", "human"]}

    def __init__(self, rival: Policy | Sequence[Policy], role: str = "both", render_mode: str | None = None, **env_kwargs):
        if role not in TRAINED_ROLES:
            raise ValueError(f"role must be one of {TRAINED_ROLES}, got {role!r}")
        if role == "both" and env_kwargs.get("roles", "alternate") != "alternate":
            raise ValueError(f"role='both' needs the env's alternating roles, got roles={env_kwargs['roles']!r}")
        self.env = raw_env(render_mode=render_mode, **env_kwargs)
        self.role, self.render_mode = role, render_mode
        self.set_rival(rival)
        self.observation_space = self.env.observation_space(LEARNER)
        self.action_space = self.env.action_space(LEARNER)

    def set_rival(self, rival: Policy | Sequence[Policy]) -> None:
        """Replace the rival (or the pool of rivals, one drawn per episode)."""
        pool = list(rival) if isinstance(rival, (list, tuple)) else [rival]
        if not pool or not all(callable(p) for p in pool):
            raise TypeError(f"rival must be a callable (obs, rng) -> action or a non-empty list of them, got {rival!r}")
        self._pool = pool

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        options = self.env.check_reset(seed, options)  # before anything changes
        if self.role != "both":
            options["drafter"] = LEARNER if self.role == "drafter" else RIVAL
        saved = self._snapshot()
        try:
            super().reset(seed=seed)
            self._rival = self._pool[int(self.np_random.integers(len(self._pool)))]
            self.env.reset(seed=seed, options=options)
            self._play_rival()  # the rival may raise
        except BaseException:
            self._restore(saved)
            raise
        return self.env.observe(LEARNER), {"role": self.env.role(LEARNER)}

    def _snapshot(self):
        """What `reset` changes: both objects' attributes (it rebinds them, and the game's
        arrays and dicts are fresh each episode) and the states of the generators it draws from."""
        gens = [g for g in (self._np_random, self.env.np_random) if g is not None]
        return dict(vars(self)), dict(vars(self.env)), [(g, g.bit_generator.state) for g in gens]

    def _restore(self, saved):
        mine, env, gens = saved
        for obj, attrs in ((self, mine), (self.env, env)):
            vars(obj).clear()
            vars(obj).update(attrs)
        for g, state in gens:
            g.bit_generator.state = state

    def step(self, action):
        if not hasattr(self, "_rival"):
            raise RuntimeError("call reset() before step()")
        if self.env.terminations[LEARNER]:
            raise RuntimeError("the episode is over; call reset() before step()")
        if not self.action_space.contains(action):  # no silent int(2.9) or int("3")
            raise ValueError(f"action must be in {self.action_space}, got {action!r}")
        self.env.step(action)
        self._play_rival()
        terminated = self.env.terminations[LEARNER]
        info = dict(self.env.infos[LEARNER])
        # What AEC `last()` would return to the learner: its pay since its previous action.
        return self.env.observe(LEARNER), float(self.env._cumulative_rewards[LEARNER]), terminated, False, info

    def _play_rival(self):
        """Let the rival act until it is the learner's turn or the game is over."""
        e = self.env
        while e.agent_selection == RIVAL and not e.terminations[RIVAL]:
            e.step(self._rival(e.observe(RIVAL), self.np_random))

    def render(self):
        return self.env.render()
