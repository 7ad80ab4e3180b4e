# rnnlab: the two commands a new reader or CI needs.
#   make book   set up .venv if needed, execute every notebook, build _build/html (warnings are errors)
#   make test   set up .venv if needed, run the whole test suite
#   make test-gpu   on a machine with an NVIDIA GPU: the CUDA kernels on it, then the benchmarks' GPU rows
# Set-up installs the pinned CPU torch wheel first (it lies on disk on the project's machines; elsewhere
# override it, e.g. `make test TORCH=torch`), then rnnlab with its book, test and cuda extras.

PYTHON ?= python3
VENV   ?= .venv
TORCH  ?= torch==2.13.0
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.rnnlab-installed
PIP    := $(PY) -m pip --disable-pip-version-check -q

.PHONY: env book test test-unit test-lint test-widgets-ipywidgets7 test-cudasim test-notebooks test-fp editions figures student slides \
	test-student \
	test-browser test-gpu bench clean

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

test: test-unit test-lint test-widgets-ipywidgets7 test-cudasim test-notebooks test-fp test-browser test-student

# RNNLAB_IPYWIDGETS_MAJOR: tests/test_widgets_compat.py asserts which ipywidgets was imported.
# tests/ensure_bwrap.sh: bubblewrap, the sandbox of `python -m rnnlab grade` (apt-get when root, else a message).
test-unit: $(STAMP)
	sh tests/ensure_bwrap.sh
	RNNLAB_IPYWIDGETS_MAJOR=8 $(PY) -m pytest tests --ignore=tests/cudasim --ignore=tests/student --ignore=tests/gpu \
		--ignore=tests/browser --durations=25

# The widget tests again under ipywidgets 7.7, the version Colab preinstalls, from a prefix of
# its own (.venv keeps ipywidgets 8; installed once, re-made when .venv is). ipywidgets 7.7.1's
# own requirement ranges pick its front-end packages; --no-deps: the rest comes from .venv.
IPYWIDGETS7      := $(VENV)/ipywidgets7
IPYWIDGETS7_REQS := "ipywidgets==7.7.1" "widgetsnbextension~=3.6.0" "jupyterlab_widgets>=1.0.0,<2" \
	"ipython_genutils~=0.2.0"

$(IPYWIDGETS7)/.installed: $(STAMP)
	rm -rf $(IPYWIDGETS7)
	$(PIP) install --no-deps --no-compile --target $(IPYWIDGETS7) $(IPYWIDGETS7_REQS)
	@touch $@

test-widgets-ipywidgets7: $(IPYWIDGETS7)/.installed
	PYTHONPATH=$(abspath $(IPYWIDGETS7)) RNNLAB_IPYWIDGETS_MAJOR=7 $(PY) -m pytest -p no:cacheprovider \
		-W "ignore::DeprecationWarning:ipywidgets.widgets.widget" tests/test_widgets*.py

# The CUDA kernels, run by numba's CUDA simulator in a process of their own.
test-cudasim: $(STAMP)
	NUMBA_ENABLE_CUDASIM=1 $(PY) -m pytest tests/cudasim

# Every chapter re-executed; cells tagged nbval-check-output must reproduce their stored output.
# One thread per notebook and two notebooks side by side, as in test-fp below (NOTEBOOK_WORKERS).
test-notebooks: $(STAMP)
	$(ONE_THREAD) $(PY) -m pytest --nbval-lax --nbval-current-env --nbval-sanitize-with book/nbval_sanitize.cfg \
		-p no:cacheprovider -n $(NOTEBOOK_WORKERS) --dist loadscope book

# The same checks under another floating-point path, so that no checked output or committed figure
# depends on the last bit of a float (CONTRIBUTING.md, "Checked outputs hold on every machine"): torch
# without its vectorised kernels, numpy's OpenBLAS with an old x86 kernel, MKL limited to SSE4.2, numba
# compiling for a generic CPU (no FMA, no wide vectors, into a cache folder of its own), one thread.
# The schematics must come out byte for byte, every nbval-check-output cell must reproduce.
# (OpenBLAS's and MKL's x86 kernels are chosen on x86-64 only; tools/fp_path.py fails when a variable set
# here is not honoured.)
# test-fp and test-student run one thread per notebook, so two notebooks run side by side
# (pytest-xdist; --dist loadscope keeps each notebook's cells on one worker, in order).
NOTEBOOK_WORKERS ?= 2
ONE_THREAD := OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1
FP_ENV := ATEN_CPU_CAPABILITY=default NUMBA_CPU_NAME=generic NUMBA_CACHE_DIR=$(abspath $(VENV))/numba-cache-fp \
	OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1 \
	$(if $(filter x86_64,$(shell uname -m)),OPENBLAS_CORETYPE=Prescott MKL_ENABLE_INSTRUCTIONS=SSE4_2)

test-fp: $(STAMP)
	$(FP_ENV) $(PY) tools/fp_path.py
	$(FP_ENV) $(PY) -m pytest -p no:cacheprovider -q tests/test_figures.py
	$(FP_ENV) $(PY) -m pytest --nbval-lax --nbval-current-env --nbval-sanitize-with book/nbval_sanitize.cfg \
		-p no:cacheprovider -n $(NOTEBOOK_WORKERS) --dist loadscope book

# The book built from the notebooks' stored outputs (execution off, warnings are errors) into a
# folder of its own (pytest's temporary one; RNNLAB_BROWSER_BUILD=dir keeps it), then every page in
# headless Chromium with no network (console errors, failed requests, math, widget snapshots, links),
# every widget live under Voila, with a kernel, and a few notebooks of full/ and student/ in a real
# JupyterLab 4, their links checked against the built book (tests/browser).
# ensure_chromium.sh finds Chromium or installs it (Debian's package when root, else Playwright's).
test-browser: $(STAMP)
	sh tests/browser/ensure_chromium.sh $(PY)
	$(PY) -m pytest -p no:cacheprovider tests/browser

# The notebook editions that Colab and Jupyter open, generated from the chapters (MyST converted to
# Markdown): full/ (solutions folded) and student/ (no solutions), both committed;
# tests/test_editions.py checks that they are current and hold no MyST, tests/test_exercises.py
# that the student edition leaks nothing. `make student` is the old name. The course kit's exercise
# tables and term plans (book/teaching.md) are rewritten from the chapters too.
editions: $(STAMP)
	$(PY) -m rnnlab.book editions
	$(PY) -m rnnlab.checks.grade.kit
	$(PY) -m rnnlab.course.plan

student: editions

# The book's schematics (rnnlab.figures), drawn by code into book/<chapter>/figures/*.svg (the online
# book) and *.png beside them (the notebook editions); tests/test_figures.py checks that both are current.
figures: $(STAMP)
	$(PY) -m rnnlab.figures

# The lecture slides: one HTML deck per chapter, written from its pages (schematics, key equations,
# summaries, the term plan's weeks, the exercises), MathJax copied beside them: open _build/slides/index.html.
# tests/test_slides.py and tests/browser/test_slides.py check them.
slides: $(STAMP)
	$(PY) -m rnnlab course-slides --out _build/slides

# The conventions of CONTRIBUTING.md, checked on every chapter notebook: the report lists what
# each notebook lacks; it fails only for the chapters of book/conforming.txt.
test-lint: $(STAMP)
	$(PY) -m rnnlab.book lint

# Every student notebook runs top to bottom; the only errors are unfilled starters.
test-student: $(STAMP)
	$(ONE_THREAD) $(PY) -m pytest -p no:cacheprovider -n $(NOTEBOOK_WORKERS) tests/student

# Every CUDA kernel on a real GPU against its torch reference (tests/gpu), then the GPU rows of the
# benchmarks (scan, lds, memory, cells): tools/gpu_check.py, which installs nothing and writes
# gpu_check.json and gpu_check.md (bench-results/gpu-check/). Fails with "no CUDA device" where there
# is none. First, a CPU build of torch in .venv is replaced by $(TORCH) when the driver lists a GPU:
# `make test-gpu TORCH=torch` takes PyPI's CUDA build. (On a machine that has its CUDA torch already,
# `python3 tools/gpu_check.py --out DIR` alone; its dry run is part of make test-unit.)
test-gpu: $(STAMP)
	$(PY) tests/gpu/prepare.py --torch '$(TORCH)'
	$(PY) tools/gpu_check.py --out bench-results/gpu-check

bench: $(STAMP)
	$(PY) -m rnnlab.bench scan

clean:
	rm -rf _build .pytest_cache
