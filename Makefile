# SPDX-License-Identifier: Apache-2.0
# kiln's two commands: `make demo` and `make test`. Both install what is
# missing (Debian packages, .venv), configure, build, then run.
ROOT   := $(abspath .)
VENV   := $(ROOT)/.venv
PY     := $(VENV)/bin/python
BUILD  := $(ROOT)/build
NPROC  ?= $(shell nproc)
export CCACHE_BASEDIR := $(ROOT)
export CCACHE_DIR ?= $(HOME)/.cache/ccache
export CCACHE_NOHASHDIR := 1

CMAKE_FLAGS := -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DMLIR_DIR=/usr/lib/llvm-19/lib/cmake/mlir -DLLVM_USE_LINKER=lld \
  -DLLVM_EXTERNAL_LIT=$(VENV)/bin/lit -DPython_EXECUTABLE=$(PY)

.PHONY: setup build build-asan build-tsan test-asan test-tsan test test-lit test-unit test-python check-house format demo bench docs clean

setup:
	@bash tools/bootstrap.sh

$(BUILD)/build.ninja: | setup
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)

build: setup $(BUILD)/build.ninja
	ninja -C $(BUILD) -j$(NPROC) kiln-opt _C kiln-unit-tests kiln_runner_shims kiln-artifact-test \
	  kiln-artifact-models

test: build
	$(MAKE) --no-print-directory check-house test-lit test-unit test-python

# Sanitizer builds of kiln's own code (cmake/KilnSanitize.cmake), each in its
# own folder with _C in <folder>/python/kiln; tools/sanitize.sh runs them.
# -O1 -g1: the sanitizers' recommended optimization level, with line tables
# for reports. test-asan: ASan + UBSan + LSan over the lit suite and a pytest
# subset; test-tsan: ThreadSanitizer over test/python/test_threads.py (only
# _C and the runtime are instrumented; the rest keeps `build`'s flags and
# comes from ccache).
ASAN_BUILD := $(ROOT)/build-asan
TSAN_BUILD := $(ROOT)/build-tsan
SAN_FLAGS = $(CMAKE_FLAGS) -DCMAKE_CXX_FLAGS_RELEASE="-O1 -g1 -DNDEBUG" \
  -DCMAKE_C_FLAGS_RELEASE="-O1 -g1 -DNDEBUG" -DKILN_PYTHON_PACKAGE_DIR=$(1)/python/kiln

$(ASAN_BUILD)/build.ninja: | setup
	cmake -S . -B $(ASAN_BUILD) $(call SAN_FLAGS,$(ASAN_BUILD)) -DKILN_SANITIZE=address

$(TSAN_BUILD)/build.ninja: | setup
	cmake -S . -B $(TSAN_BUILD) $(CMAKE_FLAGS) -DKILN_PYTHON_PACKAGE_DIR=$(TSAN_BUILD)/python/kiln \
	  -DKILN_SANITIZE=thread

build-asan: setup $(ASAN_BUILD)/build.ninja
	ninja -C $(ASAN_BUILD) -j$(NPROC) kiln-opt kiln-translate kiln_runner_shims _C kiln-artifact-test

build-tsan: setup $(TSAN_BUILD)/build.ninja
	ninja -C $(TSAN_BUILD) -j$(NPROC) _C

test-asan: build-asan
	bash tools/sanitize.sh address $(ASAN_BUILD)

test-tsan: build-tsan
	bash tools/sanitize.sh thread $(TSAN_BUILD)

# Format, size, environment, layout and lit-syntax checks (tools/check_house.py)
# and the generated references in docs/reference against the .td files.
check-house: setup $(BUILD)/build.ninja
	$(PY) tools/check_house.py
	ninja -C $(BUILD) check-kiln-docs

# clang-format (.clang-format: LLVM style, 100 columns) over every C/C++ file.
format: setup
	git ls-files '*.cpp' '*.h' '*.c' | xargs /usr/lib/llvm-19/bin/clang-format -i

test-lit:
	ninja -C $(BUILD) check-kiln

test-unit:
	cd $(BUILD) && ctest --output-on-failure

test-python:
	$(PY) -m pytest -q --durations=30 test/python

demo: build
	$(PY) tools/demo.py

# eager vs torch.compile vs kiln; rewrites the generated parts of
# docs/performance.md: small shapes (tools/bench.py, about 10 minutes on 2
# cores), then the real sizes (tools/bench_real.py: 224-px CNNs, BERT-base,
# GPT-2; torch.compile takes minutes per model here, so select rows with
# e.g. `make bench BENCH_REAL_ARGS="--only resnet50"`).
BENCH_REAL_ARGS ?=
bench: build
	$(PY) tools/bench.py
	$(PY) tools/bench_export.py
	$(PY) tools/bench_aten.py
	$(PY) tools/bench_training.py --threads 1,2 --inductor
	$(PY) tools/bench_autocast.py
	$(PY) tools/bench_optimizer.py --inductor
	$(PY) tools/bench_real.py $(BENCH_REAL_ARGS)
	$(PY) tools/bench_quant.py
	$(PY) tools/bench_quant_decode.py
	$(PY) tools/bench_quant_static.py

docs: build
	ninja -C $(BUILD) kiln-docs

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD)
