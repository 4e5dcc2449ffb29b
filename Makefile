# ptgo — two commands: `make demo` and `make test`. `make setup` makes both worlds: Debian's
# torch 1.13 (`setup-113`, the default: `make demo` needs only it) and PyPI's torch 2
# (`setup-torch2`); `make test` and `make bench` run in both.
SHELL := /bin/bash
PY ?= /usr/bin/python3
VENV := .venv
VPY := $(VENV)/bin/python
GO ?= $(shell command -v go 2>/dev/null || echo /usr/local/go/bin/go)
export PATH := $(dir $(GO)):$(PATH)
DEBS := python3-torch python3-torchvision python3-numpy python3-pytest python3-venv python3-dev python3-setuptools \
        python3-wheel python3-pip python3-matplotlib libtorch-dev gcc g++ make pkg-config
GO_SRC := $(shell find . -name '*.go' -not -path './.venv/*' -not -name '*_test.go') go.mod go.sum \
          pybridge/include/ptgo_abi.h
SHIM_SRC := pybridge/shim/ptgo_C.c $(wildcard pybridge/fast/*.cpp pybridge/fast/*.h) pybridge/include/ptgo_abi.h
LIB := python/ptgo/libptgo.so
SHIM_STAMP := python/ptgo/.shim-built
# The torch 2.x world: a venv of its own from the python3 first on PATH (no system packages),
# PyPI's torch and torchvision pinned, ptgo built and installed into it (its own _C and _fast,
# built against that torch; libptgo.so is the same Go library).
TORCH2_PY ?= $(shell command -v python3)
TORCH2_PKGS := torch==2.14.1 torchvision==0.29.2
# Real model code in a venv's site-packages, tested as users run it (tests/test_timm.py).
TIMM_PKG := timm==0.9.16
# Hugging Face transformers in the torch 2 venv only (tests/test_transformers.py; its 4.46 line
# needs torch 2).
HF_PKG := transformers==4.46.3
VENV2 := .venv-torch2
VPY2 := $(VENV2)/bin/python
PY_SRC := $(wildcard python/ptgo/*.py)
# NVRTC for the CUDA renderer's tests (every generated kernel compiles for sm_90 here, without a
# GPU): PyPI's nvidia-cuda-nvrtc unpacked into build/nvrtc (x86-64 and aarch64 Linux wheels).
# `make NVRTC=0 setup` skips it; then the NVRTC tests skip, naming what is missing. With it, make
# test sets PTGO_REQUIRE_NVRTC=1, so an NVRTC that does not load fails the tests loudly.
NVRTC ?= 1
NVRTC_PKG := nvidia-cuda-nvrtc==13.0.88
NVRTC_STAMP := build/nvrtc/.installed
ifeq ($(NVRTC),1)
SETUP_NVRTC := $(NVRTC_STAMP)
TEST_ENV := PTGO_REQUIRE_NVRTC=1 PTGO_REQUIRE_CUDA_EMU=1
else
SETUP_NVRTC :=
TEST_ENV := PTGO_REQUIRE_CUDA_EMU=1
endif

.PHONY: setup setup-113 setup-torch2 deps demo test test-dynamic test-go test-py test-py2 test-fuzz fuzz bench bench-113 bench-torch2 wheel clean gpu-check-dry

setup: setup-113 setup-torch2

setup-113: deps $(VENV)/.installed $(VENV)/.timm $(LIB) $(SHIM_STAMP) $(SETUP_NVRTC)

$(NVRTC_STAMP): $(VENV)/.installed
	rm -rf build/nvrtc
	$(VPY) -m pip install -q --no-deps --only-binary=:all: --target build/nvrtc $(NVRTC_PKG)
	test -e build/nvrtc/nvidia/cu13/lib/libnvrtc.so.13
	rm -f build/nvrtc/nvidia/cu13/lib/*.alt.*  # the alternative ABI build ptgo never loads (110 MB)
	touch $@

# Debian packages, installed only when missing (fast when nothing is).
deps:
	@missing=""; for p in $(DEBS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q $$missing; \
	fi
	@command -v $(GO) >/dev/null || { echo "ptgo needs Go (1.22+) on PATH: https://go.dev/dl/"; exit 1; }

$(VENV)/bin/python:
	$(PY) -m venv --system-site-packages $(VENV)

$(VENV)/.installed: $(VENV)/bin/python pyproject.toml setup.py
	$(VPY) -m pip install -q --no-build-isolation --no-deps -e .
	touch $@

setup-torch2: setup-113 $(VENV2)/.ptgo $(VENV2)/.timm $(VENV2)/.transformers

$(VENV2)/bin/python:
	$(TORCH2_PY) -m venv $(VENV2)

$(VENV2)/.torch: $(VENV2)/bin/python
	$(VPY2) -m pip install -q $(TORCH2_PKGS) numpy pytest setuptools wheel
	touch $@

# --no-deps: timm's requirements would replace Debian's torch; its optional ones (huggingface_hub,
# safetensors) only load weights, and PyYAML is Debian's.
$(VENV)/.timm: $(VENV)/bin/python
	$(VPY) -m pip install -q --no-deps $(TIMM_PKG)
	touch $@

$(VENV2)/.timm: $(VENV2)/.torch
	$(VPY2) -m pip install -q $(TIMM_PKG)
	touch $@

$(VENV2)/.transformers: $(VENV2)/.torch
	$(VPY2) -m pip install -q $(HF_PKG)
	touch $@

$(VENV2)/.ptgo: $(VENV2)/.torch $(GO_SRC) $(SHIM_SRC) $(PY_SRC) setup.py pyproject.toml
	$(VPY2) -m pip install -q --no-build-isolation --no-deps --force-reinstall .
	touch $@

$(LIB): $(GO_SRC)
	CGO_ENABLED=1 $(GO) build -buildmode=c-shared -trimpath -o $(LIB) ./pybridge
	rm -f python/ptgo/libptgo.h

$(SHIM_STAMP): $(SHIM_SRC) $(VENV)/.installed
	PTGO_SKIP_GO_BUILD=1 $(VPY) setup.py -q build_ext --inplace >/dev/null
	touch $@

demo: setup-113
	$(VPY) examples/demo.py

test: setup setup-torch2
	$(GO) vet ./...
	$(TEST_ENV) $(GO) test ./...
	$(VPY) -m pytest -q tests/
	$(VPY2) -m pytest -q -p no:cacheprovider tests/
	$(MAKE) --no-print-directory test-fuzz

# The differential fuzzer (tests/fuzz, issue 8): `make test` runs a fixed sample of FUZZ_SAMPLE
# programs (seeds FUZZ_START.., in the torch 1.13 and the torch 2 environment, under a minute each); `make fuzz N=10000` runs at scale
# (JOBS workers, START the first seed; results in /tmp/ptgo-fuzz-START-N, MINIMISE=1 minimises the
# failures into tests/fuzz/regressions/). Both fail on any failing, crashing or hanging program.
FUZZ_SAMPLE ?= 200
FUZZ_START ?= 0
N ?= 10000
START ?= 0
JOBS ?= 1

test-fuzz: setup-113 setup-torch2
	$(VPY) tests/fuzz/run.py --start $(FUZZ_START) --n $(FUZZ_SAMPLE) --quiet
	$(VPY2) tests/fuzz/run.py --start $(FUZZ_START) --n $(FUZZ_SAMPLE) --quiet --out /tmp/ptgo-fuzz-torch2-$(FUZZ_START)-$(FUZZ_SAMPLE)

fuzz: setup-113
	$(VPY) tests/fuzz/run.py --start $(START) --n $(N) --jobs $(JOBS) $(if $(MINIMISE),--minimise)

# The Python suite again with every dimension symbolic from the first compile (PTGO_DYNAMIC=1:
# dynamic=None acts as dynamic=True): what works with static shapes keeps working with
# symbolic ones. CI runs it as a step of its own after `make test`.
test-dynamic: setup-113
	PTGO_DYNAMIC=1 $(VPY) -m pytest -q -p no:cacheprovider tests/

test-go:
	$(GO) test ./...

# The GPU machine's check (tools/gpu-check): here, its dry run.
gpu-check-dry: setup-113
	tools/gpu-check --dry-run

test-py: setup-113
	$(VPY) -m pytest -q tests/

test-py2: setup-torch2
	$(VPY2) -m pytest -q -p no:cacheprovider tests/

# Every workload beside its peers, interleaved in one process per world: eager, TorchScript and
# ptgo on torch 1.13 (bench/results/); also torch.compile (default, max-autotune) and
# torch.compile(backend="ptgo") on torch 2 (bench/results/torch2/); then the dynamic-shape
# sweeps (bench/dynamic.py: one function over many sizes, ptgo dynamic vs static vs eager),
# training steps (bench/train.py) and compiled DDP (bench/ddp.py).
bench: bench-113 bench-torch2

bench-113: setup-113
	$(VPY) bench/run.py
	$(VPY) bench/dynamic.py
	$(VPY) bench/train.py
	$(VPY) bench/ddp.py

bench-torch2: setup-torch2
	$(VPY2) bench/run.py
	$(VPY2) bench/dynamic.py
	$(VPY2) bench/train.py
	$(VPY2) bench/ddp.py

wheel: setup-113
	$(VPY) -m pip wheel --no-build-isolation --no-deps -w dist .

clean:
	rm -rf $(VENV) $(VENV2) build dist python/ptgo/*.so python/ptgo/.shim-built python/*.egg-info
