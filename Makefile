# Every target installs what it needs: a fresh machine with only Python is enough.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint typecheck imports unit bench compare deps debs clean e2e-kind

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,sim]'
	touch $(STAMP)

deps: $(STAMP)

## make run: the health-metric demo on the embedded default (no cluster, no Prometheus).
run: $(STAMP)
	$(BIN)/tas run

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

unit: $(STAMP) debs
	$(BIN)/python -m pytest -q

## make bench: speed and scale figures, each printed next to a floor measured in the same run.
bench: $(STAMP)
	$(BIN)/python -m benchmarks

## make compare: the evidence behind the README's comparison: every named scenario on 5 seeds,
## and 200 scenarios drawn from the default family on 3 seeds, on every core (about an hour on 2).
compare: $(STAMP)
	$(BIN)/tas simulate --all --seeds 5 --out comparison/simulate
	$(BIN)/tas sweep --family default --count 200 --seeds 3 --out comparison/sweep

## make e2e-kind: the kind walkthrough (docs/deploy.md): a cluster with the extender wired in,
## the image, the metrics pipeline and the health demo. Opt-in; skips where docker or kind is missing.
e2e-kind:
	bash scripts/e2e-kind.sh

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
