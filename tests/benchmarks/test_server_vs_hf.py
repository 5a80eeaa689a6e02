"""The local vLLM server launcher fails early and says why (the real server runs in tests/vllm_server)."""

import shutil

import pytest

from benchmarks.server_vs_hf import local_server


def test_a_missing_vllm_python_names_the_make_target(tmp_path):
    with pytest.raises(FileNotFoundError, match="make test-vllm-cpu"):
        with local_server(str(tmp_path / "no-such-python"), tmp_path, 8, tmp_path / "server.log"):
            pass


def test_a_server_that_exits_is_reported_with_its_output(tmp_path):
    with pytest.raises(RuntimeError, match="did not come up"):
        with local_server(shutil.which("false"), tmp_path, 8, tmp_path / "server.log", timeout=30):
            pass
