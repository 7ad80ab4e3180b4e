# rnnlab: the two commands a new reader or CI needs.
#   make book   set up .venv if needed, execute every notebook, build _build/html (warnings are errors)
#   make test   set up .venv if needed, run the whole test suite
# Set-up installs the pinned CPU torch wheel first (it lies on disk on the project's machines; elsewhere
# override it, e.g. `make test TORCH=torch`), then rnnlab with its book, test and cuda extras.

PYTHON ?= python3
VENV   ?= .venv
TORCH  ?= torch==2.13.0
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.rnnlab-installed
PIP    := $(PY) -m pip --disable-pip-version-check -q

.PHONY: env book test test-unit test-cudasim test-notebooks student test-student bench clean

$(PY):
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml | $(PY)
	$(PIP) install "$(TORCH)"
	$(PIP) install -e ".[book,test,cuda]"
	@touch $(STAMP)

env: $(STAMP)

book: $(STAMP)
	$(VENV)/bin/jupyter-book build . -W -n --keep-going
	@echo "The book is built: open $(CURDIR)/_build/html/index.html"

test: test-unit test-cudasim test-notebooks test-student

test-unit: $(STAMP)
	$(PY) -m pytest tests --ignore=tests/cudasim --ignore=tests/student

# The CUDA kernels, run by numba's CUDA simulator in a process of their own.
test-cudasim: $(STAMP)
	NUMBA_ENABLE_CUDASIM=1 $(PY) -m pytest tests/cudasim

# Every chapter re-executed; cells tagged nbval-check-output must reproduce their stored output.
test-notebooks: $(STAMP)
	$(PY) -m pytest --nbval-lax --nbval-current-env --nbval-sanitize-with book/nbval_sanitize.cfg \
		-p no:cacheprovider book

# The student notebooks (solutions removed) of every chapter, into student/ (committed;
# tests/test_exercises.py checks that the folder is current and leaks nothing).
student: $(STAMP)
	$(PY) -m rnnlab.book student student/

# Every student notebook runs top to bottom; the only errors are unfilled starters.
test-student: $(STAMP)
	$(PY) -m pytest -p no:cacheprovider tests/student

bench: $(STAMP)
	$(PY) -m rnnlab.bench scan

clean:
	rm -rf _build .pytest_cache
