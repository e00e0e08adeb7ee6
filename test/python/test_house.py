# SPDX-License-Identifier: Apache-2.0
"""The checks that keep the house clean can fail: cmake/KilnLayering.cmake
rejects a library that reaches a layer above it, and tools/check_house.py
finds oversized functions, environment reads below the frontend and lit
directives without a colon. Each check runs here on a small made-up tree,
once clean and once broken."""
from __future__ import annotations

import importlib.util
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _check_house():
    spec = importlib.util.spec_from_file_location("check_house", ROOT / "tools" / "check_house.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _configure(tmp_path: Path, body: str) -> subprocess.CompletedProcess:
    """Configures a CMake project (no languages) that includes the layering
    rules and declares the targets in `body`."""
    cmake = shutil.which("cmake")
    if cmake is None:
        pytest.skip("cmake not found")
    src = tmp_path / "src"
    src.mkdir()
    (src / "CMakeLists.txt").write_text(textwrap.dedent(f"""\
        cmake_minimum_required(VERSION 3.20)
        project(layering_probe NONE)
        include({(ROOT / "cmake" / "KilnLayering.cmake").as_posix()})
        """) + textwrap.dedent(body))
    return subprocess.run([cmake, "-S", str(src), "-B", str(tmp_path / "build")],
                          capture_output=True, text=True)


def test_layering_accepts_runtime_without_mlir(tmp_path):
    r = _configure(tmp_path, """\
        add_library(KilnRuntime INTERFACE)
        add_library(KilnRuntimeCpu INTERFACE)
        target_link_libraries(KilnRuntimeCpu INTERFACE KilnRuntime openblas dl)
        kiln_forbid_links(KilnRuntimeCpu "^(MLIR|LLVM)" "the runtime links no MLIR")
        """)
    assert r.returncode == 0, r.stderr


def test_layering_rejects_runtime_reaching_mlir_through_another_target(tmp_path):
    r = _configure(tmp_path, """\
        add_library(KilnIR INTERFACE)
        target_link_libraries(KilnIR INTERFACE MLIR)
        add_library(KilnRuntimeCpu INTERFACE)
        target_link_libraries(KilnRuntimeCpu INTERFACE KilnIR)
        kiln_forbid_links(KilnRuntimeCpu "^(MLIR|LLVM)" "the runtime links no MLIR")
        """)
    assert r.returncode != 0
    assert "KilnRuntimeCpu links MLIR" in r.stderr


def test_layering_rejects_cuda_backend_linking_the_cpu_jit(tmp_path):
    r = _configure(tmp_path, """\
        add_library(KilnCpuCodegen INTERFACE)
        add_library(KilnCudaCodegen INTERFACE)
        target_link_libraries(KilnCudaCodegen INTERFACE KilnCpuCodegen)
        kiln_forbid_links(KilnCudaCodegen "^KilnCpuCodegen$" "no CPU JIT in the CUDA backend")
        """)
    assert r.returncode != 0
    assert "KilnCudaCodegen links KilnCpuCodegen" in r.stderr


def test_layering_rejects_mlir_header_in_runtime_source(tmp_path):
    source = tmp_path / "src" / "Shim.cpp"
    r = _configure(tmp_path, f"""\
        file(WRITE {source.as_posix()} "#include \\"mlir/IR/Value.h\\"\\n")
        add_library(KilnRuntimeCpu STATIC {source.as_posix()})
        kiln_forbid_includes(KilnRuntimeCpu "mlir/|llvm/" "no MLIR headers in the runtime")
        """)
    assert r.returncode != 0
    assert "includes" in r.stderr and "mlir/IR/Value.h" in r.stderr


def test_function_sizes_are_measured(tmp_path):
    house = _check_house()
    body = "\n".join(f"  x += {i};" for i in range(160))
    f = tmp_path / "Big.cpp"
    f.write_text(f"int small(int x) {{\n  return x;\n}}\n\nint big(int x) {{\n{body}\n  return x;\n}}\n")
    sizes = {house.function_name(name): n for name, _, n in house.functions(f)}
    assert sizes["small"] == 3
    assert sizes["big"] == 163


def test_function_sizes_see_wrapped_signatures_and_skip_macros(tmp_path, monkeypatch):
    """clang-format wraps long parameter lists (the body then starts on a
    continuation line); macro bodies and macro calls are not functions."""
    house = _check_house()
    body = "\n".join(f"  x += {i};" for i in range(160))
    f = tmp_path / "Wrapped.cpp"
    f.write_text(
        "#define TWICE(OP) \\\n  int OP(int x) { return 2 * x; }\n"
        "TWICE(a)\nTWICE(b)\n#undef TWICE\n\n"
        "int Widget::wrapped(int x, int yyyyyyyyyyyyyyyyyyyyyyyy,\n"
        f"                    int zzzzzzzzzzzzzzzzzzzzzz) {{\n{body}\n  return x;\n}}\n\n"
        "__attribute__((visibility(\"default\"))) int\nexported(int x) {\n  return x;\n}\n")
    sizes = {house.function_name(name): n for name, _, n in house.functions(f)}
    assert sizes == {"Widget::wrapped": 164, "exported": 4}, sizes
    monkeypatch.setattr(house, "ROOT", tmp_path)
    assert house.size_report([f]) == {"Wrapped.cpp:Widget::wrapped": 164}


def test_environment_reads_below_the_frontend_are_reported(tmp_path, monkeypatch):
    house = _check_house()
    monkeypatch.setattr(house, "ROOT", tmp_path)
    (tmp_path / "codegen").mkdir()
    bad = tmp_path / "codegen" / "Pass.cpp"
    bad.write_text('const char *e = std::getenv("KILN_X");\n')
    ok = tmp_path / "codegen" / "Other.cpp"
    ok.write_text("int x = 0;\n")
    problems = house.check_environment([bad, ok])
    assert len(problems) == 1 and "codegen/Pass.cpp:1" in problems[0]


def test_lit_check_without_colon_is_reported(tmp_path, monkeypatch):
    house = _check_house()
    monkeypatch.setattr(house, "ROOT", tmp_path)
    f = tmp_path / "case.mlir"
    f.write_text("// CHECK-LABEL: func.func @f\n// CHECK kiln.add\n// CHECK: kiln.mul\n")
    problems = house.check_lit([f])
    assert len(problems) == 1 and "case.mlir:2" in problems[0]


def test_the_tree_is_clean():
    """What `make check-house` runs, so a failure shows up in pytest too."""
    house = _check_house()
    files = house.tracked_files()
    problems = (house.check_sizes(files) + house.check_environment(files)
                + house.check_layout(files) + house.check_lit(files))
    assert problems == []
