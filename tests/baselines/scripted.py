"""A scripted policy for tests that need exact control of what a model writes."""

from baselines.policy import Generation, Policy


class ScriptedPolicy(Policy):
    """A policy whose completion is a function of the prompt; it records every prompt it sees."""

    def __init__(self, name, answer):
        self.name, self.answer, self.seen = name, answer, []

    def generate(self, prompts, n=1, params=None, seed=None):
        self.seen += list(prompts)
        out = []
        for p in prompts:
            text = self.answer(p)
            out.append([Generation(p, text, [0], [1] * len(text), [0.0] * len(text), True) for _ in range(n)])
        return out


def ans(x):
    return f"<answer>{x}</answer>"
