# tvmfork: the two commands a user needs are `make wheel` and `make test`.
# Settings: MODE=auto|overlay|source  VARIANT=cpu|cuda  PYTHON=python3
#           PLATFORM=linux_aarch64|macosx_arm64|win_amd64|linux_x86_64|all: overlay wheels of
#           the stock wheels of other platforms (default: this machine's)
#           TVM_SOURCE=<URL, git dir or folder> for `make checkout` (default: the lock's URL)
#           MIRRORS=<folder of mirrors> for `make checkout`: TVM and every submodule from it
# Machine-local paths (a TVM mirror, caches) go in tvmfork.local.toml (ignored by git).

PYTHON ?= python3
MODE ?= auto
VARIANT ?= cpu
VENV := .venv
PY := $(VENV)/bin/python
TVMFORK := $(VENV)/bin/tvmfork

.PHONY: all checkout wheel image test test-unit test-overlay test-conformance conformance \
	conformance-portable bench-models \
	test-native test-aarch64 check lint clean

all: wheel

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	touch $@

checkout: $(VENV)/.installed
	$(TVMFORK) checkout $(if $(TVM_SOURCE),--source $(TVM_SOURCE)) $(if $(MIRRORS),--mirrors $(MIRRORS))

wheel: $(VENV)/.installed
	$(TVMFORK) wheel --mode $(MODE) --variant $(VARIANT) $(if $(PLATFORM),--platform $(PLATFORM))

# The CUDA image: the Dockerfile runs `make checkout` and `make wheel MODE=source VARIANT=cuda`.
image: $(VENV)/.installed
	PY=$(PY) scripts/docker-build.sh -t tvmfork:cuda

# The linters and `tvmfork check` (the series: trailers, names, regression tests, overlay
# applicability), then the unit lane (the tool, real git repos in tmp dirs), the overlay lane
# (each Python patch's regression tests: FAIL on the stock wheel, pass on the overlay fork
# wheel) and the conformance lane's CI subset (no case that works on stock fails on the fork).
test: $(VENV)/.installed lint
	$(TVMFORK) envs
	$(TVMFORK) check
	$(PY) -m pytest tests/unit tests/overlay tests/conformance

test-unit: $(VENV)/.installed
	$(PY) -m pytest -m unit tests/unit

test-overlay: $(VENV)/.installed
	$(PY) -m pytest tests/overlay

test-conformance: $(VENV)/.installed
	$(PY) -m pytest tests/conformance

# The full conformance run (opt-in, hours on 2 cores): every suite, stock vs fork, with
# timings; report in out/conformance/. ARGS passes more options (ARGS="--jobs 2").
conformance: $(VENV)/.installed
	$(TVMFORK) conformance torchvision transformers transformers-registry transformers-onnx \
		transformers-registry-onnx onnx-node opinfo $(ARGS)

# The portable build's lane (opt-in, about 40 minutes fork side on 2 cores): the model suites
# built as one library for x86-64, x86-64-v3 and x86-64-v4 (the running CPU's best level
# called; stock compiles for the generic CPU) and run on 2 threads. It shows what a plain-llvm
# run cannot: a race in a wider tile only the host's vectors get, a level's kernel the build
# cannot compile. Report in out/conformance-portable/.
conformance-portable: $(VENV)/.installed
	$(TVMFORK) conformance torchvision transformers transformers-onnx --target portable \
		--threads 2 --report out/conformance-portable $(ARGS)

# The aarch64 lane (opt-in; root, Debian's qemu-user-static, debootstrap and
# g++-aarch64-linux-gnu): the `device` suite (ci's ONNX node cases, 28 models) cross-compiled
# here by each side and run on DEVICES aarch64 devices emulated here (qemu user mode, a Debian
# arm64 root with the fork's aarch64 wheel) behind a TVM RPC tracker, started and stopped by
# the run; stock vs fork, report in out/aarch64/. Correctness only: emulated times mean nothing.
DEVICES ?= 2
test-aarch64: $(VENV)/.installed
	$(TVMFORK) conformance device --target aarch64 --emulated $(DEVICES) --report out/aarch64 $(ARGS)

# Benchmark (not a test): BENCH_SUITES' models (the torchvision models, and HuggingFace models
# at their base sizes) on PyTorch eager, ONNX Runtime, torch.compile (Inductor), stock and fork,
# for TARGET (llvm or host) and THREADS (default 1); speed table, with this machine's CPU, in
# out/bench-$(TARGET)-$(THREADS)/.
TARGET ?= host
THREADS ?= 1
BENCH_SUITES ?= torchvision transformers-bench
bench-models: $(VENV)/.installed
	$(TVMFORK) conformance $(BENCH_SUITES) --ort --inductor --threads $(THREADS) \
		--target $(TARGET) --report out/bench-$(TARGET)-$(THREADS) $(ARGS)

# Opt-in native lane: a source-built wheel (make wheel MODE=source) and the build tree it came
# from; runs the native patches' regression tests on that wheel and the src_cc tests (ctest).
# A run in which no test ran exits non-zero ("NOT RUN"); ALLOW_NOT_RUN=1 makes that exit 0.
test-native: $(VENV)/.installed
	$(PY) -m pytest tests/native --native-variant $(VARIANT) $(if $(ALLOW_NOT_RUN),--allow-not-run)

check: $(VENV)/.installed lint
	$(TVMFORK) check

lint: $(VENV)/.installed
	$(VENV)/bin/ruff check python tests scripts
	$(VENV)/bin/ruff format --check python tests scripts
	$(VENV)/bin/mypy
	$(VENV)/bin/hadolint Dockerfile

clean:
	rm -rf out $(VENV)
