# The front door: every target installs what it needs first. CI runs `make test` (see .ci/run).
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CONSTRAINTS := requirements/constraints.txt
PYTEST_ARGS ?=
# `make test` and `make test-deep` run the suite in PYTEST_WORKERS processes (pytest-xdist): each
# test goes to whichever process is free, but a module with a module-scoped fixture (sam build, the
# stack on moto, a bench run) runs whole in one, so the fixture is set up once (tests/conftest.py);
# each process starts its own local stack for the local tier. PYTEST_WORKERS=0: one process.
PYTEST_WORKERS ?= 2
PARALLEL := -n $(PYTEST_WORKERS) --dist loadgroup

.DEFAULT_GOAL := help
.PHONY: help install system-packages test test-deep test-unit test-integration test-local test-e2e soak lint format docs reference demo bench figures build validate requirements lock clean security

help: ## List the targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F ':.*## ' '{printf "  make %-18s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml $(CONSTRAINTS)
	@command -v $(PYTHON) >/dev/null || { echo "error: $(PYTHON) not found; install Python 3.11" >&2; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c $(CONSTRAINTS) -e '.[dev]'
	touch $(STAMP)

install: $(STAMP) ## Create .venv and install the package with its pinned dev dependencies

system-packages: ## Install the tools the tests drive (Chromium and its driver, redis-server, Java, npm) from apt when absent; fails naming them when it cannot (not root, no apt)
	@bash scripts/install_system_packages.sh

test: install system-packages lint docs ## Lint and build the docs, then run the unit, integration (moto) and local (DynamoDB Local) tiers; tests/e2e needs a deployed stack: make test-e2e; the long-running ones bounded (docs/contributing/testing.md)
	$(BIN)/pytest $(PARALLEL) $(PYTEST_ARGS)

test-deep: install system-packages ## The tiers of `make test` with the long-running tests at full size (SEATS_TEST_DEPTH=deep: the model-based search, the soak, ...)
	SEATS_TEST_DEPTH=deep $(BIN)/pytest $(PARALLEL) $(PYTEST_ARGS)

test-unit: install ## Pure logic, no network
	$(BIN)/pytest tests/unit $(PYTEST_ARGS)

test-integration: install ## The real handler and adapters on moto
	$(BIN)/pytest tests/integration $(PYTEST_ARGS)

test-e2e: install ## Against a deployed stack: SEATS_STACK_NAME=<stack> AWS_REGION=<region> make test-e2e (not in `make test`)
	$(BIN)/pytest tests/e2e $(PYTEST_ARGS)

test-local: install system-packages ## Concurrency and end-to-end on DynamoDB Local + moto server
	$(BIN)/pytest tests/local $(PYTEST_ARGS)

soak: install ## The full soak on the local stack: 50,000 requests (or SEATS_SOAK_REQUESTS), figures printed
	SEATS_SOAK_REQUESTS=$${SEATS_SOAK_REQUESTS:-50000} $(BIN)/pytest tests/local/test_soak.py -s $(PYTEST_ARGS)

lint: install ## ruff, ruff format --check, mypy, the service's code shape (xenon; radon cc <= 15, functions <= 60 lines, classes <= 300), cfn-lint and sam validate --lint on template.yaml; the generated reference pages current
	$(BIN)/ruff check src tests scripts
	$(BIN)/ruff format --check src tests scripts
	$(BIN)/mypy
	$(BIN)/xenon --max-absolute C src/seat_inventory
	$(BIN)/python scripts/check_code_shape.py
	$(BIN)/cfn-lint template.yaml
	$(BIN)/sam validate --lint --region us-east-1 >/dev/null
	$(BIN)/python scripts/gen_reference.py --check

format: install ## Apply ruff's fixes and formatting
	$(BIN)/ruff check --fix src tests scripts
	$(BIN)/ruff format src tests scripts

docs: install ## Build the docs site into .local/site with mkdocs --strict: a broken link or anchor, or a page left out of mkdocs.yml's nav, fails
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

reference: install ## Regenerate the CLI and configuration reference pages (docs/reference/cli.md, configuration.md) from the code and template.yaml
	$(BIN)/python scripts/gen_reference.py

demo: install ## Run an on-sale end to end on the local stack and print the summary
	$(BIN)/seats demo

BENCH_ARGS ?=
bench: install ## Benchmark the service against the common design on the local stack; writes docs/reference/benchmarks.md (BENCH_ARGS=--quick for a short run)
	$(BIN)/seats bench $(BENCH_ARGS)

ONLY ?=
SEEDS ?= 5
figures: install ## Run every published figure over SEEDS seeds (5), 2 at a time; rewrite docs/reference/figures.md, .json and the README's and docs' tables (ONLY=name,... for some; about 2 hours for all)
	$(BIN)/python scripts/make_figures.py --seeds $(SEEDS) $(if $(ONLY),--only $(ONLY))

build: install ## sam build: both functions' packages, with only what they import (scripts/build_function.py)
	$(BIN)/sam build

# `sam build` runs these (template.yaml: BuildMethod makefile) in a scratch directory, with
# ARTIFACTS_DIR set: paths are taken from this Makefile's own place.
ROOT := $(dir $(abspath $(lastword $(MAKEFILE_LIST))))
BUILD_PYTHON ?= $(if $(wildcard $(ROOT)$(BIN)/python),$(ROOT)$(BIN)/python,$(PYTHON))
build-ReserveSeatsFunction build-SweepHoldsFunction build-GateFunction:
	$(BUILD_PYTHON) $(ROOT)scripts/build_function.py "$(ARTIFACTS_DIR)"
# The ticket issuer also calls Lambda's API: it starts its other lanes (docs/guides/tickets.md).
build-IssueTicketsFunction:
	$(BUILD_PYTHON) $(ROOT)scripts/build_function.py "$(ARTIFACTS_DIR)" dynamodb sns ssm xray lambda
# The version publisher (template.yaml) calls Lambda's API only: botocore keeps that model alone.
build-ReserveSeatsVersionPublisher:
	$(BUILD_PYTHON) $(ROOT)scripts/build_function.py "$(ARTIFACTS_DIR)" lambda

validate: install ## sam validate --lint
	$(BIN)/sam validate --lint --region us-east-1

requirements: install ## Regenerate src/requirements.txt (the Lambda's pins) from the lock
	$(BIN)/python scripts/lambda_requirements.py

lock: install ## Refresh requirements/constraints.txt from the current environment, then the Lambda's pins
	$(BIN)/python -m pip freeze --exclude-editable | grep -v '^-e' > $(CONSTRAINTS)
	$(BIN)/python scripts/lambda_requirements.py

# checkov lives in its own throwaway venv: it pins many packages the project must not inherit.
CHECKOV_VENV ?= $(HOME)/.cache/seat-inventory/checkov
# It reads template.yaml as CloudFormation processes it (scripts/processed_template.py: checkov
# itself skips the resources of an Fn::ForEach loop), with the skips of .checkov.yaml.
PROCESSED_TEMPLATE := build/template.processed.yaml
security: install ## checkov over template.yaml as CloudFormation processes it, from a throwaway venv (CHECKOV_VENV) outside the project pins
	test -x $(CHECKOV_VENV)/bin/checkov || { mkdir -p $(dir $(CHECKOV_VENV)) && $(PYTHON) -m venv $(CHECKOV_VENV) && $(CHECKOV_VENV)/bin/pip install --quiet checkov; }
	$(BIN)/python scripts/processed_template.py $(PROCESSED_TEMPLATE)
	$(CHECKOV_VENV)/bin/checkov --config-file .checkov.yaml --file $(PROCESSED_TEMPLATE)

clean: ## Remove build output and caches (keeps .venv and the DynamoDB Local download)
	rm -rf .aws-sam .pytest_cache .mypy_cache .ruff_cache .hypothesis build dist
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
