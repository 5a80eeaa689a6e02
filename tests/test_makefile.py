"""The Makefile's install: torch's CPU build first, from TORCH_INDEX when the default index serves CUDA."""

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _dry_run(*extra: str) -> list[str]:
    r = subprocess.run(["make", "-n", "-B", "install", "VENV=/nonexistent/venv", *extra], cwd=ROOT, capture_output=True,
                       text=True, check=True)
    return [line for line in r.stdout.splitlines() if "pip install" in line]


@pytest.mark.parametrize("index", ["", "https://download.pytorch.org/whl/cpu"])
def test_torch_is_installed_first_and_pinned(index):
    lines = _dry_run(*([f"TORCH_INDEX={index}"] if index else []))
    torch_line = next(i for i, line in enumerate(lines) if "torch==2.13.0" in line)
    project_line = next(i for i, line in enumerate(lines) if "-e '.[" in line)
    assert torch_line < project_line
    assert ("--index-url " + index in lines[torch_line]) if index else "--index-url" not in lines[torch_line]
    assert all("--index-url" not in line for line in lines if "torch==" not in line)  # only torch comes from it
