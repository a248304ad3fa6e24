# Every target installs what it needs: a fresh machine with only Python is enough.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# One stamp per set of extras, so each target installs only what it needs: `make run` the demo
# ([demo]: numpy, jsonschema), everything else the tests' and the simulator's ([test,sim]), which
# a later `make test` adds to the same .venv.
STAMP := $(VENV)/.installed
DEMO_STAMP := $(VENV)/.installed-demo

.PHONY: run test lint typecheck imports unit bench compare record deps debs clean e2e-kind lock

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,sim]'
	touch $(STAMP)

$(DEMO_STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[demo]'
	touch $(DEMO_STAMP)

## make deps: what `make test` installs ([test,sim]), without running anything.
deps: $(STAMP)

## make run: the health-metric demo on the in-memory world (no cluster, no Prometheus).
## ARGS go to `tas run` as they are, e.g. make run ARGS="--dashboard 127.0.0.1:18080" when 8080
## is taken, or ARGS="--scenario psi-skewed --speed 10" (tas run --help lists them all).
ARGS ?=
run: $(DEMO_STAMP)
	$(BIN)/tas run $(ARGS)

## make test: lint, types, layers and every test. This is what CI runs.
test: lint typecheck imports unit

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

imports: $(STAMP)
	$(BIN)/lint-imports

## make debs: the real prometheus and node-exporter the metrics integration tests start.
debs:
	sh scripts/ensure-debs.sh
	sh scripts/ensure-browser.sh

## make unit: every test, on every core (pytest-xdist: -n auto starts one worker per core; each
## test owns its ports and temporary directories). --dist loadfile keeps a test file on one worker,
## so a file's module-scoped fixtures (a Prometheus, a module's simulator runs) are built once, not
## once per worker. --durations=20 prints the 20 slowest tests at the end.
unit: $(STAMP) debs
	$(BIN)/python -m pytest -q -n auto --dist loadfile --durations=20

## make bench: speed and scale figures, each printed next to a floor measured in the same run.
bench: $(STAMP)
	$(BIN)/python -m benchmarks

## make compare: the evidence behind the README's comparison: every named scenario on 5 seeds,
## 100 scenarios drawn from the default family and 50 from large-slow (larger fleets, slower
## pipelines and start-ups, another PSI model) on 5 seeds, each family twice: at its own seed
## and at family seed $(FRESH_FAMILY_SEED), a fresh draw no default was tuned on (each seed is
## one world every contender meets: the sweeps compare them paired). On every core; under two
## hours on 2 (why these counts: docs/decisions.md, "make compare's size"). A larger draw
## decides what these leave UNDECIDED: `make compare DEFAULT_COUNT=320` (docs/decisions.md,
## "Deciding a goal make compare leaves UNDECIDED"). CARRY_OVER=DIR (below) takes an earlier
## comparison's runs where this code reproduces them. Then docs/results.md and README.md's
## results section written from those outputs (tas_simulator/results_doc.py). Interrupted, it
## resumes: each sweep reuses the runs its journal holds for the same code (tas sweep --fresh).
FRESH_FAMILY_SEED = 20261201
DEFAULT_COUNT ?= 100
LARGE_SLOW_COUNT ?= 50
## A fresh draw may be sized apart from its family's shipped one: the record (record/) is
## `make compare DEFAULT_COUNT=320 LARGE_SLOW_FRESH_COUNT=200` (docs/decisions.md, "make compare's size").
DEFAULT_FRESH_COUNT ?= $(DEFAULT_COUNT)
LARGE_SLOW_FRESH_COUNT ?= $(LARGE_SLOW_COUNT)
## `make compare CARRY_OVER=DIR`: an earlier comparison folder whose sweeps' runs are taken for
## every row this code reproduces on one seed of each scenario (tas sweep --carry-over;
## docs/reference.md, "Carrying runs over"): after a change to ours, ours runs and the rest
## mostly does not.
CARRY_OVER ?=
carry_over = $(if $(CARRY_OVER),--carry-over $(CARRY_OVER)/$(1))
compare: $(STAMP)
	mkdir -p comparison
	test ! -d record || $(BIN)/python -m tas_simulator.record restore --if-same-code
	(git describe --always --dirty --abbrev=7 2>/dev/null || true) > comparison/commit.txt
	$(BIN)/tas simulate --all --seeds 5 --out comparison/simulate
	$(BIN)/tas sweep --family default --count $(DEFAULT_COUNT) --seeds 5 --out comparison/sweep-default \
		$(call carry_over,sweep-default)
	$(BIN)/tas sweep --family default --count $(DEFAULT_FRESH_COUNT) --seeds 5 --family-seed $(FRESH_FAMILY_SEED) \
		--out comparison/sweep-default-fresh $(call carry_over,sweep-default-fresh)
	$(BIN)/tas sweep --family large-slow --count $(LARGE_SLOW_COUNT) --seeds 5 --out comparison/sweep-large-slow \
		$(call carry_over,sweep-large-slow)
	$(BIN)/tas sweep --family large-slow --count $(LARGE_SLOW_FRESH_COUNT) --seeds 5 --family-seed $(FRESH_FAMILY_SEED) \
		--out comparison/sweep-large-slow-fresh $(call carry_over,sweep-large-slow-fresh)
	$(BIN)/python -m tas_simulator.results_doc comparison --out docs/results.md --readme README.md

## make record: pack comparison/ into record/ (tas_simulator/record.py): each sweep's journal and
## drawn scenarios, the named scenarios' summary and the commit, for git. make compare resumes
## from it while the run code is the same, so the hours of a record outlive the machine that ran
## them (docs/reference.md, "The record in the repository").
record: $(STAMP)
	$(BIN)/python -m tas_simulator.record save

## make lock: the hashed lock files, from pyproject.toml: requirements.lock (the base install, what
## the image installs), requirements-demo.lock, requirements-sim.lock and requirements-test.lock
## (the base and those extras; test: make test's [test,sim]), and requirements-build.lock (the
## image's build backend). Each is `pip install --require-hashes --no-deps -r FILE`-ready, for
## Python 3.11 on every platform; a pin moves only when pyproject.toml asks, or with
## `make lock LOCK_FLAGS=--upgrade`. tests/test_lock.py fails when a lock is out of date.
LOCK_FLAGS ?=
UV_COMPILE = $(BIN)/uv pip compile --quiet --generate-hashes --universal --python-version 3.11 \
	--custom-compile-command 'make lock' $(LOCK_FLAGS)
lock:
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet 'uv>=0.5'
	$(UV_COMPILE) pyproject.toml -o requirements.lock
	$(UV_COMPILE) pyproject.toml --extra demo -o requirements-demo.lock
	$(UV_COMPILE) pyproject.toml --extra sim -o requirements-sim.lock
	$(UV_COMPILE) pyproject.toml --extra test --extra sim -o requirements-test.lock
	$(BIN)/python -c 'import tomllib; print(*tomllib.load(open("pyproject.toml", "rb"))["build-system"]["requires"], sep="\n")' \
		| $(UV_COMPILE) - -o requirements-build.lock

## make e2e-kind: the kind walkthrough (docs/deploy.md): a cluster with the extender wired in,
## the image, the metrics pipeline and the health demo. Opt-in; skips where docker or kind is missing.
e2e-kind:
	bash scripts/e2e-kind.sh

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
