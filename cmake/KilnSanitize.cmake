# SPDX-License-Identifier: Apache-2.0
# Sanitizer builds of kiln's own code (`make test-asan`, `make test-tsan`).
# KILN_SANITIZE=address instruments every kiln target with AddressSanitizer
# and UndefinedBehaviorSanitizer (UB aborts: no recovery). KILN_SANITIZE=thread
# instruments, with ThreadSanitizer, the code that runs concurrently outside
# the compile lock (docs/architecture.md §2b): the extension's own sources
# (hook, caches, entries, calls) and the runtime (buffer pool, disk cache).
# The IR, the passes and the codegen libraries run only under the compile
# lock; they stay uninstrumented with the normal build's flags, so they come
# from ccache after `make build`. LLVM/MLIR, torch and CPython are never
# instrumented: the runtimes are preloaded into a stock python
# (tools/sanitize.sh).
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

# --as-needed again after the flags: gcc's sanitizer link spec turns it off,
# and the CUDA driver stub NVRTC's imported target names (libcuda.so.1, absent
# on machines without a GPU) would become a hard dependency.
set(KILN_SANITIZE_LINK_FLAGS ${KILN_SANITIZE_FLAGS} -Wl,--as-needed)

if(KILN_SANITIZE STREQUAL "address")
  add_compile_options(${KILN_SANITIZE_FLAGS} -fno-omit-frame-pointer)
  add_link_options(${KILN_SANITIZE_LINK_FLAGS})
endif()

# kiln_sanitize_threads(<target>...): the targets the thread build instruments
# (-O1 -g1 after the build type's -O3: the level TSan is made for, with line
# tables for its reports). Called once the targets exist.
function(kiln_sanitize_threads)
  if(KILN_SANITIZE STREQUAL "thread")
    foreach(target ${ARGN})
      target_compile_options(${target} PRIVATE ${KILN_SANITIZE_FLAGS} -O1 -g1
        -fno-omit-frame-pointer)
      target_link_options(${target} PRIVATE ${KILN_SANITIZE_LINK_FLAGS})
    endforeach()
  endif()
endfunction()

# kiln_sanitize_exclude(<target>): a library loaded by an uninstrumented host
# program (kiln_runner_shims in mlir-cpu-runner) stays uninstrumented, since a
# sanitizer runtime must be the first library of the process.
function(kiln_sanitize_exclude target)
  if(KILN_SANITIZE_FLAGS)
    target_compile_options(${target} PRIVATE -fno-sanitize=all)
    target_link_options(${target} PRIVATE -fno-sanitize=all)
  endif()
endfunction()
