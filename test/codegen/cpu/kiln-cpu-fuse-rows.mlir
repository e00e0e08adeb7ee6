// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(kiln-cpu-fuse-rows))' | FileCheck %s

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#bcast = affine_map<(d0, d1) -> (d1)>

// Tests that a row reduction and the elementwise op consuming it run in one
// loop over rows on row subviews; an operand without d0 (a bias) is passed
// whole; the per-row accumulator, used only inside one row's iteration,
// shrinks to one row on the stack (a view of the same element every
// iteration; no malloc, and LLVM sees it cannot alias the arguments).
// CHECK-LABEL: func.func @reduce_then_scale
// CHECK-SAME: (%[[X:.*]]: memref<16x32xf32>, %[[B:.*]]: memref<32xf32>, %[[OUT:.*]]: memref<16x32xf32>)
// CHECK: %[[ACC:.*]] = memref.alloca() : memref<1xf32>
// CHECK: scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step
// CHECK: %[[ACC_VIEW:.*]] = memref.reinterpret_cast %[[ACC]] to offset: [0], sizes: [1], strides: [1]
// CHECK: %[[ACC_ROW:.*]] = memref.cast %[[ACC_VIEW]]
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%[[ACC_ROW]]
// CHECK: %[[X_ROW:.*]] = memref.subview %[[X]][%[[I]], 0] [1, 32] [1, 1]
// CHECK: linalg.generic {{.*}} ins(%[[X_ROW]] : memref<1x32xf32, strided<[32, 1], offset: ?>>)
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}}, %[[B]] : {{.*}}, memref<32xf32>)
// CHECK-NOT: memref.dealloc
// CHECK: return
func.func @reduce_then_scale(%x: memref<16x32xf32>, %b: memref<32xf32>, %out: memref<16x32xf32>) {
  %zero = arith.constant 0.0 : f32
  %acc = memref.alloc() : memref<16xf32>
  linalg.fill ins(%zero : f32) outs(%acc : memref<16xf32>)
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<16x32xf32>) outs(%acc : memref<16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#id, #row, #bcast, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %acc, %b : memref<16x32xf32>, memref<16xf32>, memref<32xf32>) outs(%out : memref<16x32xf32>) {
  ^bb0(%a: f32, %s: f32, %c: f32, %o: f32):
    %d = arith.divf %a, %s : f32
    %r = arith.addf %d, %c : f32
    linalg.yield %r : f32
  }
  memref.dealloc %acc : memref<16xf32>
  return
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>

// Tests that a reduction over rows (softmax over dim 0) is not cut into
// rows: its result is complete only after the last row.
// CHECK-LABEL: func.func @negative_reduction_over_rows
// CHECK-NOT: scf.for
func.func @negative_reduction_over_rows(%x: memref<16x32xf32>, %out: memref<16x32xf32>) {
  %acc = memref.alloc() : memref<32xf32>
  linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]}
      ins(%x : memref<16x32xf32>) outs(%acc : memref<32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %acc : memref<16x32xf32>, memref<32xf32>) outs(%out : memref<16x32xf32>) {
  ^bb0(%a: f32, %s: f32, %o: f32):
    %r = arith.divf %a, %s : f32
    linalg.yield %r : f32
  }
  memref.dealloc %acc : memref<32xf32>
  return
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#t = affine_map<(d0, d1) -> (d1, d0)>

// Tests that an op reading through a transposed map stays whole (it would
// need column slices), so the reduction before it is not fused with it.
// CHECK-LABEL: func.func @negative_transposed_input
// CHECK-NOT: scf.for
func.func @negative_transposed_input(%x: memref<16x16xf32>, %out: memref<16x16xf32>) {
  %acc = memref.alloc() : memref<16xf32>
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<16x16xf32>) outs(%acc : memref<16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#t, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %acc : memref<16x16xf32>, memref<16xf32>) outs(%out : memref<16x16xf32>) {
  ^bb0(%a: f32, %s: f32, %o: f32):
    %r = arith.divf %a, %s : f32
    linalg.yield %r : f32
  }
  memref.dealloc %acc : memref<16xf32>
  return
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>

// Tests that a memory op between two row-wise ops ends the run.
// CHECK-LABEL: func.func @negative_copy_in_between
// CHECK-NOT: scf.for
func.func @negative_copy_in_between(%x: memref<16x32xf32>, %y: memref<16xf32>, %out: memref<16x32xf32>) {
  %acc = memref.alloc() : memref<16xf32>
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<16x32xf32>) outs(%acc : memref<16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  }
  memref.copy %y, %acc : memref<16xf32> to memref<16xf32>
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %acc : memref<16x32xf32>, memref<16xf32>) outs(%out : memref<16x32xf32>) {
  ^bb0(%a: f32, %s: f32, %o: f32):
    %r = arith.divf %a, %s : f32
    linalg.yield %r : f32
  }
  memref.dealloc %acc : memref<16xf32>
  return
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// Tests that purely elementwise runs (no reduction) are left alone.
// CHECK-LABEL: func.func @negative_no_reduction
// CHECK-NOT: scf.for
func.func @negative_no_reduction(%x: memref<16x32xf32>, %t: memref<16x32xf32>, %out: memref<16x32xf32>) {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<16x32xf32>) outs(%t : memref<16x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.negf %a : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%t : memref<16x32xf32>) outs(%out : memref<16x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = math.exp %a : f32
    linalg.yield %r : f32
  }
  return
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>

// Tests that a per-row buffer also read after the row loop (copied into a
// second result) keeps all its rows: only buffers used one row at a time
// inside the loop shrink.
// CHECK-LABEL: func.func @negative_contract_used_after_loop
// CHECK: %[[ACC:.*]] = memref.alloc() : memref<16xf32>
// CHECK: scf.for
// CHECK-NOT: memref.reinterpret_cast
// CHECK: memref.copy %[[ACC]]
func.func @negative_contract_used_after_loop(%x: memref<16x32xf32>, %out: memref<16x32xf32>, %sums: memref<16xf32>) {
  %zero = arith.constant 0.0 : f32
  %acc = memref.alloc() : memref<16xf32>
  linalg.fill ins(%zero : f32) outs(%acc : memref<16xf32>)
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<16x32xf32>) outs(%acc : memref<16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %acc : memref<16x32xf32>, memref<16xf32>) outs(%out : memref<16x32xf32>) {
  ^bb0(%a: f32, %s: f32, %o: f32):
    %d = arith.divf %a, %s : f32
    linalg.yield %d : f32
  }
  memref.copy %acc, %sums : memref<16xf32> to memref<16xf32>
  memref.dealloc %acc : memref<16xf32>
  return
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>

// Tests that a contracted row larger than 64 KiB (32768 f32) stays on the
// heap, allocated and freed once, not per row.
// CHECK-LABEL: func.func @large_row_buffer_on_heap
// CHECK: %[[T:.*]] = memref.alloc() : memref<1x32768xf32>
// CHECK: scf.for
// CHECK: memref.reinterpret_cast %[[T]]
// CHECK: memref.dealloc %[[T]]
func.func @large_row_buffer_on_heap(%x: memref<4x32768xf32>, %out: memref<4x32768xf32>) {
  %zero = arith.constant 0.0 : f32
  %t = memref.alloc() : memref<4x32768xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<4x32768xf32>) outs(%t : memref<4x32768xf32>) {
  ^bb0(%a: f32, %o: f32):
    %e = math.exp %a : f32
    linalg.yield %e : f32
  }
  %acc = memref.alloc() : memref<4xf32>
  linalg.fill ins(%zero : f32) outs(%acc : memref<4xf32>)
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%t : memref<4x32768xf32>) outs(%acc : memref<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%t, %acc : memref<4x32768xf32>, memref<4xf32>) outs(%out : memref<4x32768xf32>) {
  ^bb0(%a: f32, %s: f32, %o: f32):
    %d = arith.divf %a, %s : f32
    linalg.yield %d : f32
  }
  memref.dealloc %acc : memref<4xf32>
  memref.dealloc %t : memref<4x32768xf32>
  return
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>

// Tests that a GEMM output's zero fill, hoisted above a row-wise run by
// bufferization, is first moved down to the GEMM instead of joining the
// run's row loop (where it would make the GEMM output live from the loop
// on: convnext_tiny's three MLP hidden buffers of a stage, zeroed in the
// stage's first LayerNorm loop).
// CHECK-LABEL: func.func @gemm_fill_sinks_out_of_the_row_loop
// CHECK: %[[G:.*]] = memref.alloc() : memref<16x8xf32>
// CHECK: scf.for
// CHECK-NOT: outs(%[[G]]
// CHECK: } {kiln.independent_rows}
// CHECK: linalg.generic
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%[[G]] : memref<16x8xf32>)
// CHECK-NEXT: linalg.matmul
func.func @gemm_fill_sinks_out_of_the_row_loop(%x: memref<16x32xf32>, %w: memref<32x8xf32>, %out: memref<16x32xf32>, %y: memref<16x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %g = memref.alloc() : memref<16x8xf32>
  linalg.fill ins(%zero : f32) outs(%g : memref<16x8xf32>)
  %acc = memref.alloc() : memref<16xf32>
  linalg.fill ins(%zero : f32) outs(%acc : memref<16xf32>)
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<16x32xf32>) outs(%acc : memref<16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %acc : memref<16x32xf32>, memref<16xf32>) outs(%out : memref<16x32xf32>) {
  ^bb0(%a: f32, %s: f32, %o: f32):
    %d = arith.divf %a, %s : f32
    linalg.yield %d : f32
  }
  memref.dealloc %acc : memref<16xf32>
  %t = memref.alloc() : memref<16x32xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%out : memref<16x32xf32>) outs(%t : memref<16x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %d = arith.negf %a : f32
    linalg.yield %d : f32
  }
  linalg.matmul ins(%t, %w : memref<16x32xf32>, memref<32x8xf32>) outs(%g : memref<16x8xf32>)
  memref.copy %g, %y : memref<16x8xf32> to memref<16x8xf32>
  memref.dealloc %g : memref<16x8xf32>
  memref.dealloc %t : memref<16x32xf32>
  return
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>

// Tests that a GEMM output's zero fill sunk right after a row-wise run
// (GPT-2's LM head after the final LayerNorm) stays next to the GEMM,
// which kiln-cpu-linalg-to-blas turns into beta = 0, instead of joining the
// run's row loop (a memset, then a GEMM reading the zeros back).
// CHECK-LABEL: func.func @gemm_fill_after_a_row_run_stays_with_the_gemm
// CHECK: %[[G:.*]] = memref.alloc() : memref<16x8xf32>
// CHECK: scf.for
// CHECK-NOT: outs(%[[G]]
// CHECK: } {kiln.independent_rows}
// CHECK-NEXT: linalg.fill ins(%{{.*}} : f32) outs(%[[G]] : memref<16x8xf32>)
// CHECK-NEXT: linalg.matmul_transpose_b
func.func @gemm_fill_after_a_row_run_stays_with_the_gemm(%x: memref<16x32xf32>, %w: memref<8x32xf32>, %t: memref<16x32xf32>, %y: memref<16x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %g = memref.alloc() : memref<16x8xf32>
  %acc = memref.alloc() : memref<16xf32>
  linalg.fill ins(%zero : f32) outs(%acc : memref<16xf32>)
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<16x32xf32>) outs(%acc : memref<16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %acc : memref<16x32xf32>, memref<16xf32>) outs(%t : memref<16x32xf32>) {
  ^bb0(%a: f32, %s: f32, %o: f32):
    %d = arith.divf %a, %s : f32
    linalg.yield %d : f32
  }
  linalg.fill ins(%zero : f32) outs(%g : memref<16x8xf32>)
  linalg.matmul_transpose_b ins(%t, %w : memref<16x32xf32>, memref<8x32xf32>) outs(%g : memref<16x8xf32>)
  memref.copy %g, %y : memref<16x8xf32> to memref<16x8xf32>
  memref.dealloc %acc : memref<16xf32>
  memref.dealloc %g : memref<16x8xf32>
  return
}
