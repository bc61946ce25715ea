# The two commands that matter (see README.md): `make demo` and `make test`.
# Each installs what is missing first (Debian packages, the project venv; for the tests PowerShell 7.6.9
# and Pester 5.7.1 from NuGet into .tools/, scripts/install-pwsh.sh).

PY      := .venv/bin/python
RUN_DIR ?= runs/demo
OUT     ?= $(RUN_DIR)/stormatrix-demo.xlsx

.PHONY: setup demo demo-full test test-pwsh pwsh bench bench-repeatability clean

setup:
	@bash scripts/setup.sh

demo: setup
	$(PY) -m stormatrix demo -o $(RUN_DIR) --workbook $(OUT)

demo-full: setup
	$(PY) -m stormatrix demo --full -o runs/demo-full --workbook runs/demo-full/stormatrix-demo-full.xlsx

test: setup
	@bash scripts/test.sh

# PowerShell 7.6.9 and Pester 5.7.1 into .tools/ (pinned; fails naming the command that failed)
pwsh:
	@bash scripts/install-pwsh.sh

# only the PowerShell tests, under Pester 5 on that pwsh (tests/pwsh/README.md); ends with Pester's summary
test-pwsh: pwsh
	@. .tools/env.sh && NO_COLOR=1 STORMATRIX_PESTER_PSD1="$$STORMATRIX_PESTER_PSD1" "$$STORMATRIX_PWSH" -NoLogo -NoProfile -NonInteractive -File tests/pester/Invoke-StormatrixPester.ps1

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
