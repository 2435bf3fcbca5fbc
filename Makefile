# The two commands of the README's quick start: `make run` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
OUT    ?= out-example

.PHONY: run test lint typecheck unit venv bench bench-quick clean

$(BIN)/hivedlab: pyproject.toml
	@$(PYTHON) scripts/check_python.py
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(BIN)/hivedlab

venv: $(BIN)/hivedlab

## run: set up, then run all five experiments for the example group on the simulated cluster and write
## $(OUT)/report.md and report.html: apart from out/, where a group's own runs go
run: venv
	$(BIN)/hivedlab run all --cluster sim --inventory configs/group.example.yaml --out $(OUT) --replace

## test: set up, then lint, check the import layers, check the types and run the tests
test: lint typecheck unit

lint: venv
	$(BIN)/ruff check .
	$(BIN)/lint-imports

## typecheck: mypy --strict on the package (pyproject.toml's [tool.mypy]), then mypy's default mode on the tests
## (tests/mypy.toml)
typecheck: venv
	$(BIN)/mypy
	$(BIN)/mypy --config-file tests/mypy.toml

unit: venv
	$(BIN)/python -m pytest

## bench: every benchmark at full size, with its figures and targets (docs/benchmarks.md); ARGS=--quick or names
bench: venv
	$(BIN)/python benchmarks/run_all.py $(ARGS)

## bench-quick: every benchmark at small sizes, checking that it runs and produces what it should (CI, after make test)
bench-quick: venv
	$(BIN)/python benchmarks/run_all.py --quick

clean:
	rm -rf $(VENV) $(OUT) build *.egg-info
