"""The example scripts, loaded as modules, on one thread."""

import importlib.util
import sys
from pathlib import Path

import pytest
import torch

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture
def load_example():
    """examples/ is not a package: `load_example(name)` loads `examples/<name>.py` as a module (registered in
    sys.modules first, as its dataclasses need)."""
    def load(name: str):
        spec = importlib.util.spec_from_file_location(f"examples_{name}", EXAMPLES / f"{name}.py")
        mod = sys.modules[spec.name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod
    return load


@pytest.fixture
def one_thread():
    """Examples run with threads=1 here (two contend badly on a shared machine); the session's setting comes back after."""
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)
