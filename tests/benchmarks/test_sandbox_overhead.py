"""The sandbox benchmark's table and options, with the runners faked (no program runs)."""

import sys

import pytest

from benchmarks import sandbox_overhead as so


class _Sandbox:
    def __init__(self, config):
        pass

    def close(self):
        pass


def _fake(monkeypatch, cores):
    monkeypatch.setattr(so.os, "cpu_count", lambda: cores)
    monkeypatch.setattr(so, "namespaces_available", lambda: True)
    monkeypatch.setattr(so, "Sandbox", _Sandbox)
    monkeypatch.setattr(so, "sandbox_runner", lambda sb: lambda n_tests: None)
    monkeypatch.setattr(so, "bare_runner", lambda path: lambda n_tests: None)
    monkeypatch.setattr(so, "cold_start", lambda isolation: 0.0)
    written = {}
    monkeypatch.setattr(so, "write_report", lambda name, title, rows, notes, extra: written.update(rows=rows))
    return written


@pytest.mark.parametrize("cores", [2, 12, 16])
def test_rows_name_their_runner_whatever_the_core_count(monkeypatch, cores):
    written = _fake(monkeypatch, cores)
    monkeypatch.setattr(sys, "argv", ["sandbox_overhead", "--runs", "2", "--rounds", "1"])
    so.main()
    assert {r["runner"] for r in written["rows"]} == {"bare subprocess.run", "sandbox namespace", "sandbox process"}
    assert {r["workers"] for r in written["rows"]} == {1, cores}


@pytest.mark.parametrize("option", ["--runs", "--rounds"])
def test_bad_options_name_themselves_before_any_work(monkeypatch, option):
    written = _fake(monkeypatch, 2)
    monkeypatch.setattr(so, "Sandbox", None)  # any work would fail on it
    monkeypatch.setattr(sys, "argv", ["sandbox_overhead", option, "0"])
    with pytest.raises(SystemExit, match=option):
        so.main()
    assert not written
