# The two commands of the quick start: `make demo` and `make test`.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test soak bench install clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/ontoflow run configs/examples/building_report/workflow.yaml --input obdc.base.lang.code=pt_BR

test: $(STAMP)
	$(BIN)/python -m pytest -m "not soak"

soak: $(STAMP)
	$(BIN)/python -m pytest -m soak

bench: $(STAMP)
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) out build *.egg-info
