# Two entry points: `make demo` (install + predict on bundled data), `make test` (install + tests).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# torch must be the local CPU build, installed before anything that depends on it
# (any other torch spec pulls several GB of CUDA packages).
WHEELS := $(if $(wildcard /opt/wheels),--find-links /opt/wheels,)

.PHONY: install install-dev demo test lab-test bench bench-ops fuzz clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# builds the compiled simulator core too (Cython and the C compiler, ~35 s on 2 cores)
install: $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .

install-dev: $(BIN)/python
	$(BIN)/python -m pip install --quiet $(WHEELS) torch==2.13.0
	$(BIN)/python -m pip install --quiet $(WHEELS) -e ".[dev,torch,plot,dask,ops,postgres]"

demo: install
	$(BIN)/sgdsim info examples/profiles/resnet50.json
	$(BIN)/sgdsim predict examples/profiles/resnet50.json --workers 1,2,4,8,16 --bandwidth 10Gbps

test: install-dev
	$(BIN)/ruff check src tests benchmarks examples tools
	$(BIN)/lint-imports
	$(BIN)/python -m pytest

# Real-lab measurements (root, ~5 min): run on a quiet machine, nothing else busy.
lab-test: install-dev
	$(BIN)/python -m pytest -m lab

bench: install
	$(BIN)/python benchmarks/bench_sim.py --write
	$(BIN)/python benchmarks/bench_sweep.py --write
	$(BIN)/python benchmarks/bench_warmup.py --write
	$(BIN)/python benchmarks/bench_coarse.py --write
	$(BIN)/python benchmarks/bench_mva.py --write
	$(BIN)/python benchmarks/bench_plan.py --write
	$(BIN)/python benchmarks/bench_optimize.py --write
	$(BIN)/python benchmarks/bench_multigpu.py --write
	$(BIN)/python benchmarks/bench_scaling.py --write
	$(BIN)/python benchmarks/bench_user.py --write

bench-ops: install-dev
	$(BIN)/python benchmarks/bench_opsdb.py --write
	$(BIN)/python benchmarks/bench_ops_estimate.py --write
	$(BIN)/python benchmarks/bench_ops_path.py --write

# The 775-input black-box run of issue 10 (~14 min on 2 cores): every invocation exits 0 or 2
# with one line, never a traceback, a hang, a nan row or an overwritten file.
fuzz: install
	$(BIN)/python tools/fuzz_cli.py --seed 1 --n 775 --out fuzz-report.json

clean:
	rm -rf $(VENV) build src/*.egg-info src/sgdsim/_core.pyx src/sgdsim/_core.c src/sgdsim/_core*.so
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
