import math

import pytest
import torch

from baselines.grpo_loss import group_advantages, policy_loss


def test_group_advantages_by_hand():
    r = torch.tensor([[1.0, 3.0], [2.0, 2.0]])
    a = group_advantages(r, eps=0.0 + 1e-12)
    assert torch.allclose(a[0], torch.tensor([-1.0, 1.0]))  # mean 2, population std 1
    assert torch.equal(a[1], torch.zeros(2))  # equal rewards: no signal
    assert torch.allclose(group_advantages(r, scale_std=False)[0], torch.tensor([-1.0, 1.0]))
    assert torch.allclose(group_advantages(torch.tensor([[0.0, 0.0, 0.0, 4.0]]), scale_std=False),
                          torch.tensor([[-1.0, -1.0, -1.0, 3.0]]))


@pytest.mark.parametrize("value", [0.7, 2.7, 0.1])
def test_equal_rewards_that_are_not_binary_fractions_get_exactly_zero_advantage(value):
    """Their mean is a rounding away from them and the std is rounding-sized, so (r − mean)/(std + eps) was ~1e-3."""
    r = torch.full((2, 8), value)
    r[1, 0] = 0.0  # the other row has a spread
    for scale in (True, False):
        a = group_advantages(r, scale)
        assert torch.equal(a[0], torch.zeros(8)) and a[1].abs().min() > 0
        keyed = group_advantages(r, scale, by=torch.tensor([[0, 1] * 4, [0] * 8]))
        assert torch.equal(keyed[0], torch.zeros(8)) and torch.allclose(keyed[1], a[1], atol=1e-6)


def test_group_advantages_within_keys():
    torch.manual_seed(0)
    r = torch.randint(0, 4, (5, 8)).float()
    key = torch.randint(0, 2, (5, 8))
    # one key throughout is the plain group baseline
    assert torch.allclose(group_advantages(r, by=torch.zeros_like(key)), group_advantages(r), atol=1e-6)
    for scale in (True, False):
        a = group_advantages(r, scale, by=key)
        # adding a constant to one key's rewards (a right draft's credit to its readers) changes nothing
        assert torch.allclose(group_advantages(r + 2.0 * key, scale, by=key), a, atol=1e-5)
        assert not torch.allclose(group_advantages(r + 2.0 * key, scale), group_advantages(r, scale), atol=1e-3)
        for k in (0, 1):  # centred within each key of each row
            assert torch.allclose((a * (key == k)).sum(-1), torch.zeros(5), atol=1e-4)
    # by hand: keys split [1, 3 | 5, 5] into two groups; a key held by one element gets zero
    a = group_advantages(torch.tensor([[1.0, 3.0, 5.0, 5.0, 9.0]]), eps=1e-12, by=torch.tensor([[0, 0, 1, 1, 2]]))
    assert torch.allclose(a, torch.tensor([[-1.0, 1.0, 0.0, 0.0, 0.0]]))


@pytest.fixture
def batch():
    # Two sequences: lengths 2 and 1 (one padded position).
    logp = torch.log(torch.tensor([[0.5, 0.25], [0.8, 1.0]]))
    old = torch.log(torch.tensor([[0.5, 0.5], [0.4, 1.0]]))
    mask = torch.tensor([[1, 1], [1, 0]])
    adv = torch.tensor([1.0, -2.0])
    return logp, old, adv, mask


def test_loss_variants_by_hand(batch):
    logp, old, adv, mask = batch
    # ratios: seq0 = [1.0, 0.5], seq1 = [2.0, pad]; eps 0.2.
    # seq0 (A=+1): min(r, clip(r)) = [1.0, 0.5]  -> per-token loss [-1.0, -0.5]
    # seq1 (A=-2): min(2*-2, 1.2*-2) = -4        -> per-token loss [4.0]
    tok = {"s0": [-1.0, -0.5], "s1": [4.0]}
    want = {
        "grpo": ((sum(tok["s0"]) / 2) + 4.0) / 2,
        "dapo": (sum(tok["s0"]) + 4.0) / 3,
        "dr_grpo": (sum(tok["s0"]) + 4.0) / (2 * 8),
    }
    for lt, w in want.items():
        loss, stats = policy_loss(logp, old, adv, mask, lt, max_tokens=8)
        assert math.isclose(loss.item(), w, rel_tol=1e-6), lt
    # clipped tokens: seq0 token1 (r=0.5<0.8 but A>0: not counted), seq1 token0 (r=2>1.2, A<0: not counted)
    assert stats["clip_frac"] == 0.0
    _, stats = policy_loss(logp, old, -adv, mask)
    assert math.isclose(stats["clip_frac"], 2 / 3, rel_tol=1e-6)


def test_eps_high_asymmetric(batch):
    logp, old, _, mask = batch
    adv = torch.tensor([0.0, 1.0])  # seq1 ratio 2.0 with positive advantage
    l_sym, _ = policy_loss(logp, old, adv, mask, "dapo", eps_high=0.2)
    l_high, _ = policy_loss(logp, old, adv, mask, "dapo", eps_high=0.28)
    assert math.isclose(l_sym.item(), -1.2 / 3, rel_tol=1e-6) and math.isclose(l_high.item(), -1.28 / 3, rel_tol=1e-6)


def test_kl_term_k3(batch):
    logp, old, adv, mask = batch
    ref = logp.clone()
    base, _ = policy_loss(logp, old, adv, mask, "dapo")
    same, st = policy_loss(logp, old, adv, mask, "dapo", ref_logp=ref, beta=0.1)
    assert math.isclose(same.item(), base.item(), rel_tol=1e-6) and st["kl"] == 0.0
    ref2 = logp + torch.log(torch.tensor(2.0))
    k3 = 2 - math.log(2) - 1
    more, st = policy_loss(logp, old, adv, mask, "dapo", ref_logp=ref2, beta=0.1)
    assert math.isclose(more.item() - base.item(), 0.1 * k3, rel_tol=1e-5) and math.isclose(st["kl"], k3, rel_tol=1e-5)


def test_gradient_pushes_up_positive_advantage():
    logits = torch.zeros(1, 3, requires_grad=True)
    logp = torch.log_softmax(logits, -1)[:, :1]
    loss, _ = policy_loss(logp, logp.detach(), torch.tensor([1.0]), torch.ones(1, 1))
    loss.backward()
    assert logits.grad[0, 0] < 0  # descending the loss raises the sampled token's logit


def test_unknown_loss_type():
    with pytest.raises(ValueError, match="loss_type must be one of"):
        policy_loss(torch.zeros(1, 1), torch.zeros(1, 1), torch.zeros(1), torch.ones(1, 1), "ppo")
