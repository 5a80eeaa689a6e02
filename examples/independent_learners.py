"""Plug a multi-agent algorithm into Agon: independent tabular learners over the AEC API.

    python examples/independent_learners.py

Each agent keeps its own table Q[obs][action] and learns from its own reward only. The
AEC loop is the whole integration: `agent_iter()` yields whoever acts next, `last()` gives
its observation and the reward it was paid since its previous action. That cumulative
reward is what makes credit assignment right: the drafter's pay arrives after the
challenger answers, and the drafter sees it at its next `last()`, with `termination`.
Swap `Learner` for your algorithm; the loop stays. For the parallel API use
`agon_env.discrete.parallel_env()` (turn-based: only the agent to move is read).
"""

from collections import defaultdict

import numpy as np

from agon_env.discrete import AGENTS, env


class Learner:
    """Monte-Carlo control with a table: every step of an episode is credited with its return."""

    def __init__(self, n_actions, lr=0.1, epsilon=0.1):
        self.q = defaultdict(lambda: np.zeros(n_actions))
        self.n_actions, self.lr, self.epsilon, self.trace = n_actions, lr, epsilon, []

    def act(self, obs, rng):
        key = obs.tobytes()
        explore = rng.random() < self.epsilon
        action = int(rng.integers(self.n_actions)) if explore else int(self.q[key].argmax())
        self.trace.append((key, action))
        return action

    def learn(self, episode_return):
        for key, action in self.trace:
            self.q[key][action] += self.lr * (episode_return - self.q[key][action])
        self.trace = []


def main(episodes=20_000, seed=0):
    e, rng = env(), np.random.default_rng(seed)
    learners = {a: Learner(e.action_space(a).n) for a in AGENTS}
    correct = {a: [] for a in AGENTS}
    e.reset(seed=seed)
    for _ in range(episodes):
        returns = dict.fromkeys(AGENTS, 0.0)
        for agent in e.agent_iter():
            obs, reward, termination, truncation, info = e.last()
            returns[agent] += reward
            if termination or truncation:
                learners[agent].learn(returns[agent])
                correct[agent].append(info["correct"])
                e.step(None)
            else:
                e.step(learners[agent].act(obs, rng))
        e.reset()
    for a in AGENTS:
        print(f"{a}: correct {np.mean(correct[a][:1000]):.3f} in the first 1000 episodes, "
              f"{np.mean(correct[a][-1000:]):.3f} in the last 1000")


if __name__ == "__main__":
    main()
