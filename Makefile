# The two commands that matter (see README.md): `make demo` and `make test`.
# Each installs what is missing first (Debian packages, the project venv; the hosted PowerShell engine,
# and PowerShell 7 + Pester 5 where they can be had, into .tools/ for the tests).

PY      := .venv/bin/python
RUN_DIR ?= runs/demo
OUT     ?= $(RUN_DIR)/stormatrix-demo.xlsx

.PHONY: setup demo demo-full test test-pwsh bench bench-repeatability clean

setup:
	@bash scripts/setup.sh

demo: setup
	$(PY) -m stormatrix demo -o $(RUN_DIR) --workbook $(OUT)

demo-full: setup
	$(PY) -m stormatrix demo --full -o runs/demo-full --workbook runs/demo-full/stormatrix-demo-full.xlsx

test: setup
	@bash scripts/test.sh

# only the PowerShell tests, on the hosted engine (tests/pwsh/README.md)
test-pwsh:
	@bash scripts/build-pwsh-host.sh
	@env -u STORMATRIX_REAL_PWSH tests/pwsh/pwsh -NoLogo -NoProfile -NonInteractive -File tests/pwsh/Invoke-EngineTests.ps1 -Engine

bench: setup
	$(PY) benchmarks/bench_cell_overhead.py
	$(PY) benchmarks/bench_ingest.py
	$(PY) benchmarks/bench_fioserver_scale.py
	$(PY) benchmarks/bench_plan.py

# the make-demo matrix three times (about 15 minutes): per-cell CV and the threads-vs-native order
bench-repeatability: setup
	$(PY) benchmarks/bench_repeatability.py

clean:
	rm -rf runs .pytest_cache
