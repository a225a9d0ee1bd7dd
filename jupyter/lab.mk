# The student's part of the course's Makefile: a venv in .venv, the lectures' install, and
# `make lab`. Included by the course's Makefile and by the student edition's.

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PY     := $(BIN)/python

.PHONY: lab

$(PY):
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else "perfmodel needs Python 3.10 or newer; found " + sys.version.split()[0] + ". Run: make PYTHON=python3.12 ...")'
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

# JupyterLab's own settings for this course: no "news" popup over the outputs, no update check.
LAB_SETTINGS := $(VENV)/share/jupyter/lab/settings

# What the lectures and workbooks need (JupyterLab, widgets, plots, MPI for lecture 09, ONNX
# for lecture 12); the instructors' tools (otter-grader, Voila, the book) are the `course` extra.
LECTURE_EXTRAS := lab,mpi,capstone

$(VENV)/.installed-lab: pyproject.toml jupyter/overrides.json | $(PY)
	$(PY) -m pip install --quiet -e ".[$(LECTURE_EXTRAS)]"
	mkdir -p $(LAB_SETTINGS) && cp jupyter/overrides.json $(LAB_SETTINGS)/overrides.json
	@touch $@

# Jupyter refuses to run as root (a container, CI) unless told it is on purpose. Kernel
# websockets send each message at once (perfmodel.present.websocket: 40 ms less a move).
ALLOW_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root)

# The server's root is this folder, so notebooks/ and exercises/ are both a click away.
lab: $(VENV)/.installed-lab
	$(BIN)/jupyter lab $(ALLOW_ROOT) --LabApp.news_url= \
		--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate \
		--ServerApp.kernel_websocket_connection_class=perfmodel.present.websocket.NoDelayKernelConnection \
		--ServerApp.root_dir="$(CURDIR)" notebooks/00_start_here.ipynb
