# Two commands: `make lab` to study, `make test` to check everything.
# Both create .venv on first use and reinstall only when pyproject.toml changes.

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PY     := $(BIN)/python
PYTEST_WORKERS ?= auto

.PHONY: lab test lint typecheck notebooks release clean

$(PY):
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else "perfmodel needs Python 3.10 or newer; found " + sys.version.split()[0] + ". Run: make PYTHON=python3.12 ...")'
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(VENV)/.installed-lab: pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e .
	@touch $@

$(VENV)/.installed-test: pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e ".[test]"
	@touch $@ $(VENV)/.installed-lab

# Jupyter refuses to run as root (a container, CI) unless told it is on purpose.
ALLOW_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root)

lab: $(VENV)/.installed-lab
	$(BIN)/jupyter lab $(ALLOW_ROOT) notebooks/00_start_here.ipynb

lint: $(VENV)/.installed-test
	$(BIN)/ruff check src tests notebooks exercises
	$(BIN)/ruff format --check src tests

typecheck: $(VENV)/.installed-test
	$(BIN)/mypy src

test: lint typecheck
	$(BIN)/pytest -n $(PYTEST_WORKERS) --dist loadscope

# Re-run every notebook and store its outputs (after editing one). The nbconvert command
# line occasionally waits forever for a reply its kernel never sends (seen with ipykernel 6
# and 7 alike); the timeout turns that into an error to retry instead of a hang.
notebooks: $(VENV)/.installed-test
	$(BIN)/jupyter nbconvert --to notebook --execute --inplace \
		--ExecutePreprocessor.record_timing=False --ExecutePreprocessor.timeout=120 \
		notebooks/*.ipynb

release: $(VENV)/.installed-lab
	$(BIN)/perfmodel release

clean:
	rm -rf $(VENV) dist test-output .pytest_cache .mypy_cache .ruff_cache
