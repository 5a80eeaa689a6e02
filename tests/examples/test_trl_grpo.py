"""examples/trl_grpo.py (issue 17, item 1): TRL's own GRPOTrainer runs both modes on the tiny model for a handful
of steps; the dataset columns reach Agon's reward functions, their numbers are the env's, the loss is finite."""

from __future__ import annotations

import functools
import json
import math

import pytest

from agon_env.integrations import trl as agon_trl
from agon_env.integrations.trl import AgonRewards
from problems.record import Problem


@pytest.mark.parametrize("mode", ["drafter", "challenger"])
def test_example_trains_with_grpo_trainer(mode, tmp_path, monkeypatch, capsys, load_example, one_thread):
    """A handful of TRL steps: the columns reach the reward function, its numbers are the env's, the loss is finite."""
    ex = load_example("trl_grpo")
    name = f"{mode}_reward"
    original, calls = getattr(AgonRewards, name), []

    @functools.wraps(original)  # TRL names the metric after the function: keep `drafter_reward` / `challenger_reward`
    def spy(self, prompts, completions, **columns):
        out = original(self, prompts, completions, **columns)
        calls.append((self.game, completions, columns, out))
        return out

    monkeypatch.setattr(AgonRewards, name, spy)
    args = ex.Args(mode=mode, steps=3, problems=8, prompts_per_step=2, num_generations=4, threads=1,
                   out_dir=str(tmp_path))
    trainer = ex.main(args)

    assert len(calls) == 3 and all(len(c[1]) == 8 for c in calls)
    need = {"problem", "answer"} | ({"draft", *agon_trl.DRAFT_COLUMNS} if mode == "challenger" else set())
    for game, completions, columns, out in calls:
        assert need <= set(columns) and {"trainer_state", "log_metric"} <= set(columns)
        problems = [Problem.from_dict(json.loads(p)) for p in columns["problem"]]
        if mode == "challenger":  # the env's pay for the texts TRL sampled
            assert out == [r.challenger_reward for r in game.score(problems, columns["draft"], completions)]
        else:
            assert out == game.grade_solo(problems, completions)[0]
    logs = [h for h in trainer.state.log_history if "reward" in h]
    assert len(logs) == 3
    for h, (_, _, _, out) in zip(logs, calls):
        assert math.isfinite(h["loss"]) and math.isfinite(h["grad_norm"])
        assert h[f"rewards/{name}/mean"] == pytest.approx(sum(out) / len(out), abs=1e-6)
        assert "agon/pass" in h and (mode == "drafter" or "agon/conversion" in h)
    run = next(tmp_path.glob(f"trl_grpo-{mode}-s0-*"))
    assert (run / "model" / "model.safetensors").exists() and (run / "log_history.json").exists()
    assert f"outputs in {run}" in capsys.readouterr().out
