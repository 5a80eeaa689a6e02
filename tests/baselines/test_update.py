"""The update's options: learning-rate schedules, the optimiser, tempered log-probs, the KL anchor, dynamic sampling."""

import math

import pytest
import torch

from baselines import grpo
from baselines.config import LearnerArgs
from baselines.policy import Generation, Policy, SamplingParams, load_policy
from baselines.update import grpo_update, lr_factor, make_optimizer
from problems.record import Problem


def test_linear_schedule_is_the_old_warmup_then_decay():
    args = LearnerArgs(steps=50, warmup_frac=0.1, lr_schedule="linear")
    old = lambda s: (s + 1) / 5 if s < 5 else max(0.0, (50 - s) / 45)  # noqa: E731  the schedule before the option
    assert [lr_factor(s, args) for s in range(60)] == [old(s) for s in range(60)]


@pytest.mark.parametrize("schedule", ["cosine", "linear"])
def test_decay_ends_at_the_floor_and_never_rises(schedule):
    args = LearnerArgs(steps=100, warmup_frac=0.1, lr_schedule=schedule, lr_floor=0.2)
    f = [lr_factor(s, args) for s in range(100)]
    assert f[9] == 1.0 and all(a >= b for a, b in zip(f[9:], f[10:]))
    assert 0.2 < f[-1] < 0.22 and lr_factor(100, args) == pytest.approx(0.2)
    if schedule == "cosine":  # half-way through the decay: half-way between peak and floor
        assert lr_factor(10 + 45, args) == pytest.approx(0.2 + 0.8 * 0.5 * (1 + math.cos(math.pi * 0.5)))


def test_constant_schedule_and_sgd():
    args = LearnerArgs(steps=20, warmup_frac=0.0, lr_schedule="constant", optimizer="sgd", lr=0.1)
    assert {lr_factor(s, args) for s in range(20)} == {1.0}
    p = torch.nn.Parameter(torch.ones(3))
    opt, sched = make_optimizer(type("P", (), {"parameters": lambda self: [p]})(), args)
    assert isinstance(opt, torch.optim.SGD) and opt.defaults["momentum"] == 0.9
    p.grad = torch.full((3,), 2.0)
    opt.step()
    sched.step()
    torch.testing.assert_close(p.detach(), torch.full((3,), 0.8))  # SGD: the step scales with the gradient


@pytest.fixture(scope="module")
def tiny_batch():
    pol = load_policy("tiny:a", reference=True, backend="hf")
    gens = [g for gs in pol.generate(["Q:12+34\nA:", "Q:5*7\nA:"], 4, SamplingParams(0.7, 1.0, 24), seed=3) for g in gs]
    return pol, gens


def test_tempered_logprobs_are_the_sampler_distribution(tiny_batch):
    pol, gens = tiny_batch
    pids, cids = [g.prompt_ids for g in gens], [g.completion_ids for g in gens]
    raw, mask = pol.token_logprobs(pids, cids)
    hot, _ = pol.token_logprobs(pids, cids, temperature=0.7)
    g = gens[0]  # by hand: log-softmax of logits / T at each completion position
    ids = torch.tensor([g.prompt_ids + g.completion_ids])
    logits = pol.model(input_ids=ids).logits[0, len(g.prompt_ids) - 1:-1].float() / 0.7
    want = logits.log_softmax(-1).gather(-1, torch.tensor(g.completion_ids)[:, None]).squeeze(-1)
    torch.testing.assert_close(hot[0, :len(g.completion_ids)].detach(), want.detach(), atol=1e-4, rtol=0)
    assert not torch.allclose(raw[0, :len(g.completion_ids)].detach(), want.detach(), atol=1e-3)
    with pytest.raises(ValueError, match="temperature must be positive"):
        pol.token_logprobs(pids, cids, temperature=0.0)


@pytest.mark.parametrize("tempered", [False, True])
def test_one_update_is_on_policy_and_the_kl_anchor_sees_the_start(tiny_batch, tempered):
    """The tiny pair is trained fully; with --beta its reference is a frozen copy of the start."""
    pol, gens = tiny_batch
    start = [p.detach().clone() for p in pol.parameters()]
    args = LearnerArgs(steps=10, lr=1e-3, beta=0.1, tempered_logprobs=tempered, sampling=SamplingParams(0.7, 1.0, 24))
    opt, sched = make_optimizer(pol, args)
    adv = torch.tensor([1.0, -1.0] * 4)
    first = grpo_update(pol, opt, sched, gens, adv, args)
    assert first["clip_frac"] == 0.0 and first["kl"] < 1e-6  # ratio 1 and the policy still is the reference
    second = grpo_update(pol, opt, sched, gens, adv, args)
    assert second["kl"] > 1e-6  # the anchor measures the distance moved from the start
    with torch.no_grad():
        for p, s in zip(pol.parameters(), start):
            p.copy_(s)


def test_sampler_gap_reports_how_far_the_samplers_logprobs_are_from_the_recompute(tiny_batch):
    """In-process sampling agrees with the recompute to float precision; a sampler whose numbers are off by
    0.05 per token (a stand-in for a vLLM server's) shows exactly that gap."""
    pol, gens = tiny_batch
    start = [p.detach().clone() for p in pol.parameters()]
    args = LearnerArgs(steps=10, lr=0.0, warmup_frac=0.0, sampling=SamplingParams(0.7, 1.0, 24))
    opt, sched = make_optimizer(pol, args)
    adv = torch.tensor([1.0, -1.0] * 4)
    assert grpo_update(pol, opt, sched, gens, adv, args)["sampler_gap"] < 1e-4
    off = [Generation(g.prompt, g.text, g.prompt_ids, g.completion_ids, [lp - 0.05 for lp in g.logprobs], g.finished)
           for g in gens]
    assert grpo_update(pol, opt, sched, off, adv, args)["sampler_gap"] == pytest.approx(0.05, abs=1e-4)
    tempered = LearnerArgs(steps=10, lr=0.0, tempered_logprobs=True, sampling=SamplingParams(0.7, 1.0, 24))
    assert grpo_update(pol, opt, sched, off, adv, tempered)["sampler_gap"] == 0.0  # not comparable: not measured
    with torch.no_grad():
        for p, s in zip(pol.parameters(), start):
            p.copy_(s)


@pytest.mark.parametrize("loss_type", ["grpo", "dapo", "dr_grpo"])
def test_micro_batches_accumulate_the_whole_batchs_step(tiny_batch, loss_type):
    """--micro-batch 3 over 8 completions (parts of 3, 3, 2 with different token counts) takes the step that
    the whole batch does at once: same gradient, loss and stats within float rounding."""
    pol, gens = tiny_batch
    cut = [24, 5, 17, 24, 9, 24, 2, 13]  # unequal lengths, so the parts' weights differ from a plain split
    gens = [Generation(g.prompt, g.text, g.prompt_ids, g.completion_ids[:k], g.logprobs[:k], g.finished)
            for g, k in zip(gens, cut)]
    start = [p.detach().clone() for p in pol.parameters()]
    adv = torch.tensor([1.0, -0.5, 0.25, -1.0, 0.5, 2.0, -2.0, 0.75])
    out = {}
    for micro in (0, 3):
        args = LearnerArgs(steps=10, lr=0.0, warmup_frac=0.0, loss_type=loss_type, beta=0.1, micro_batch=micro,
                           sampling=SamplingParams(0.7, 1.0, 24))
        opt, sched = make_optimizer(pol, args)
        stats = grpo_update(pol, opt, sched, gens, adv, args)  # lr 0: the weights stay, the gradients are kept
        out[micro] = stats, [p.grad.clone() for p in pol.parameters()]
    (whole, g_whole), (micro, g_micro) = out[0], out[3]
    assert micro["loss"] == pytest.approx(whole["loss"], rel=1e-5, abs=1e-7)
    for k in ("clip_frac", "kl", "sampler_gap", "grad_norm"):
        assert micro[k] == pytest.approx(whole[k], rel=1e-4, abs=1e-7), k
    assert any(g.abs().max() > 0 for g in g_whole)
    for a, b in zip(g_whole, g_micro):
        torch.testing.assert_close(b, a, rtol=1e-4, atol=1e-7)
    for p, s in zip(pol.parameters(), start):
        assert torch.equal(p.detach(), s)


@pytest.mark.parametrize("micro", [1, 0])
def test_zero_advantage_completions_are_skipped_and_the_step_is_the_same(micro):
    """An all-equal group's completions (advantage exactly 0) add nothing to the gradient, so the update scores
    only the others; the weights it reaches are those of scoring all (bitwise one completion at a time, within
    float rounding in one batch), also on a step where nothing is scored and Adam's momentum moves them."""
    pol = load_policy("tiny:a", backend="hf", reference=False)  # no reference: a KL weight adds no term, skips nothing
    gens = [g for gs in pol.generate(["Q:12+34\nA:", "Q:5*7\nA:"], 4, SamplingParams(0.7, 1.0, 24), seed=3) for g in gs]
    steps = [torch.tensor([1.0, -0.5, 0.25, 2.0, 0.0, 0.0, 0.0, 0.0]), torch.zeros(8)]
    start = [p.detach().clone() for p in pol.parameters()]
    score = pol.token_logprobs

    def run(beta):
        with torch.no_grad():
            for p, s in zip(pol.parameters(), start):
                p.copy_(s)
        args = LearnerArgs(steps=10, lr=1e-3, warmup_frac=0.0, micro_batch=micro, beta=beta,
                           sampling=SamplingParams(0.7, 1.0, 24))
        opt, sched = make_optimizer(pol, args)
        scored = []
        pol.token_logprobs = lambda p, c, **kw: scored.append(len(c)) or score(p, c, **kw)
        try:
            stats = [grpo_update(pol, opt, sched, gens, adv, args) for adv in steps]
        finally:
            del pol.token_logprobs
        return [p.detach().clone() for p in pol.parameters()], sum(scored), stats

    (skip, n_skip, s_skip), (every, n_every, s_every) = run(0.0), run(1e-9)
    assert (n_skip, n_every) == (4, 16)
    assert any(not torch.equal(a, s) for a, s in zip(every, start))
    for a, b in zip(every, skip):
        if micro == 1:
            assert torch.equal(a, b)
        else:  # two Adam steps at lr 1e-3: Adam divides the last bits of small gradients by small moments
            torch.testing.assert_close(b, a, rtol=0, atol=1e-5)
    for a, b in zip(s_every, s_skip):
        assert b["loss"] == pytest.approx(a["loss"], rel=1e-5, abs=1e-8)
        assert b["grad_norm"] == pytest.approx(a["grad_norm"], rel=1e-4, abs=1e-8)


@pytest.mark.parametrize("loss_type, micro", [("grpo", 0), ("dapo", 3)])
def test_shared_prompts_take_the_same_step(tiny_batch, loss_type, micro):
    """--share-prompts computes each group's prompt once (two prompts of unequal length, four completions
    each, one of a single token): the same log-probs, reference log-probs, gradient and stats."""
    pol, gens = tiny_batch
    cut = [24, 1, 17, 24, 9, 24, 2, 13]
    gens = [Generation(g.prompt, g.text, g.prompt_ids, g.completion_ids[:k], g.logprobs[:k], g.finished)
            for g, k in zip(gens, cut)]
    pids, cids = [g.prompt_ids for g in gens], [g.completion_ids for g in gens]
    assert len({tuple(p) for p in pids}) == 2 and len({len(p) for p in pids}) == 2
    for score in (pol.token_logprobs, pol.reference_logprobs):
        (plain, m0), (shared, m1) = score(pids, cids), score(pids, cids, share_prompts=True)
        assert torch.equal(m0, m1)
        torch.testing.assert_close(shared, plain, rtol=0, atol=1e-5)
    adv = torch.tensor([1.0, -0.5, 0.25, -1.0, 0.5, 2.0, -2.0, 0.75])
    out = {}
    for share in (False, True):
        args = LearnerArgs(steps=10, lr=0.0, warmup_frac=0.0, loss_type=loss_type, beta=0.1, micro_batch=micro,
                           share_prompts=share, sampling=SamplingParams(0.7, 1.0, 24))
        opt, sched = make_optimizer(pol, args)
        stats = grpo_update(pol, opt, sched, gens, adv, args)
        out[share] = stats, [p.grad.clone() for p in pol.parameters()]
    (plain, g_plain), (shared, g_shared) = out[False], out[True]
    for k in ("loss", "clip_frac", "kl", "sampler_gap", "grad_norm"):
        assert shared[k] == pytest.approx(plain[k], rel=1e-4, abs=1e-6), k
    assert any(g.abs().max() > 0 for g in g_plain)
    for a, b in zip(g_plain, g_shared):
        torch.testing.assert_close(b, a, rtol=1e-4, atol=1e-6)


def test_negative_micro_batch_is_refused():
    with pytest.raises(SystemExit, match="--micro-batch"):
        LearnerArgs(micro_batch=-1).validate("group-size", 4)


class MixedPolicy(Policy):
    """Right on every sample of 'mixed' problems' even samples, wrong otherwise; trains nothing."""

    def __init__(self, mixed):
        self.mixed, self.prompts = mixed, []

    def generate(self, prompts, n=1, params=None, seed=None):
        self.prompts += list(prompts)
        return [[Generation(p, f"<answer>{self.mixed.get(p, 'x') if k % 2 == 0 else 'x'}</answer>", [0], [1], [0.0], True)
                 for k in range(n)] for p in prompts]


def test_dynamic_sampling_refills_with_informative_groups(monkeypatch):
    train = [Problem(id=f"p{i}", question=f"q{i}", answer=str(i)) for i in range(12)]
    args = grpo.Args(problems_per_step=3, rollouts_per_problem=4, dynamic_sampling=True, refill_rounds=6, steps=4,
                     progress=False, template="compact")
    game = args.game(model_template="compact")
    policy = MixedPolicy({game.drafter_prompts([p])[0]: p.answer for p in train[:5]})  # 5 of 12 problems can be informative
    seen = []
    monkeypatch.setattr(grpo, "grpo_update", lambda pol, o, s, update, adv, a: seen.append((update, adv)) or
                        {"loss": 0.0, "clip_frac": 0.0, "kl": 0.0, "sampler_gap": 0.0, "grad_norm": 0.0})
    sched = type("S", (), {"step": lambda self: None, "get_last_lr": lambda self: [0.0]})()
    refilled = []
    for step in range(4):
        before = len(policy.prompts)
        m = grpo.grpo_step(step, args, game, train, policy, None, sched)
        update, adv = seen[-1]
        assert m["groups/updated"] == len(update) // 4 == 3, m  # refilled up to problems-per-step
        assert all(adv.view(-1, 4).std(-1) > 0)  # only informative groups reach the update
        assert m["rollouts"] == 4 * (len(policy.prompts) - before)  # every sampled rollout is counted
        refilled.append(m["rollouts"] > 12)
    assert any(refilled)
    first = grpo.batch_for_step(train, 0, 3, args.seed)
    drop_only = grpo.grpo_step(0, grpo.Args(**{**args.__dict__, "refill_rounds": 0}), game, train, policy, None, sched)
    assert drop_only["rollouts"] == 12 and drop_only["groups/updated"] == sum(p in train[:5] for p in first)
