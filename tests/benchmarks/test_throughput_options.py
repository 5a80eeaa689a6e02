"""The env throughput benchmarks refuse an empty timing window or batch before any work, naming the option."""

import sys

import pytest

from benchmarks import discrete_throughput, env_throughput


def _no_work(*_, **__):
    raise AssertionError("work started")


@pytest.mark.parametrize("bad, option", [(["--seconds", "0"], "--seconds"), (["--seconds", "-1"], "--seconds"),
                                         (["--answers", "0"], "--answers")])
def test_env_throughput_refuses_bad_options(monkeypatch, bad, option):
    for name in ("bench_envs", "bench_grading", "write_report"):
        monkeypatch.setattr(env_throughput, name, _no_work)
    monkeypatch.setattr(sys, "argv", ["env_throughput", *bad])
    with pytest.raises(SystemExit, match=option):
        env_throughput.main()


def test_discrete_throughput_refuses_an_empty_window(monkeypatch):
    for name in ("steps_per_second", "write_report"):
        monkeypatch.setattr(discrete_throughput, name, _no_work)
    monkeypatch.setattr(sys, "argv", ["discrete_throughput", "--seconds", "0"])
    with pytest.raises(SystemExit, match="--seconds"):
        discrete_throughput.main()
