# Two entry points: `make demo` (install + predict on bundled data), `make test` (install + tests).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: install demo test bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

install: $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[fast,dev]"

demo: install
	$(BIN)/sgdsim info examples/profiles/resnet50.json
	$(BIN)/sgdsim predict examples/profiles/resnet50.json --workers 1,2,4,8,16 --bandwidth 10Gbps

test: install
	$(BIN)/python -m pytest

bench: install
	$(BIN)/python benchmarks/bench_sim.py --write

clean:
	rm -rf $(VENV) build src/*.egg-info
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
