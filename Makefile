# The README's two commands are `make demo` and `make check`; both bootstrap .venv first.
VENV := .venv
PY := $(VENV)/bin/python
IMAGE ?=
ARGS ?=

.PHONY: venv demo check fast lint lit pytest bench fuzz

venv:
	@bash scripts/bootstrap.sh

demo: venv  ## main job: pretrained MobileNetV2 through xgen_mlir vs PyTorch on an image
	$(PY) examples/classify_image.py $(if $(IMAGE),--image $(IMAGE)) $(ARGS)

lint: venv
	$(VENV)/bin/ruff check python tests benchmarks examples
	$(VENV)/bin/ruff format --check python tests benchmarks examples
	$(VENV)/bin/mypy  # python/xgen_mlir, configured in pyproject.toml

lit: venv
	PATH=$(CURDIR)/$(VENV)/bin:$$PATH $(VENV)/bin/lit -sv tests/lit

pytest: venv  # worksteal: an idle worker takes tests from the busy one's queue (no long tail)
	$(PY) -m pytest -n 2 --dist worksteal -q --durations=25 $(ARGS)

# lint (mostly mypy, one core) runs beside lit; each one's output stays in one piece
check: venv  ## all tests: lint, lit/FileCheck, pytest
	$(MAKE) -j2 --output-sync=target lint lit
	$(MAKE) pytest

fast: venv lint lit  ## the quick lane while working: everything but the tests marked slow (big models)
	$(PY) -m pytest -n 2 -q -m "not slow" $(ARGS)

bench: venv  ## speed table of xgen_mlir vs IREE / ONNX Runtime / PyTorch (several minutes)
	$(PY) benchmarks/bench_models.py $(ARGS)

fuzz: venv  ## the long fuzz run: mutated MLIR/ONNX/.vmfb through xgen-opt, compile(), load() (ARGS="--cases N --seed S")
	$(PY) tests/fuzz/campaign.py --cases 1000 --seed 1 --out fuzz-results $(ARGS)
