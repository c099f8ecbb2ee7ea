# Two commands do all set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo run console test lint bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

# Ends by saying how to reach the command (make does not activate the venv), even after Ctrl-C.
demo: $(STAMP)
	@$(BIN)/threadline demo; status=$$?; echo; \
	echo "The threadline command is $(BIN)/threadline; 'source $(BIN)/activate' puts it on"; \
	echo "your PATH as plain 'threadline' ('make run' and 'make console' work without). A real"; \
	echo "bot: $(BIN)/threadline init --platform slack (or telegram, discord), then"; \
	echo "docs/platforms/."; exit $$status

# `threadline run` / `threadline console` from the venv, on ./threadline.yaml when there is one
# (the built-in default otherwise); ARGS passes more, e.g. make run ARGS=--no-input.
run: $(STAMP)
	$(BIN)/threadline run $(ARGS)

console: $(STAMP)
	$(BIN)/threadline console $(ARGS)

# pytest runs in TEST_WORKERS processes (pytest-xdist; each test has its own schema, files and
# ports). The tests mostly wait on sockets, subprocesses and PostgreSQL, so twice as many workers
# as a 2-core machine's cores kept both cores busy; `make test TEST_WORKERS=0` runs serially.
TEST_WORKERS ?= 4

test: $(STAMP)
	$(BIN)/ruff check threadline tests bench
	$(BIN)/mypy
	$(BIN)/python -m pytest -q -rs -p no:cacheprovider -n $(TEST_WORKERS) --dist worksteal

bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[bench]'
	for script in store assembler memory recall agent tracing channels; do \
		$(BIN)/python bench/$$script.py || exit 1; done

clean:
	rm -rf $(VENV) threadline.egg-info
