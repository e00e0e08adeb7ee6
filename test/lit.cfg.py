# SPDX-License-Identifier: Apache-2.0
# lit configuration of kiln's FileCheck suite.
import os

import lit.formats
from lit.llvm import llvm_config

config.name = "kiln"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.kiln_obj_root, "test")
config.excludes = ["python", "unit", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py.in"]

# The sanitizer options of `make test-asan` (tools/sanitize.sh): lit 18 passes
# UBSAN_OPTIONS but drops ASAN_OPTIONS (a missing comma in its list) and never
# passes LSAN_OPTIONS, which names the leak suppressions.
llvm_config.with_system_environment(["HOME", "TMP", "TEMP", "ASAN_OPTIONS", "LSAN_OPTIONS",
                                     "ASAN_SYMBOLIZER_PATH"])
llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.kiln_tools_dir, append_path=True)

# Execution tests (test/codegen/cpu/run-*.mlir) lower with kiln-opt and run
# `main` with mlir-cpu-runner; the runner needs MLIR's runtime helpers
# (printMemrefF32, ...) and kiln's BLAS shims (built as kiln_runner_shims).
def _lib(directory, name):
    return os.path.join(getattr(config, directory, "") or "", name)

_runner_libs = {
    "%mlir_c_runner_utils": _lib("llvm_lib_dir", "libmlir_c_runner_utils.so"),
    "%mlir_runner_utils": _lib("llvm_lib_dir", "libmlir_runner_utils.so"),
    "%kiln_runner_shims": _lib("kiln_lib_dir", "libkiln_runner_shims.so"),
}
for _name, _path in _runner_libs.items():
    config.substitutions.append((_name, _path))
if all(os.path.exists(p) for p in _runner_libs.values()) and os.path.exists(
    os.path.join(config.llvm_tools_dir, "mlir-cpu-runner")
):
    config.available_features.add("mlir-cpu-runner")

# CUDA source-emission tests (test/codegen/cuda) need only kiln-translate;
# the ones that also compile with NVRTC require this feature.
if getattr(config, "kiln_have_nvrtc", "OFF") in ("ON", "1", "TRUE", "True"):
    config.available_features.add("nvrtc")
