"""The policy-memory benchmark refuses bad options before it writes either of its two tables."""

import pytest

from benchmarks import policy_memory


def _no_work(*_, **__):
    raise AssertionError("work started")


@pytest.mark.parametrize("bad, option", [({"reps": 0}, "--reps"), ({"threads": 0}, "--threads"), ({"rank": 0}, "--rank")])
def test_bad_options_name_themselves_before_any_work(monkeypatch, bad, option):
    for name in ("memory_rows", "step_rows", "write_report"):
        monkeypatch.setattr(policy_memory, name, _no_work)
    with pytest.raises(SystemExit, match=option):
        policy_memory.main(policy_memory.Args(**bad))
