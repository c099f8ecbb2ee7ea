# Two commands do all set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/threadline demo

test: $(STAMP)
	$(BIN)/ruff check threadline tests bench
	$(BIN)/mypy
	$(BIN)/python -m pytest -q -p no:cacheprovider

bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[bench]'
	for script in store assembler memory recall agent channels; do \
		$(BIN)/python bench/$$script.py || exit 1; done

clean:
	rm -rf $(VENV) threadline.egg-info
