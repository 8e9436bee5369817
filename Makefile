# dnabert-scaling: `make help` lists the targets.
# Every target that runs Python first creates/refreshes .venv from requirements/lock.txt.

SHELL       := /bin/bash
PYTHON      ?= python3
VENV        ?= .venv
VPY         := $(VENV)/bin/python
STAMP       := $(VENV)/.installed
CLI         := $(VENV)/bin/dnabert-scaling
OUT         ?= reproduce
PYTEST_ARGS ?=

.DEFAULT_GOAL := help
.PHONY: lint typecheck help venv test fuzz reproduce kick-tires refresh-reference refresh-report bench bench-train bench-read bench-trace bench-clock bench-report-size \
        lint-container image sweep-slurm clean

help: ## list the targets
	@echo "dnabert-scaling: DNABERT-2 DDP scaling study (traces, analysis, claims checker, report)"
	@echo
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  make %-18s %s\n", $$1, $$2}' $(MAKEFILE_LIST)
	@echo
	@echo "Variables: OUT=$(OUT) (reproduce output folder), PYTHON=$(PYTHON), PYTEST_ARGS=..."

# pip prints a warning for each find-links folder of this machine's pip.conf that does not exist:
# those lines are filtered out (pipefail keeps pip's exit status).
PIPQ := 2>&1 | { grep -v "is ignored: it is neither a file nor a directory" || true; }

$(STAMP): requirements/lock.txt pyproject.toml
	@test -x $(VPY) || $(PYTHON) -m venv $(VENV)
	set -o pipefail; $(VPY) -m pip install --quiet -r requirements/lock.txt $(PIPQ)
	set -o pipefail; $(VPY) -m pip install --quiet --no-deps --no-build-isolation -e . $(PIPQ)
	@touch $@

venv: $(STAMP) ## create/refresh the virtual environment (.venv) from the lock

test: $(STAMP) lint ## run the linter, then the test suite (CPU; SLURM, Chromium and real-CUPTI tests need .ci/run's set-up)
	$(VPY) -m pytest $(PYTEST_ARGS)

FUZZ_EXAMPLES ?= 300
fuzz: $(STAMP) ## generated bad inputs (mutated metrics, claims, traces): FUZZ_EXAMPLES (300) random examples each; make test runs 12, fixed
	DNABERT_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(VPY) -m pytest tests/test_fuzz.py $(PYTEST_ARGS)

lint: $(STAMP) typecheck ## typecheck, then ruff: pyflakes, likely bugs and the format check of the package, the scripts and the tests (settings in pyproject.toml)
	$(VPY) -m ruff check artifact scripts tests
	$(VPY) -m ruff format --check artifact scripts tests

typecheck: $(STAMP) ## type check of the ground-floor modules and the metrics schema (mypy, settings in pyproject.toml)
	$(VPY) -m mypy

reproduce: $(STAMP) ## the main job: GPU sweep where GPUs exist, else the embedded CPU default; then analysis, check, report
	$(VPY) scripts/reproduce.py --out $(OUT)

kick-tires: $(STAMP) ## analysis, checker and report on the traces shipped in expected/ (no GPU; median time in docs/timings/kick-tires.json)
	$(VPY) scripts/reproduce.py --kick-tires --out kick-tires

refresh-reference: kick-tires ## after an analysis change: copy what kick-tires re-derived into expected/reference-results/
	set -e; for d in kick-tires/reference-*/results; do set=$${d#kick-tires/reference-}; set=$${set%/results}; \
	  rm -rf expected/reference-results/$$set; cp -r $$d expected/reference-results/$$set; done
	cp kick-tires/report/report.html expected/reference-results/report.html

refresh-report: $(STAMP) ## after a report change: rebuild expected/reference-results/report.html from the shipped results as they are (not re-derived)
	$(VPY) scripts/refresh_report.py

bench: bench-train bench-read bench-hook bench-clock bench-report-size ## the CPU-runnable benchmarks (bench-kick-tires, which rewrites docs/timings/kick-tires.json, runs on its own)

bench-train: $(STAMP) ## training throughput, sdpa vs eager attention (median of repeats)
	$(VPY) scripts/bench_train.py

bench-read: $(STAMP) ## trace reading speed: read_run_traces + summarize vs a plain otf2 event loop
	$(VPY) scripts/bench_read.py

bench-trace: $(STAMP) ## tracing cost: one process per tracer mode, taking turns step by step, each step over the untraced one of its turn, ending with the default Score-P mode's targets judged by the 95% interval of the median (needs CUDA; the Score-P modes need Score-P; MODES=untraced,torch,... picks; SAMPLE=DIR also samples the steps' stacks, read with scripts/host_profile.py DIR)
	$(VPY) scripts/bench_trace.py $(if $(MODES),--modes $(MODES)) $(if $(SAMPLE),--sample $(SAMPLE)) --json bench-trace.json

bench-clock: ## what one clock reading costs here (clock_gettime through the C library and the system call, rdtsc): the timer's share of a trace event (needs a C compiler)
	mkdir -p build && $${CC:-cc} -O2 -o build/clock_cost scripts/clock_cost.c && build/clock_cost

bench-report-size: $(STAMP) ## bytes of report.html and of each zoomable timeline in it, built here from the shipped sets (BEFORE=FILE: next to an older report)
	$(VPY) scripts/bench_report_size.py $(BEFORE) --build

.PHONY: bench-hook
bench-hook: $(STAMP) ## cost of the DDP bucket hook: step time with / without it, side by side (CPU or one GPU)
	$(VPY) scripts/bench_bucket_hook.py

.PHONY: bench-kick-tires docs
bench-kick-tires: $(STAMP) ## time make kick-tires (3 runs): median, range, machine and date into docs/timings/kick-tires.json
	$(VPY) scripts/bench_timing.py kick-tires $(if $(NOTE),--note "$(NOTE)")

docs: $(STAMP) ## rewrite the generated figures of README.md, ARTIFACT.md and expected/README.md from the shipped files
	$(VPY) -m dnabert_scaling.tools docs

lint-container: $(STAMP) ## static checks of containers/dnabert-scaling.def and the shell scripts
	$(VPY) -m dnabert_scaling.tools lint-container containers/dnabert-scaling.def

image: ## build dnabert-scaling.sif with Apptainer (needs apptainer)
	containers/build.sh

SLURM_CONFIG ?= $(or $(DNABERT_SLURM_CONFIG),site.conf)
sweep-slurm: $(STAMP) ## submit the 1 -> 4 -> 8 GPU sweep to SLURM (settings: SLURM_CONFIG, default DNABERT_SLURM_CONFIG or site.conf)
	$(CLI) sweep --executor slurm --slurm-config $(SLURM_CONFIG) --gpus 1,4,8 --tracer auto --out runs

clean: ## remove outputs (not the venv)
	rm -rf runs results report reproduce kick-tires build bench-trace.json .pytest_cache .mypy_cache
