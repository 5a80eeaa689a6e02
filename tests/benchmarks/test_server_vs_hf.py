"""The local vLLM server launcher and the benchmark's options fail early and say why
(the real server runs in tests/vllm_server)."""

import shutil
import sys

import pytest

from benchmarks import server_vs_hf
from benchmarks.server_vs_hf import local_server


def test_a_missing_vllm_python_names_the_make_target(tmp_path):
    with pytest.raises(FileNotFoundError, match="make test-vllm-cpu"):
        with local_server(str(tmp_path / "no-such-python"), tmp_path, 8, tmp_path / "server.log"):
            pass


def test_a_server_that_exits_is_reported_with_its_output(tmp_path):
    with pytest.raises(RuntimeError, match="did not come up"):
        with local_server(shutil.which("false"), tmp_path, 8, tmp_path / "server.log", timeout=30):
            pass


def _no_work(*_):
    raise AssertionError("work started")


@pytest.mark.parametrize("bad, option", [({"rounds": 0}, "--rounds"), ({"n": 0}, "--n"), ({"prompts": 0}, "--prompts"),
                                         ({"vllm_python": "/no/such/python"}, "--vllm-python")])
def test_bad_options_name_themselves_before_any_work(tmp_path, monkeypatch, bad, option):
    monkeypatch.setattr(server_vs_hf, "run", _no_work)
    with pytest.raises(SystemExit, match=option):
        server_vs_hf.main(server_vs_hf.Args(**{"vllm_python": sys.executable, **bad}, results_dir=str(tmp_path)))
    assert not any(tmp_path.iterdir())


def test_the_file_names_the_command_that_made_it(tmp_path, monkeypatch):
    res = {"rates": {"HF (in-process)": [10.0], "vLLM server": [20.0]}, "tokens": {"HF (in-process)": [5], "vLLM server": [6]},
           "reload_s": [0.5], "save_s": [0.1], "startup_s": 30.0}
    monkeypatch.setattr(server_vs_hf, "run", lambda args: res)
    server_vs_hf.main(server_vs_hf.Args(vllm_python=sys.executable, rounds=1, results_dir=str(tmp_path)))
    assert "--rounds 1" in (tmp_path / "server_vs_hf.md").read_text()
