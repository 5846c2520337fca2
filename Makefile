# Two commands on a fresh machine with only Python 3.11+:
#   make demo   set up, migrate, create the admin, apply examples/, run everything at :$(PORT) (8000),
#               run the demo Workflow to its end (DEMO_EXIT=1 make demo: then exit)
#   make test   set up with the dev extras and run the suite
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PORT   ?= 8000
BIND   ?= 127.0.0.1

.PHONY: demo test test-fast install install-dev lint format bench crds protos clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@ $(VENV)/.installed

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev

demo: install
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py bootstrap_admin --port $(PORT) --bind $(BIND)
	$(BIN)/python manage.py apply -f examples/
	$(BIN)/python manage.py demo --port $(PORT) --bind $(BIND)

test: install-dev
	$(BIN)/python -m pytest

# the suite without the tests that start real processes, Hypothesis on a tenth of its budget,
# spread over every core (pytest-xdist: each worker has its own test database)
test-fast: install-dev
	HYPOTHESIS_PROFILE=dev $(BIN)/python -m pytest -n auto -m "not processes"

# the boundaries (import-linter), lint, formatting and types: what CI and pre-commit check
lint: install-dev
	$(BIN)/lint-imports
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

format: install-dev
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

bench: install
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py bench runs --count 200 --concurrency 4
	$(BIN)/python manage.py bench scheduler --runs 5000 --pods 100

# the Helm chart's CRDs, exported from the serializers (tests/deploy/test_crds_drift.py checks)
crds: install
	DJANGO_SETTINGS_MODULE=portal.settings $(BIN)/python manage.py export-crds \
		> deploy/helm/kruntimes-portal/crds/kruntimes-crds.yaml

clean:
	rm -rf $(VENV) .data .pytest_cache .ruff_cache .mypy_cache .hypothesis

# the protobuf modules for Kubernetes' wire format, from portal/machinery/kubeproto/*.proto, and
# the Runtime Server contract's messages and gRPC stubs (tests/portal/machinery/
# test_kubeproto_current.py and tests/runtimed/test_runtime_server_contract.py check them)
protos: install-dev
	$(BIN)/python -m grpc_tools.protoc -I . --python_out=. --pyi_out=. portal/machinery/kubeproto/*.proto
	$(BIN)/python -m grpc_tools.protoc -I . --python_out=. --pyi_out=. --grpc_python_out=. \
		runtimed/runtime_server/runtime.proto
