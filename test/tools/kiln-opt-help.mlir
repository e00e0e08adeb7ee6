// RUN: kiln-opt --help | FileCheck %s
// RUN: kiln-opt %s --dump-pass-pipeline -kiln-optimize -o /dev/null 2>&1 \
// RUN: | FileCheck %s --check-prefix=OPTIMIZE

// Driver test: kiln-opt registers the kiln dialect, every kiln pass
// (registerAllPasses, shared with the Python extension) and both pipelines.

// Tests that --help lists the kiln dialect among the loaded dialects, each
// kiln pass under its kebab-case flag, and the two pipelines under
// "Pass Pipelines".
// CHECK-LABEL: Available Dialects:
// CHECK-SAME: kiln
// CHECK-DAG: --kiln-cpu-approximate-math {{.*}}- Expands math ops
// CHECK-DAG: --kiln-convert-to-linalg {{.*}}- Lowers kiln ops to linalg
// CHECK-DAG: --kiln-decompose {{.*}}- Rewrites composite kiln ops
// CHECK-DAG: --kiln-destination-outputs {{.*}}- Turns function results into caller-provided output buffers
// CHECK-DAG: --kiln-fuse-linalg-elementwise {{.*}}- Fuses elementwise linalg.generic producers
// CHECK-DAG: --kiln-cpu-linalg-to-blas {{.*}}- Replaces f32/f64 matmuls
// CHECK: Pass Pipelines:
// CHECK-DAG: --kiln-cpu-lowering {{.*}}- Lower optimized kiln IR to LLVM
// CHECK-DAG: --kiln-optimize {{.*}}- kiln's target-independent pipeline

// Tests that -kiln-optimize expands, per function, to canonicalize, CSE,
// kiln-decompose, canonicalize, CSE (docs/architecture.md relies on this
// order).
// OPTIMIZE: builtin.module(func.func(canonicalize{{.*}},cse,kiln-decompose,canonicalize{{.*}},cse))
func.func @empty() {
  return
}
