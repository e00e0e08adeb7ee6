# SPDX-License-Identifier: Apache-2.0
# Configure-time check of the layering in docs/architecture.md: a target may
# not reach (directly or through other targets) a library of a layer above
# it. `kiln_check_layering()` runs at the end of the top-level CMakeLists.txt,
# once every target exists; a violation stops the configure step.

# Appends to `out` every library `target` links, transitively (names of
# targets and plain library names or paths).
function(_kiln_link_closure target out)
  set(seen "")
  set(todo ${target})
  while(todo)
    list(POP_FRONT todo t)
    if(t IN_LIST seen)
      continue()
    endif()
    list(APPEND seen ${t})
    if(NOT TARGET ${t})
      continue()
    endif()
    get_target_property(aliased ${t} ALIASED_TARGET)
    if(aliased)
      list(APPEND todo ${aliased})
      continue()
    endif()
    foreach(prop LINK_LIBRARIES INTERFACE_LINK_LIBRARIES)
      get_target_property(libs ${t} ${prop})
      if(libs)
        foreach(lib IN LISTS libs)
          string(REGEX REPLACE "^\\$<LINK_ONLY:(.*)>$" "\\1" lib "${lib}")
          list(APPEND todo ${lib})
        endforeach()
      endif()
    endforeach()
  endwhile()
  list(REMOVE_ITEM seen ${target})
  set(${out} ${seen} PARENT_SCOPE)
endfunction()

# Fails when `target` reaches a library whose name matches `regex`.
function(kiln_forbid_links target regex why)
  _kiln_link_closure(${target} closure)
  foreach(lib IN LISTS closure)
    if(lib MATCHES "${regex}")
      message(FATAL_ERROR "kiln layering: ${target} links ${lib} (${why}); "
                          "see docs/architecture.md, 'Components and their rooms'")
    endif()
  endforeach()
endfunction()

# Fails when a source of `target` includes a header matching `regex`.
function(kiln_forbid_includes target regex why)
  get_target_property(sources ${target} SOURCES)
  get_target_property(dir ${target} SOURCE_DIR)
  foreach(src IN LISTS sources)
    if(NOT IS_ABSOLUTE "${src}")
      set(src "${dir}/${src}")
    endif()
    get_filename_component(src_dir "${src}" DIRECTORY)
    file(GLOB headers "${src_dir}/*.h")
    foreach(file IN LISTS src headers)
      file(STRINGS "${file}" hits REGEX "^#include [<\"](${regex})")
      if(hits)
        message(FATAL_ERROR "kiln layering: ${file} includes ${hits} (${why})")
      endif()
    endforeach()
  endforeach()
endfunction()

function(kiln_check_layering)
  set(mlir "^(MLIR|LLVM)|libMLIR|libLLVM")
  foreach(t KilnRuntime KilnRuntimeCpu KilnRuntimeImports kiln_runtime kiln-run kiln-artifact-test
           kiln-artifact-models
           kiln_runner_shims kiln_cuda KilnRuntimeCuda)
    kiln_forbid_links(${t} "${mlir}|^Kiln(IR|Transforms|Codegen|Cpu|Cuda|Registration)"
                      "the runtime links no MLIR or compiler library")
    kiln_forbid_includes(${t} "mlir/|llvm/|ir/|transforms/|codegen/|registration/"
                         "the runtime includes no MLIR or compiler header")
  endforeach()
  kiln_forbid_links(KilnCudaCodegen "^Kiln(CpuCodegen|RuntimeCpu)$|BLAS|blas"
                    "the CUDA backend does not link the CPU JIT, BLAS or the OpenMP shim")
  kiln_forbid_links(KilnCodegenCommon "^Kiln(CpuCodegen|CudaCodegen|Runtime|RuntimeCpu)$"
                    "codegen/common is target-neutral")
  kiln_forbid_links(KilnTransforms "^Kiln(CodegenCommon|CpuCodegen|CudaCodegen)$"
                    "transforms/ sits below codegen/")
  kiln_forbid_links(KilnIR "^Kiln" "ir/ depends on MLIR only")
endfunction()
