"""Agon-v0 in TextArena: full games through TextArena's registry, wrappers and agents, same rules as the env."""

import time

import pytest

ta = pytest.importorskip("textarena", reason="the textarena extra: pip install -e '.[textarena]'")

import agon_env  # noqa: E402
from agon_env.game import AgonGame  # noqa: E402
from agon_env.grading import ExactMatchGrader  # noqa: E402
from agon_env.integrations.textarena import FunctionAgent, PromptObservationWrapper  # noqa: E402

DRAFT = "<think>private 41 secret</think>I added the ones first.<answer>{}</answer>"


def make(env_id, problems, **kw):
    return ta.make(env_id, problems=problems, grader=ExactMatchGrader(), **kw)


def play(env, agents, seed=None):
    """TextArena's own game loop; returns (rewards, game_info, observations seen per player)."""
    env.reset(num_players=2, seed=seed)
    seen, done = {0: [], 1: []}, False
    while not done:
        pid, obs = env.get_observation()
        seen[pid].append(obs)
        done, _ = env.step(action=agents[pid](obs))
    rewards, info = env.close()
    return rewards, info, seen


class Scripted(ta.Agent):
    """A TextArena agent by subclassing, as its docs show: one fixed text, whatever it is shown."""

    def __init__(self, text):
        self.text, self.system_prompt = text, ""

    def __call__(self, observation):
        return self.text


def test_registered_through_textarenas_registry(small_problems):
    from textarena.envs.registration import ENV_REGISTRY

    assert {"Agon-v0", "Agon-v0-train", "Agon-v0-raw"} <= set(ENV_REGISTRY)
    env = make("Agon-v0", small_problems)
    assert isinstance(env, ta.wrappers.LLMObservationWrapper) and env.env_id == "Agon-v0"
    assert isinstance(make("Agon-v0-train", small_problems), PromptObservationWrapper)
    with pytest.raises(ValueError, match="two-player game, got num_players=3"):
        env.reset(num_players=3)


def test_full_game_pays_the_envs_rewards_and_shows_only_the_summary(small_problems):
    env = make("Agon-v0", small_problems)
    env.reset(num_players=2, seed=0)  # reset(seed) fixes the episode: play() below replays it
    problem = next(p for p in small_problems if p.id == env.state.game_state["problem_id"])
    response = f"<answer>{problem.answer}</answer>"
    rewards, info, seen = play(env, {0: Scripted(DRAFT.format("0")), 1: Scripted(response)}, seed=0)
    assert info[0]["role"] == "drafter" and info[1]["role"] == "challenger"
    challenger_view = seen[1][0]
    assert "I added the ones first." in challenger_view  # the summary channel ...
    assert "private 41" not in challenger_view and "<answer>0" not in challenger_view  # ... not the draft
    want = AgonGame(grader=ExactMatchGrader()).score([problem], [DRAFT.format("0")], [response])[0]
    assert rewards == {0: want.drafter_reward, 1: want.challenger_reward} == {0: 0.5, 1: 3.5}  # the conversion bonus
    assert info[1]["converted"] and info[1]["winner"] == 1 and info[0]["correct"] is False


def test_roles_problems_and_rewards_match_the_pettingzoo_env(small_problems):
    """Same options, seed and texts: the same drafter, problem, prompts and rewards, episode by episode."""
    ta_env = make("Agon-v0-train", small_problems, template="compact")
    pz = agon_env.env(problems=small_problems, grader=ExactMatchGrader(), template="compact")
    texts = lambda prompt: f"<think>t</think>s<answer>{len(prompt) % 7}</answer>"  # noqa: E731
    for ep in range(6):
        seed = 3 if ep == 0 else None
        rewards, info, seen = play(ta_env, {0: texts, 1: texts}, seed=seed)
        pz.reset(seed=seed)
        drafter = pz.agent_selection
        pz_prompts = {}
        for _ in range(2):
            agent = pz.agent_selection
            pz_prompts[agent] = pz.observe(agent)["prompt"]
            pz.step(texts(pz_prompts[agent]))
        assert info[0]["role"] == ("drafter" if drafter == "model_a" else "challenger")
        assert [seen[0][0], seen[1][0]] == [pz_prompts["model_a"], pz_prompts["model_b"]]  # exactly the env's prompts
        assert rewards == {0: pz.rewards["model_a"], 1: pz.rewards["model_b"]}
        assert info[0]["problem_id"] == pz.unwrapped.problem.id
    assert ta_env.state.game_info[0]["turn_count"] == 1


def test_textarena_agent_wrappers_and_render_wrapper(small_problems, capsys):
    from textarena.agents.wrappers import AnswerTokenAgentWrapper

    env = ta.wrappers.SimpleRenderWrapper(make("Agon-v0-raw", small_problems), player_names={0: "A", 1: "B"},
                                          render_mode="board")
    env.reset(num_players=2, seed=1)
    answer = next(p.answer for p in small_problems if p.id == env.state.game_state["problem_id"])
    thinker = FunctionAgent(lambda obs: f"reasoning here. Final Answer <answer>{answer}</answer>")
    agent = AnswerTokenAgentWrapper(thinker)  # keeps only what follows "Final Answer"
    rewards, info, seen = play(env, {0: agent, 1: agent}, seed=1)
    assert isinstance(seen[0][0], list) and seen[0][0][0][2] == ta.ObservationType.PROMPT  # raw message lists
    assert env.state.game_state["draft"] == f" <answer>{answer}</answer>"
    assert rewards == {0: 2.5, 1: 2.5} and info[1]["converted"] is False  # both right: no conversion bonus
    assert "Reference answer" in capsys.readouterr().out  # the board is the env's text view


def test_bad_actions_get_textarenas_invalid_move_handling(small_problems):
    env = make("Agon-v0", small_problems)
    with pytest.raises(RuntimeError, match="reset"):
        make("Agon-v0", small_problems).step("x")
    env.reset(num_players=2, seed=0)
    done, _ = env.step(action=3)
    assert not done and env.state.current_player_id == 0  # told, and asked again
    pid, obs = env.get_observation()
    assert pid == 0 and "must be str, got int" in obs and "resubmit" in obs
    done, _ = env.step(action="<answer>1</answer>")  # a valid retry carries on
    assert not done and env.state.current_player_id == 1
    assert env.step(action=None) == (False, {})
    done, _ = env.step(action=["not", "text"])  # past error_allowance: TextArena ends the game
    assert done
    rewards, info = env.close()
    assert rewards == {1: -1, 0: 1} and info[1]["invalid_move"] is True
    assert env.step(action="late") == (True, {}) and env.close()[0] == rewards  # after the end: nothing changes


def test_a_retried_move_reads_the_same_prompt(small_problems):
    env = make("Agon-v0-train", small_problems, template="compact")
    env.reset(num_players=2, seed=0)
    first = env.get_observation()[1]
    env.step(action=b"bytes")
    assert env.get_observation() == (0, first) and first.startswith("Q:")


def test_two_tiny_policies_play_full_games():
    from baselines.policy import SamplingParams, load_pair
    from problems import load

    a, b = load_pair("tiny", device="cpu", backend="hf", reference=False)
    params = SamplingParams(greedy=True, max_new_tokens=96)
    agents = {pid: FunctionAgent(lambda obs, pol=pol: pol.generate([obs], params=params, seed=0)[0][0].text)
              for pid, pol in enumerate((a, b))}
    problems = load("arith", split="validation", tier="hard")[:2]  # greedy: one game ends in a conversion
    env = ta.make("Agon-v0-train", problems=problems, template="compact")  # the default math grader
    game = AgonGame(template="compact")
    t = time.time()
    for seed in (0, 1):  # each model drafts once
        rewards, info, seen = play(env, agents, seed=seed)
        st = env.state.game_state
        drafter = 0 if info[0]["role"] == "drafter" else 1
        problem = next(p for p in problems if p.id == st["problem_id"])
        assert seen[1 - drafter][0] == game.challenger_prompts([problem], [st["draft"]])[0]
        want = game.score([problem], [st["draft"]], [st["response"]])[0]
        assert rewards == {drafter: want.drafter_reward, 1 - drafter: want.challenger_reward}
    print(f"two tiny-model games: {time.time() - t:.1f}s")
