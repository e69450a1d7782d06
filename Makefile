# The two commands of the quick start: `make demo` and `make test`.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test soak bench bench-multihost bench-peers install clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/ontoflow run configs/examples/building_report/workflow.yaml --input obdc.base.lang.code=pt_BR

# The suite runs on TEST_WORKERS processes (pytest-xdist), a test file kept on one of them so its
# module fixtures (a daemon, a set of namespaces) are built once; most tests wait on real processes.
TEST_WORKERS ?= 2

test: $(STAMP)
	$(BIN)/python -m pytest -m "not soak" -n $(TEST_WORKERS) --dist loadfile

soak: $(STAMP)
	ONTOFLOW_FIGURES=out/soak-figures.json $(BIN)/python -m pytest -m "soak or figures"

# Benchmarks: the bench extra (matplotlib) in the project venv; the peers in their own venv.
BENCH_STAMP := $(VENV)/.bench-installed
PEERS_VENV := bench/.venv-peers
PEERS := langgraph apache-burr ray 'celery[redis]' redis msgspec pyzmq matplotlib psutil

$(BENCH_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[bench]'
	touch $(BENCH_STAMP)

bench: $(BENCH_STAMP)
	$(BIN)/python -m bench

# Through the daemon (plain runs and runs carrying inputs, 1, 2 and 4 workers); then
# `$(BIN)/python -m bench.readme_table` copies its table into the README.
bench-multihost: $(BENCH_STAMP)
	$(BIN)/python -m bench.multihost_bench > bench/results/multihost.jsonl

$(PEERS_VENV)/.installed:
	$(PYTHON) -m venv $(PEERS_VENV)
	$(PEERS_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(PEERS_VENV)/bin/python -m pip install --quiet $(PEERS)
	touch $@

bench-peers: $(PEERS_VENV)/.installed $(BENCH_STAMP)
	$(PEERS_VENV)/bin/python -m bench.peers
	$(BIN)/python -m bench --render

clean:
	rm -rf $(VENV) out build *.egg-info
