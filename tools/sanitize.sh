#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs kiln's tests against a sanitizer build (`make test-asan`, `make test-tsan`).
# usage: tools/sanitize.sh address|thread BUILD_DIR
# The instrumented _C lives in BUILD_DIR/python/kiln next to links to the
# source package's Python files; a stock python loads it with the sanitizer
# runtime preloaded (it must be the process's first library). address runs
# the lit suite (kiln-opt/kiln-translate are instrumented executables) and
# the pytest subset below; thread runs test/python/test_threads.py.
# Suppressions and why each is there: tools/lsan.supp, tools/tsan.supp.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
MODE=$1
BUILD=$(cd "$2" && pwd)
PY=$ROOT/.venv/bin/python
CXX=${CXX:-c++}

# The package: links to every source file of frontend/python/kiln except the
# native libraries, which the sanitizer build wrote here.
PKG=$BUILD/python/kiln
mkdir -p "$PKG"
for f in "$ROOT"/frontend/python/kiln/*; do
  case "$(basename "$f")" in *.so | __pycache__) continue ;; esac
  ln -sfn "$f" "$PKG/$(basename "$f")"
done
export KILN_TEST_PACKAGE_DIR=$BUILD/python
export PYTHONPATH=$BUILD/python${PYTHONPATH:+:$PYTHONPATH}
export ASAN_SYMBOLIZER_PATH=/usr/lib/llvm-19/bin/llvm-symbolizer
export TSAN_SYMBOLIZER_PATH=$ASAN_SYMBOLIZER_PATH

# The bounded pytest subset of `make test-asan`: capture, codegen, the
# compile cache, loop nests outlined and merged and a training graph's two
# compiles at once (test_loop_nests.py), graph breaks and resume, fallbacks,
# user exceptions, plain objects' type, aliasing and list guards, int and
# float arguments made graph inputs per call, threads.
ASAN_PYTEST=(test_capture_small.py test_opcodes.py test_control_flow.py test_compile_cache.py
             test_loop_nests.py test_graph_breaks.py test_resume.py test_fallback.py test_op_fallback.py
             test_user_exceptions.py test_plain_object_guards.py test_dynamic_numbers.py
             test_threads.py)

# The sanitizer runtime goes first; libstdc++ right after it, since python
# itself does not link it and the runtime's __cxa_throw interceptor must find
# the real one when it starts (else the first C++ exception aborts).
STDCXX=$($CXX -print-file-name=libstdc++.so.6)

case "$MODE" in
  address)
    # Leaks: kiln-opt and the python runs both check at exit (LSan).
    export ASAN_OPTIONS=detect_leaks=1:detect_stack_use_after_return=0:strict_string_checks=0
    export LSAN_OPTIONS=suppressions=$ROOT/tools/lsan.supp:print_suppressions=0
    export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
    echo "[sanitize] lit suite on $BUILD"
    ninja -C "$BUILD" check-kiln
    # The artifact loader (runtime/artifact) on an exported MLP and 600
    # damaged copies of it (test/artifact/ArtifactTest.cpp). The model zoo
    # (artifact-*-models: resnet18, BERT/GPT-2 blocks) runs in `make test`
    # only: exporting it through the instrumented _C would take minutes.
    echo "[sanitize] artifact loader test under ASan+UBSan"
    (cd "$BUILD" && ctest -R '^artifact-(export|run)-mlp$' --output-on-failure)
    echo "[sanitize] pytest subset under ASan+UBSan: ${ASAN_PYTEST[*]}"
    # PYTHONMALLOC=malloc: Python objects come from malloc, so ASan sees a
    # use of a freed object (a missing reference) and LSan follows pointers
    # held by Python objects instead of reporting what they own as leaked.
    # LeakSanitizer's exit scan itself sometimes dies ("Tracer caught signal
    # 11" ... "LeakSanitizer has encountered a fatal error": its
    # stop-the-world tracer reading a bogus dynamic-TLS range that gcc 12's
    # runtime recorded, not a leak report; about one process exit in 20).
    # In the suite's child pythons conftest.interpreter_status takes the
    # interpreter's own status instead; tests that failed only that way
    # otherwise run again (twice at most), a pytest whose tests all passed
    # before its own scan died passes; any other failure, a leak report
    # included, fails the run (tools/lsan_tracer_deaths.py decides).
    LOG=$BUILD/asan-pytest.log
    JUNIT=$BUILD/asan-junit.xml
    run_asan_pytest() {
      LD_PRELOAD="$($CXX -print-file-name=libasan.so) $STDCXX" PYTHONMALLOC=malloc \
        KILN_THREAD_TEST_TIMEOUT=${KILN_THREAD_TEST_TIMEOUT:-600} \
        "$PY" -m pytest -q -o cache_dir="$BUILD/.pytest_cache" --junitxml="$JUNIT" "$@" 2>&1 |
        tee "$LOG"
      return "${PIPESTATUS[0]}"
    }
    run_asan_pytest "${ASAN_PYTEST[@]/#/test/python/}" "${@:3}" && exit 0
    for attempt in 1 2 3; do
      case "$("$PY" tools/lsan_tracer_deaths.py "$JUNIT" "$LOG")" in
        passed) echo "[sanitize] every test passed; LSan's tracer died in pytest's own exit scan"
                exit 0 ;;
        rerun) [ "$attempt" -le 2 ] || exit 1
               echo "[sanitize] every failure was an LSan tracer death: running them again ($attempt of 2)"
               run_asan_pytest --last-failed "${ASAN_PYTEST[@]/#/test/python/}" "${@:3}" && exit 0 ;;
        *) exit 1 ;;
      esac
    done
    exit 1
    ;;
  thread)
    export TSAN_OPTIONS="suppressions=$ROOT/tools/tsan.supp:halt_on_error=1:second_deadlock_stack=1:report_signal_unsafe=0"
    echo "[sanitize] test_threads.py under TSan"
    LD_PRELOAD="$($CXX -print-file-name=libtsan.so) $STDCXX" \
      KILN_THREAD_TEST_TIMEOUT=${KILN_THREAD_TEST_TIMEOUT:-900} \
      "$PY" -m pytest -q -p no:cacheprovider test/python/test_threads.py "${@:3}"
    ;;
  *)
    echo "usage: tools/sanitize.sh address|thread BUILD_DIR" >&2
    exit 2
    ;;
esac
