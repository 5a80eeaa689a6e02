"""The headroom benchmark on a tiny budget: its files, and figures that obey their definitions."""

import json

import pytest

from benchmarks import headroom

SMALL = dict(per_tier=4, samples=4, group=4, temperature="0.7", max_new_tokens=24)


def test_headroom_writes_consistent_rows(tmp_path):
    out = headroom.main(headroom.Args(**SMALL, results_dir=str(tmp_path)))
    assert {p.name for p in tmp_path.iterdir()} == {"headroom.json", "headroom.md", "headroom.png"}
    report = json.loads((tmp_path / "headroom.json").read_text())
    rows = report["rows"]
    assert rows == out["rows"] and report["versions"]["torch"] and report["threads"] == 2
    assert [(r["tier"], r["family"]) for r in rows if r["family"] == "all"] == [("medium", "all"), ("hard", "all")]
    for r in rows:
        assert 0 <= r["pass@1"] <= r["pass@4"] <= 1 and "pass@16" not in r  # only k <= samples
        assert r["mixed"] + r["all right"] + r["all wrong"] == pytest.approx(1)
        assert r["greedy − pass@1"] == pytest.approx(r["greedy"] - r["pass@1"])
    assert sum(r["problems"] for r in rows if r["family"] != "all") == 8  # families split each tier's 4
    assert "| medium | 0.7 | all |" in (tmp_path / "headroom.md").read_text()


@pytest.mark.parametrize("bad, option", [({"group": 5}, "--group"), ({"ks": "1,8"}, "--ks"),
                                         ({"tiers": "medium,impossible"}, "--tiers 'impossible'"),
                                         ({"temperature": "hot"}, "--temperature")])
def test_bad_options_name_themselves(tmp_path, bad, option):
    with pytest.raises(SystemExit, match=option):
        headroom.main(headroom.Args(**{**SMALL, **bad}, results_dir=str(tmp_path)))
    assert not any(tmp_path.iterdir())
