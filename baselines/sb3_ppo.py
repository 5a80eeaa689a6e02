"""PPO by self-play on the discrete Agon game, with stable-baselines3. One file, top to bottom.

    python -m baselines.sb3_ppo                 # 4 min training budget + ~15 s, one CPU thread
    python -m baselines.sb3_ppo --help          # every option

The learner plays seat `model_a` of `agon_env.discrete` through `SingleAgentEnv`, in both
roles alternately. Its rival is drawn each episode from a pool of the last `pool_size`
frozen snapshots of the learner itself (`--random-in-pool` adds a uniform-random rival;
it learned slower in our runs). All actions are legal at every step, so this is plain
PPO, not MaskablePPO.

What it learned in our runs: as drafter, the honest code (each digit it worked out written as
itself); for a digit it missed, one run wrote "blank" and another a plausible guess, which
makes its draft look complete. Playing itself it was right 48-54% of the time as drafter and
70-79% as challenger; the best possible play scores about 52% and 78%.

Evaluation plays the greedy learner against two rivals it never trained against by name:
uniform random, and the "copy" heuristic (an honest drafter; as challenger it answers
from the draft alone). Win rate = P(win) + ½·P(tie), where a win is being correct while the
rival is wrong; 0.5 means "as good as the rival". The 95% interval is mean ± 1.96·s/√n.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
import tyro
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv
from tqdm import tqdm

from agon_env.discrete import AGENTS, Layout, Policy, heuristic_policy, play, random_policy, raw_env
from agon_env.single_agent import SingleAgentEnv


@dataclass
class Args:
    seed: int = 1
    """seed of the learner, the envs and the evaluation"""
    total_timesteps: int = 600_000
    """most learner steps to train for"""
    time_budget_s: float = 240.0
    """stop training after this many seconds even if total_timesteps is not reached"""
    n_envs: int = 16
    """parallel single-agent envs (in one process)"""
    n_steps: int = 128
    """steps per env per PPO rollout"""
    batch_size: int = 512
    """PPO minibatch size"""
    n_epochs: int = 4
    """PPO epochs per rollout"""
    learning_rate: float = 2e-3
    """Adam learning rate"""
    ent_coef: float = 0.01
    """entropy bonus"""
    hidden: int = 64
    """width of the two hidden layers of the policy and value MLPs"""
    snapshot_every: int = 20_000
    """learner steps between frozen snapshots added to the rival pool"""
    pool_size: int = 5
    """most recent snapshots kept in the rival pool"""
    random_in_pool: bool = False
    """keep a uniform-random rival in the pool too (guards against over-fitting to itself)"""
    eval_every: int = 25_000
    """learner steps between win-rate checks for the training curve"""
    curve_episodes: int = 400
    """episodes per win-rate check on the training curve"""
    eval_episodes: int = 2000
    """episodes of the final evaluation against each rival"""
    n_digits: int = 2
    """digits in the hidden problem (see agon_env.discrete)"""
    n_values: int = 4
    """values per digit (0..n_values-1); the target is the digits' sum"""
    visibility: float = 0.6
    """probability that a player works out each digit"""
    reward: str = "agon"
    """reward scheme: agon, cooperative, margin or zero_sum"""
    out_dir: str = "runs/sb3_ppo"
    """outputs go to <out_dir>/seed<seed>-<time>/"""
    torch_threads: int = 1
    """torch CPU threads"""
    progress: bool = True
    """show a progress bar"""


def env_kwargs(args: Args) -> dict:
    return dict(n_digits=args.n_digits, n_values=args.n_values, visibility=args.visibility, reward=args.reward)


def uniform_random(args: Args) -> Policy:
    return random_policy(Layout(args.n_digits, args.n_values).n_actions)


# ---------------------------------------------------------------- frozen snapshots in numpy
def snapshot(model: PPO, greedy: bool = False) -> Policy:
    """A frozen copy of the current policy, run in numpy (SB3 `predict()` per step measured ~30× slower)."""
    net = model.policy
    layers = [m for m in net.mlp_extractor.policy_net if isinstance(m, torch.nn.Linear)] + [net.action_net]
    weights = [(m.weight.detach().numpy().T.copy(), m.bias.detach().numpy().copy()) for m in layers]

    def act(obs: np.ndarray, rng: np.random.Generator) -> int:
        h = obs
        for w, b in weights[:-1]:
            h = np.tanh(h @ w + b)
        logits = h @ weights[-1][0] + weights[-1][1]
        if greedy:
            return int(logits.argmax())
        p = np.exp(logits - logits.max())
        return int(np.searchsorted(np.cumsum(p), rng.random() * p.sum()))

    return act


# ---------------------------------------------------------------- evaluation
def evaluate(learner: Policy, rival: Policy, args: Args, n_episodes: int, seed: int) -> dict:
    """Play `n_episodes` (roles alternating) and score the learner (`model_a`) against the rival."""
    e, rng = raw_env(**env_kwargs(args)), np.random.default_rng(seed)
    e.reset(seed=seed)
    scores, conversions, challenges = np.empty(n_episodes), 0, 0
    for i in range(n_episodes):
        infos = play(e, {AGENTS[0]: learner, AGENTS[1]: rival}, rng)
        me = infos[AGENTS[0]]
        scores[i] = 0.5 if me["winner"] is None else float(me["winner"] == AGENTS[0])
        if me["role"] == "challenger":
            challenges += 1
            conversions += me["converted"]
    half = 1.96 * scores.std(ddof=1) / np.sqrt(n_episodes)
    return {"win_rate": float(scores.mean()), "ci95": [float(scores.mean() - half), float(scores.mean() + half)],
            "wins": int((scores == 1).sum()), "ties": int((scores == 0.5).sum()), "losses": int((scores == 0).sum()),
            "conversion_rate": conversions / max(challenges, 1), "episodes": n_episodes}


def rivals(args: Args) -> dict[str, Policy]:
    return {"random": uniform_random(args), "copy": heuristic_policy(args.n_digits, args.n_values, "copy")}


# ---------------------------------------------------------------- self-play callback
class SelfPlay(BaseCallback):
    """Adds snapshots to the rival pool, records the win-rate curve, enforces the time budget."""

    def __init__(self, args: Args):
        super().__init__()
        self.args, self.curve = args, []
        self.pool: list[Policy] = []
        self.next_snapshot, self.next_eval = 0, 0

    def _on_training_start(self):
        self.start = time.time()
        self.bar = tqdm(total=self.args.total_timesteps, unit="step", mininterval=2.0, disable=not self.args.progress)

    def _on_step(self) -> bool:
        a, t = self.args, self.num_timesteps
        if t >= self.next_snapshot:
            self.pool = (self.pool + [snapshot(self.model)])[-a.pool_size:]
            self.training_env.env_method("set_rival", self.pool + [uniform_random(a)] * a.random_in_pool)
            self.next_snapshot += a.snapshot_every
        if t >= self.next_eval:
            me = snapshot(self.model, greedy=True)
            point = {"step": t, "seconds": time.time() - self.start}
            for name, rival in rivals(a).items():
                point[name] = evaluate(me, rival, a, a.curve_episodes, seed=a.seed + 10_000 + t)["win_rate"]
            self.curve.append(point)
            self.bar.set_postfix(vs_random=f"{point['random']:.2f}", vs_copy=f"{point['copy']:.2f}")
            self.next_eval += a.eval_every
        self.bar.update(t - self.bar.n)
        return time.time() - self.start < a.time_budget_s

    def _on_training_end(self):
        self.bar.close()


# ---------------------------------------------------------------- main
def train(args: Args) -> dict:
    """Train, evaluate, save; return the metrics (also written to metrics.json)."""
    torch.set_num_threads(args.torch_threads)
    out = Path(args.out_dir) / f"seed{args.seed}-{time.strftime('%Y%m%d-%H%M%S')}"
    out.mkdir(parents=True, exist_ok=True)

    first_rival = uniform_random(args)
    venv = DummyVecEnv([lambda: Monitor(SingleAgentEnv(first_rival, role="both", **env_kwargs(args)))] * args.n_envs)
    model = PPO(
        "MlpPolicy", venv, learning_rate=args.learning_rate, n_steps=args.n_steps, batch_size=args.batch_size,
        n_epochs=args.n_epochs, gamma=1.0, gae_lambda=1.0, ent_coef=args.ent_coef, seed=args.seed,
        policy_kwargs={"net_arch": [args.hidden, args.hidden]}, device="cpu",
    )
    callback = SelfPlay(args)
    start = time.time()
    model.learn(args.total_timesteps, callback=callback)
    train_seconds = time.time() - start

    me = snapshot(model, greedy=True)
    final = {name: evaluate(me, rival, args, args.eval_episodes, seed=args.seed + 1)
             for name, rival in rivals(args).items()}
    metrics = {"args": asdict(args), "train_seconds": train_seconds, "timesteps": model.num_timesteps,
               "final": final, "curve": callback.curve}
    model.save(out / "model.zip")
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2))
    plot(callback.curve, final, out / "win_rate.png")

    print(f"trained {model.num_timesteps} steps in {train_seconds:.0f} s")
    for name, r in final.items():
        lo, hi = r["ci95"]
        print(f"vs {name:6s}: win rate {r['win_rate']:.3f} [95% CI {lo:.3f}, {hi:.3f}] over {r['episodes']} episodes "
              f"(W/T/L {r['wins']}/{r['ties']}/{r['losses']}, conversion {r['conversion_rate']:.3f})")
    print(f"model: {out / 'model.zip'}\nplot: {out / 'win_rate.png'}\nmetrics: {out / 'metrics.json'}")
    return metrics


def plot(curve: list[dict], final: dict, path: Path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    steps = [p["step"] for p in curve]
    for name in final:
        ax.plot(steps, [p[name] for p in curve], marker="o", label=f"vs {name} (final {final[name]['win_rate']:.2f})")
    ax.axhline(0.5, color="grey", lw=0.8, ls="--")
    ax.set(xlabel="learner steps", ylabel="win rate (ties count ½)", ylim=(0, 1), title="PPO self-play on discrete Agon")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    train(tyro.cli(Args))
