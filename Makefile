# Two commands: `make lab` to study, `make test` to check everything.
# Both create .venv on first use and reinstall only when pyproject.toml changes.
# Instructors: `make student` writes the student edition, `make dist` a wheel and an sdist.

PYTEST_WORKERS ?= auto
LECTURE ?= 00

# The student's part (the venv, the lectures' install, `make lab`) is shared with the student
# edition, which ships this file and a Makefile of two lines.
include jupyter/lab.mk

.PHONY: demo book test test-fast test-lecture lint typecheck notebooks release student dist clean

$(VENV)/.installed-course: pyproject.toml jupyter/overrides.json | $(PY)
	$(PY) -m pip install --quiet -e ".[all]"
	mkdir -p $(LAB_SETTINGS) && cp jupyter/overrides.json $(LAB_SETTINGS)/overrides.json
	@touch $@ $(VENV)/.installed-lab

$(VENV)/.installed-test: pyproject.toml jupyter/overrides.json | $(PY)
	$(PY) -m pip install --quiet -e ".[test]"
	mkdir -p $(LAB_SETTINGS) && cp jupyter/overrides.json $(LAB_SETTINGS)/overrides.json
	@touch $@ $(VENV)/.installed-lab $(VENV)/.installed-course

# A lecture as live slides for a lecturer: `make demo LECTURE=04` (Voilà's reveal.js
# template, with reveal.js's styles from the package: nothing is fetched). `make demo
# LECTURE="06 --rerun"` runs every cell live.
demo: $(VENV)/.installed-course
	$(BIN)/perfmodel demo $(LECTURE)

# Every lecture as a static HTML site that works offline, in build/book (index.html).
book: $(VENV)/.installed-course
	$(BIN)/perfmodel book

lint: $(VENV)/.installed-test
	$(BIN)/ruff check conftest.py src tests benchmarks notebooks exercises
	$(BIN)/ruff format --check conftest.py src tests benchmarks notebooks

typecheck: $(VENV)/.installed-test
	$(BIN)/mypy src benchmarks

# An expensive test file (a lecture, a grading batch, the browser) whose inputs passed before,
# unchanged, is skipped (tests/unchanged.py); `make test FRESH=1` runs everything.
test: lint typecheck
	PERFMODEL_TEST_FRESH=$(FRESH) $(BIN)/pytest -n $(PYTEST_WORKERS) --dist loadscope

# The quick loop while editing the package: unit and property tests and the docstrings, without
# the notebooks, the workbooks, grading and the browser.
test-fast: $(VENV)/.installed-test
	$(BIN)/pytest -n $(PYTEST_WORKERS) --dist loadscope -m "not slow and not browser" tests src \
		--ignore=tests/test_notebooks.py --ignore=tests/test_workbooks.py \
		--ignore-glob="tests/test_grading*.py"

# One lecture and its workbook: `make test-lecture LECTURE=04`.
test-lecture: $(VENV)/.installed-test
	$(BIN)/pytest -n $(PYTEST_WORKERS) --dist loadscope notebooks/$(LECTURE)_*.ipynb \
		exercises/$(LECTURE)_*.ipynb exercises/masters/$(LECTURE)_*.ipynb \
		tests/test_notebooks.py tests/test_workbooks.py -k "$(LECTURE)_"

# Re-run every notebook and store its outputs (after editing one). nbconvert used to wait out
# a whole cell timeout now and then: its stand-in for an ipywidgets Output widget sends on
# the kernel's shell channel while it waits there for the cell's reply, and that send can
# swallow the reply's wake-up (jupyter/nbclient#312). The explorers no longer display into
# an Output widget (tests/test_headless.py; benchmarks/headless.py runs lectures 20 times
# beside a CPU hog); the timeout only bounds a cell that really hangs.
notebooks: $(VENV)/.installed-test
	$(BIN)/jupyter nbconvert --to notebook --execute --inplace \
		--ExecutePreprocessor.record_timing=False --ExecutePreprocessor.timeout=120 \
		notebooks/*.ipynb

release: $(VENV)/.installed-course
	$(BIN)/perfmodel release

# The student edition: lectures, student workbooks, the package and a student README; no
# masters, hidden tests or autograder zips, and no history. `make student OUT=../class-2027`;
# it must lie outside this folder.
OUT ?= ../$(notdir $(CURDIR))-student
student: $(VENV)/.installed-course
	$(BIN)/perfmodel student $(OUT)

# A wheel and an sdist in dist/, the catalogue data inside (nothing is published).
dist: $(VENV)/.installed-course
	rm -f dist/perfmodel-*.whl dist/perfmodel-*.tar.gz
	$(PY) -m build --outdir dist .

clean:
	rm -rf $(VENV) dist build test-output .pytest_cache .mypy_cache .ruff_cache
