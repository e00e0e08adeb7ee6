# SPDX-License-Identifier: Apache-2.0
# Sanitizer builds of kiln's own code (`make test-asan`, `make test-tsan`).
# KILN_SANITIZE=address instruments every kiln target with AddressSanitizer
# and UndefinedBehaviorSanitizer (UB aborts: no recovery), KILN_SANITIZE=thread
# with ThreadSanitizer. LLVM/MLIR, torch and CPython stay uninstrumented: the
# runtimes are preloaded into a stock python (tools/sanitizers/run.sh).
# vptr is left out of UBSan: kiln's libraries are built without RTTI (LLVM's
# flags) while _C has it, and the mixed objects would make every check fail.
set(KILN_SANITIZE "" CACHE STRING "Sanitizer build: address (ASan+UBSan), thread (TSan) or empty")
set_property(CACHE KILN_SANITIZE PROPERTY STRINGS "" address thread)

if(KILN_SANITIZE STREQUAL "address")
  set(KILN_SANITIZE_FLAGS -fsanitize=address,undefined -fno-sanitize=vptr
    -fno-sanitize-recover=undefined)
elseif(KILN_SANITIZE STREQUAL "thread")
  set(KILN_SANITIZE_FLAGS -fsanitize=thread)
elseif(NOT KILN_SANITIZE STREQUAL "")
  message(FATAL_ERROR "KILN_SANITIZE must be address, thread or empty, not '${KILN_SANITIZE}'")
endif()

if(KILN_SANITIZE_FLAGS)
  add_compile_options(${KILN_SANITIZE_FLAGS} -fno-omit-frame-pointer)
  add_link_options(${KILN_SANITIZE_FLAGS})
endif()

# kiln_sanitize_exclude(<target>): a library loaded by an uninstrumented host
# program (kiln_runner_shims in mlir-cpu-runner) stays uninstrumented, since a
# sanitizer runtime must be the first library of the process.
function(kiln_sanitize_exclude target)
  if(KILN_SANITIZE_FLAGS)
    target_compile_options(${target} PRIVATE -fno-sanitize=all)
    target_link_options(${target} PRIVATE -fno-sanitize=all)
  endif()
endfunction()
