// RUN: kiln-opt %s -split-input-file -kiln-cpu-plan-memory | FileCheck %s

// kiln-cpu-plan-memory (codegen/cpu/PlanMemory.cpp): static top-level
// intermediates become views of one i8 arena, packed by liveness; buffers
// whose uses cannot be followed keep their own alloc.

// Tests that two buffers with disjoint live ranges share offset 0 of one
// arena the size of the larger.
// CHECK-LABEL: func.func @disjoint_share
// CHECK: %[[ARENA:.*]] = memref.alloc() {alignment = 64 : i64, kiln.live_peak_bytes = 64 : i64, kiln.planned_buffers = 2 : i64, kiln.planned_bytes = 128 : i64} : memref<64xi8>
// CHECK-NOT: memref.alloc()
// CHECK: %[[C0:.*]] = arith.constant 0 : index
// CHECK: memref.view %[[ARENA]][%[[C0]]][] : memref<64xi8> to memref<16xf32>
// CHECK: %[[C0B:.*]] = arith.constant 0 : index
// CHECK: memref.view %[[ARENA]][%[[C0B]]][] : memref<64xi8> to memref<16xf32>
// CHECK-NOT: memref.alloc()
func.func @disjoint_share(%x: f32, %out0: memref<16xf32>, %out1: memref<16xf32>) {
  %a = memref.alloc() : memref<16xf32>
  linalg.fill ins(%x : f32) outs(%a : memref<16xf32>)
  memref.copy %a, %out0 : memref<16xf32> to memref<16xf32>
  %b = memref.alloc() : memref<16xf32>
  linalg.fill ins(%x : f32) outs(%b : memref<16xf32>)
  memref.copy %b, %out1 : memref<16xf32> to memref<16xf32>
  return
}

// -----

// Tests that two buffers live at the same time get disjoint bytes (the
// second after the first, 64-byte aligned), even when both allocs are
// hoisted to the top.
// CHECK-LABEL: func.func @overlap_disjoint
// CHECK: %[[ARENA:.*]] = memref.alloc() {alignment = 64 : i64, {{.*}}} : memref<128xi8>
// CHECK: %[[C0:.*]] = arith.constant 0 : index
// CHECK: memref.view %[[ARENA]][%[[C0]]][] : memref<128xi8> to memref<4x4xf32>
// CHECK: %[[C64:.*]] = arith.constant 64 : index
// CHECK: memref.view %[[ARENA]][%[[C64]]][] : memref<128xi8> to memref<4x4xf32>
func.func @overlap_disjoint(%in: memref<4x4xf32>, %out: memref<4x4xf32>) {
  %a = memref.alloc() : memref<4x4xf32>
  %b = memref.alloc() : memref<4x4xf32>
  memref.copy %in, %a : memref<4x4xf32> to memref<4x4xf32>
  memref.copy %in, %b : memref<4x4xf32> to memref<4x4xf32>
  linalg.add ins(%a, %b : memref<4x4xf32>, memref<4x4xf32>) outs(%out : memref<4x4xf32>)
  return
}

// -----

// Tests that a use of a view (collapse_shape) extends the buffer's live
// range: %b is first used while %a's reshaped alias is still read, so they
// cannot share bytes.
// CHECK-LABEL: func.func @alias_extends
// CHECK: %[[ARENA:.*]] = memref.alloc() {alignment = 64 : i64, {{.*}}} : memref<128xi8>
// CHECK: %[[C0:.*]] = arith.constant 0 : index
// CHECK: %[[A:.*]] = memref.view %[[ARENA]][%[[C0]]][] : memref<128xi8> to memref<4x4xf32>
// CHECK: memref.collapse_shape %[[A]]
// CHECK: %[[C64:.*]] = arith.constant 64 : index
// CHECK: memref.view %[[ARENA]][%[[C64]]][] : memref<128xi8> to memref<16xf32>
func.func @alias_extends(%in: memref<4x4xf32>, %in16: memref<16xf32>, %out: memref<16xf32>) {
  %a = memref.alloc() : memref<4x4xf32>
  memref.copy %in, %a : memref<4x4xf32> to memref<4x4xf32>
  %flat = memref.collapse_shape %a [[0, 1]] : memref<4x4xf32> into memref<16xf32>
  %b = memref.alloc() : memref<16xf32>
  memref.copy %in16, %b : memref<16xf32> to memref<16xf32>
  linalg.add ins(%flat, %b : memref<16xf32>, memref<16xf32>) outs(%out : memref<16xf32>)
  return
}

// -----

// Tests that a buffer used inside an scf.for is live for the whole loop:
// in the body %b is first written after %a's last read, but the next
// iteration reads %a again, so they must not share bytes; %c, after the
// loop, takes offset 0 again.
// CHECK-LABEL: func.func @loop_keeps_range
// CHECK: %[[ARENA:.*]] = memref.alloc() {alignment = 64 : i64, {{.*}}} : memref<128xi8>
// CHECK: arith.constant 4 : index
// CHECK: %[[C0:.*]] = arith.constant 0 : index
// CHECK: memref.view %[[ARENA]][%[[C0]]][] : memref<128xi8> to memref<16xf32>
// CHECK: %[[C64:.*]] = arith.constant 64 : index
// CHECK: memref.view %[[ARENA]][%[[C64]]][] : memref<128xi8> to memref<16xf32>
// CHECK: scf.for
// CHECK: %[[C0C:.*]] = arith.constant 0 : index
// CHECK: memref.view %[[ARENA]][%[[C0C]]][] : memref<128xi8> to memref<16xf32>
func.func @loop_keeps_range(%x: f32, %out: memref<16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %a = memref.alloc() : memref<16xf32>
  linalg.fill ins(%x : f32) outs(%a : memref<16xf32>)
  %b = memref.alloc() : memref<16xf32>
  scf.for %i = %c0 to %c4 step %c1 {
    %v = memref.load %a[%i] : memref<16xf32>
    memref.store %v, %out[%i] : memref<16xf32>
    linalg.fill ins(%x : f32) outs(%b : memref<16xf32>)
  }
  %c = memref.alloc() : memref<16xf32>
  linalg.fill ins(%x : f32) outs(%c : memref<16xf32>)
  linalg.add ins(%c, %out : memref<16xf32>, memref<16xf32>) outs(%out : memref<16xf32>)
  return
}

// -----

// Tests that a returned buffer keeps its own alloc (its lifetime does not
// end in the function); the other one is still planned.
// CHECK-LABEL: func.func @negative_returned
// CHECK: %[[ARENA:.*]] = memref.alloc() {alignment = 64 : i64, {{.*}}} : memref<64xi8>
// CHECK: memref.view %[[ARENA]]
// CHECK: %[[R:.*]] = memref.alloc() : memref<16xf32>
// CHECK: return %[[R]]
func.func @negative_returned(%x: f32, %out: memref<16xf32>) -> memref<16xf32> {
  %a = memref.alloc() : memref<16xf32>
  linalg.fill ins(%x : f32) outs(%a : memref<16xf32>)
  memref.copy %a, %out : memref<16xf32> to memref<16xf32>
  %r = memref.alloc() : memref<16xf32>
  linalg.fill ins(%x : f32) outs(%r : memref<16xf32>)
  return %r : memref<16xf32>
}

// -----

// Tests that buffers escaping through a view that is returned, a call, or
// an scf.for iter_arg, and a dynamic-size buffer, are all left alone (no
// arena is made).
// CHECK-LABEL: func.func @negative_escapes
// CHECK-NOT: memref.view
// CHECK-NOT: xi8>
// CHECK: memref.alloc() : memref<4x4xf32>
// CHECK: memref.alloc() : memref<16xf32>
// CHECK: memref.alloc() : memref<16xf32>
// CHECK: memref.alloc(%{{.*}}) : memref<?xf32>
func.func private @sink(memref<16xf32>)
func.func @negative_escapes(%x: f32, %n: index) -> memref<16xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %a = memref.alloc() : memref<4x4xf32>
  linalg.fill ins(%x : f32) outs(%a : memref<4x4xf32>)
  %flat = memref.collapse_shape %a [[0, 1]] : memref<4x4xf32> into memref<16xf32>
  %b = memref.alloc() : memref<16xf32>
  func.call @sink(%b) : (memref<16xf32>) -> ()
  %c = memref.alloc() : memref<16xf32>
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%it = %c) -> (memref<16xf32>) {
    scf.yield %it : memref<16xf32>
  }
  %d = memref.alloc(%n) : memref<?xf32>
  linalg.fill ins(%x : f32) outs(%d : memref<?xf32>)
  return %flat : memref<16xf32>
}

// -----

// Tests the greedy-by-size packing: the 256-byte buffer is placed first
// at 0; the two 64-byte ones live with it go above it (256, then 320); the
// last one, live only with the third (at the op that reads it), takes the
// gap below it, offset 0, where the large buffer was.
// CHECK-LABEL: func.func @best_fit
// CHECK: %[[ARENA:.*]] = memref.alloc() {alignment = 64 : i64, {{.*}}} : memref<384xi8>
// CHECK: arith.constant 0 : index
// CHECK: arith.constant 256 : index
// CHECK: arith.constant 320 : index
// CHECK: arith.constant 0 : index
func.func @best_fit(%x: memref<16xf32>, %out: memref<16xf32>, %big: memref<64xf32>) {
  %l = memref.alloc() : memref<64xf32>
  memref.copy %big, %l : memref<64xf32> to memref<64xf32>
  %a = memref.alloc() : memref<16xf32>
  memref.copy %x, %a : memref<16xf32> to memref<16xf32>
  %b = memref.alloc() : memref<16xf32>
  memref.copy %x, %b : memref<16xf32> to memref<16xf32>
  linalg.add ins(%a, %b : memref<16xf32>, memref<16xf32>) outs(%out : memref<16xf32>)
  memref.copy %l, %big : memref<64xf32> to memref<64xf32>
  %c = memref.alloc() : memref<16xf32>
  linalg.add ins(%b, %out : memref<16xf32>, memref<16xf32>) outs(%c : memref<16xf32>)
  memref.copy %c, %out : memref<16xf32> to memref<16xf32>
  return
}

// -----

// Tests that fills hoisted to the top (as bufferization leaves the zero
// fills of GEMM outputs) are moved down to just before the buffer's next
// use, so they do not make the buffers live from the start: %a and %b then
// share offset 0.
// CHECK-LABEL: func.func @sink_hoisted_fills
// CHECK: %[[ARENA:.*]] = memref.alloc() {alignment = 64 : i64, {{.*}}} : memref<64xi8>
// CHECK: %[[A:.*]] = memref.view %[[ARENA]]
// CHECK: %[[B:.*]] = memref.view %[[ARENA]]
// CHECK-NEXT: linalg.fill ins(%{{.*}} : f32) outs(%[[A]] : memref<16xf32>)
// CHECK-NEXT: linalg.add ins(%{{.*}}, %{{.*}} : memref<16xf32>, memref<16xf32>) outs(%[[A]] : memref<16xf32>)
// CHECK-NEXT: memref.copy %[[A]]
// CHECK-NEXT: linalg.fill ins(%{{.*}} : f32) outs(%[[B]] : memref<16xf32>)
// CHECK-NEXT: linalg.add ins(%{{.*}}, %{{.*}} : memref<16xf32>, memref<16xf32>) outs(%[[B]] : memref<16xf32>)
func.func @sink_hoisted_fills(%x: memref<16xf32>, %out0: memref<16xf32>, %out1: memref<16xf32>) {
  %zero = arith.constant 0.0 : f32
  %a = memref.alloc() : memref<16xf32>
  %b = memref.alloc() : memref<16xf32>
  linalg.fill ins(%zero : f32) outs(%a : memref<16xf32>)
  linalg.fill ins(%zero : f32) outs(%b : memref<16xf32>)
  linalg.add ins(%x, %x : memref<16xf32>, memref<16xf32>) outs(%a : memref<16xf32>)
  memref.copy %a, %out0 : memref<16xf32> to memref<16xf32>
  linalg.add ins(%x, %x : memref<16xf32>, memref<16xf32>) outs(%b : memref<16xf32>)
  memref.copy %b, %out1 : memref<16xf32> to memref<16xf32>
  return
}

// -----

// Tests that making a view is not an access: %b's border view (as a pad's
// border fills leave it) is made while %a is live, but %b is first written
// after %a's last read, so they share offset 0. The border fill, hoisted
// above %a's uses, is moved down together with the one after it.
// CHECK-LABEL: func.func @views_do_not_start_range
// CHECK: %[[ARENA:.*]] = memref.alloc() {alignment = 64 : i64, {{.*}}} : memref<64xi8>
// CHECK: %[[C0:.*]] = arith.constant 0 : index
// CHECK: memref.view %[[ARENA]][%[[C0]]][] : memref<64xi8> to memref<16xf32>
// CHECK: %[[C0B:.*]] = arith.constant 0 : index
// CHECK: memref.view %[[ARENA]][%[[C0B]]][] : memref<64xi8> to memref<16xf32>
// CHECK: memref.copy
// CHECK-NEXT: memref.copy
// CHECK-NEXT: linalg.fill
// CHECK-NEXT: linalg.fill
func.func @views_do_not_start_range(%x: memref<16xf32>, %out0: memref<16xf32>, %out1: memref<16xf32>) {
  %zero = arith.constant 0.0 : f32
  %a = memref.alloc() : memref<16xf32>
  %b = memref.alloc() : memref<16xf32>
  %lo = memref.subview %b[0] [4] [1] : memref<16xf32> to memref<4xf32, strided<[1]>>
  %hi = memref.subview %b[12] [4] [1] : memref<16xf32> to memref<4xf32, strided<[1], offset: 12>>
  linalg.fill ins(%zero : f32) outs(%lo : memref<4xf32, strided<[1]>>)
  memref.copy %x, %a : memref<16xf32> to memref<16xf32>
  memref.copy %a, %out0 : memref<16xf32> to memref<16xf32>
  linalg.fill ins(%zero : f32) outs(%hi : memref<4xf32, strided<[1], offset: 12>>)
  linalg.add ins(%b, %x : memref<16xf32>, memref<16xf32>) outs(%out1 : memref<16xf32>)
  return
}

// -----

// Tests that a border copied from a constant global (a max pool's -inf
// border, a pad kiln lowers from a splat constant), hoisted above %a's
// uses by bufferization, moves down to %b's next use like a fill, so %a and
// %b share offset 0; a copy from a global that is not constant stays.
// CHECK-LABEL: func.func @sink_constant_border_copies
// CHECK: %[[ARENA:.*]] = memref.alloc() {alignment = 64 : i64, {{.*}}} : memref<64xi8>
// CHECK: memref.copy %{{.*}}, %{{.*}} : memref<16xf32> to memref<16xf32>
// CHECK-NEXT: memref.copy %{{.*}}, %[[OUT0:.*]] : memref<16xf32> to memref<16xf32>
// CHECK-NEXT: memref.copy %{{.*}}, %{{.*}} : memref<4xf32> to memref<4xf32, strided<[1]>>
// CHECK-NEXT: linalg.add
// CHECK-LABEL: func.func @negative_mutable_global_copy_stays
// CHECK: memref.alloc() {{.*}} : memref<128xi8>
// CHECK: memref.copy %{{.*}}, %{{.*}} : memref<4xf32> to memref<4xf32, strided<[1]>>
// CHECK-NEXT: memref.copy %{{.*}}, %{{.*}} : memref<16xf32> to memref<16xf32>
memref.global "private" constant @border : memref<4xf32> = dense<0xFF800000>
memref.global "private" @mutable : memref<4xf32> = dense<0.0>
func.func @sink_constant_border_copies(%x: memref<16xf32>, %out0: memref<16xf32>, %out1: memref<16xf32>) {
  %g = memref.get_global @border : memref<4xf32>
  %a = memref.alloc() : memref<16xf32>
  %b = memref.alloc() : memref<16xf32>
  %lo = memref.subview %b[0] [4] [1] : memref<16xf32> to memref<4xf32, strided<[1]>>
  memref.copy %g, %lo : memref<4xf32> to memref<4xf32, strided<[1]>>
  memref.copy %x, %a : memref<16xf32> to memref<16xf32>
  memref.copy %a, %out0 : memref<16xf32> to memref<16xf32>
  linalg.add ins(%b, %x : memref<16xf32>, memref<16xf32>) outs(%out1 : memref<16xf32>)
  return
}
func.func @negative_mutable_global_copy_stays(%x: memref<16xf32>, %out0: memref<16xf32>, %out1: memref<16xf32>) {
  %g = memref.get_global @mutable : memref<4xf32>
  %a = memref.alloc() : memref<16xf32>
  %b = memref.alloc() : memref<16xf32>
  %lo = memref.subview %b[0] [4] [1] : memref<16xf32> to memref<4xf32, strided<[1]>>
  memref.copy %g, %lo : memref<4xf32> to memref<4xf32, strided<[1]>>
  memref.copy %x, %a : memref<16xf32> to memref<16xf32>
  memref.copy %a, %out0 : memref<16xf32> to memref<16xf32>
  linalg.add ins(%b, %x : memref<16xf32>, memref<16xf32>) outs(%out1 : memref<16xf32>)
  return
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#tr = affine_map<(d0, d1) -> (d1, d0)>

// Tests in-place reuse: the elementwise op is %a's last access and %b's
// first, with the same map and type (here through a reshape of %b), so %b
// is written over %a (both at offset 0, arena of one buffer).
// CHECK-LABEL: func.func @in_place
// CHECK: %[[ARENA:.*]] = memref.alloc() {alignment = 64 : i64, {{.*}}} : memref<64xi8>
// CHECK: %[[C0:.*]] = arith.constant 0 : index
// CHECK: memref.view %[[ARENA]][%[[C0]]][] : memref<64xi8> to memref<4x4xf32>
// CHECK: %[[C0B:.*]] = arith.constant 0 : index
// CHECK: memref.view %[[ARENA]][%[[C0B]]][] : memref<64xi8> to memref<16xf32>
func.func @in_place(%in: memref<4x4xf32>, %out: memref<16xf32>) {
  %a = memref.alloc() : memref<4x4xf32>
  memref.copy %in, %a : memref<4x4xf32> to memref<4x4xf32>
  %b = memref.alloc() : memref<16xf32>
  %b2 = memref.expand_shape %b [[0, 1]] output_shape [4, 4] : memref<16xf32> into memref<4x4xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : memref<4x4xf32>) outs(%b2 : memref<4x4xf32>) {
  ^bb0(%x: f32, %y: f32):
    %e = math.exp %x : f32
    linalg.yield %e : f32
  }
  memref.copy %b, %out : memref<16xf32> to memref<16xf32>
  return
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#tr = affine_map<(d0, d1) -> (d1, d0)>

// Tests that there is no in-place reuse (each op's input at 0, output at
// 64) when the input is read again later, when it is read through a
// different map (a transpose would read elements already overwritten), or
// when the op also reads it through a second operand.
// CHECK-LABEL: func.func @negative_in_place
// CHECK: memref.alloc() {alignment = 64 : i64, {{.*}}} : memref<128xi8>
// CHECK: arith.constant 0 : index
// CHECK: arith.constant 64 : index
// CHECK: linalg.generic
// CHECK: arith.constant 0 : index
// CHECK: arith.constant 64 : index
// CHECK: linalg.generic
// CHECK: arith.constant 0 : index
// CHECK: arith.constant 64 : index
// CHECK: linalg.generic
func.func @negative_in_place(%in: memref<4x4xf32>, %out: memref<4x4xf32>) {
  %a = memref.alloc() : memref<4x4xf32>
  memref.copy %in, %a : memref<4x4xf32> to memref<4x4xf32>
  %b = memref.alloc() : memref<4x4xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : memref<4x4xf32>) outs(%b : memref<4x4xf32>) {
  ^bb0(%x: f32, %y: f32):
    linalg.yield %x : f32
  }
  linalg.add ins(%a, %b : memref<4x4xf32>, memref<4x4xf32>) outs(%out : memref<4x4xf32>)
  %c = memref.alloc() : memref<4x4xf32>
  memref.copy %in, %c : memref<4x4xf32> to memref<4x4xf32>
  %d = memref.alloc() : memref<4x4xf32>
  linalg.generic {indexing_maps = [#tr, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c : memref<4x4xf32>) outs(%d : memref<4x4xf32>) {
  ^bb0(%x: f32, %y: f32):
    linalg.yield %x : f32
  }
  memref.copy %d, %out : memref<4x4xf32> to memref<4x4xf32>
  %e = memref.alloc() : memref<4x4xf32>
  memref.copy %in, %e : memref<4x4xf32> to memref<4x4xf32>
  %f = memref.alloc() : memref<4x4xf32>
  linalg.generic {indexing_maps = [#id, #tr, #id], iterator_types = ["parallel", "parallel"]}
      ins(%e, %e : memref<4x4xf32>, memref<4x4xf32>) outs(%f : memref<4x4xf32>) {
  ^bb0(%x: f32, %x2: f32, %y: f32):
    %s = arith.addf %x, %x2 : f32
    linalg.yield %s : f32
  }
  memref.copy %f, %out : memref<4x4xf32> to memref<4x4xf32>
  return
}

// -----

// Tests that buffers passed to a callee marked kiln.buffer_args_only (the
// oneDNN shim), also through extract_strided_metadata + reinterpret_cast,
// are planned: live at the call only, the input and output of one call get
// disjoint bytes, and the next call's output reuses the first input's
// bytes. The same call to an unmarked callee keeps its allocs.
// CHECK-LABEL: func.func @buffer_args_only_call
// CHECK: %[[ARENA:.*]] = memref.alloc() {alignment = 64 : i64, {{.*}}kiln.planned_buffers = 3 : i64{{.*}}} : memref<128xi8>
// CHECK-NOT: memref.alloc()
// CHECK: %[[C0:.*]] = arith.constant 0 : index
// CHECK: memref.view %[[ARENA]][%[[C0]]][] : memref<128xi8> to memref<16xf32>
// CHECK: %[[C64:.*]] = arith.constant 64 : index
// CHECK: memref.view %[[ARENA]][%[[C64]]][] : memref<128xi8> to memref<16xf32>
// CHECK: %[[C0B:.*]] = arith.constant 0 : index
// CHECK: memref.view %[[ARENA]][%[[C0B]]][] : memref<128xi8> to memref<16xf32>
// CHECK-LABEL: func.func @negative_unmarked_call
// CHECK-NOT: memref.view
func.func private @shim(memref<?xf32, strided<[?], offset: ?>>, memref<16xf32>) attributes {kiln.buffer_args_only}
func.func private @other(memref<?xf32, strided<[?], offset: ?>>, memref<16xf32>)
func.func @buffer_args_only_call(%x: f32, %out: memref<16xf32>) {
  %a = memref.alloc() {alignment = 64 : i64} : memref<16xf32>
  linalg.fill ins(%x : f32) outs(%a : memref<16xf32>)
  %b = memref.alloc() {alignment = 64 : i64} : memref<16xf32>
  %base, %off, %size, %stride = memref.extract_strided_metadata %a : memref<16xf32> -> memref<f32>, index, index, index
  %av = memref.reinterpret_cast %base to offset: [%off], sizes: [%size], strides: [%stride] : memref<f32> to memref<?xf32, strided<[?], offset: ?>>
  func.call @shim(%av, %b) : (memref<?xf32, strided<[?], offset: ?>>, memref<16xf32>) -> ()
  %c = memref.alloc() {alignment = 64 : i64} : memref<16xf32>
  %bv = memref.cast %b : memref<16xf32> to memref<?xf32, strided<[?], offset: ?>>
  func.call @shim(%bv, %c) : (memref<?xf32, strided<[?], offset: ?>>, memref<16xf32>) -> ()
  memref.copy %c, %out : memref<16xf32> to memref<16xf32>
  return
}
func.func @negative_unmarked_call(%x: f32, %out: memref<16xf32>) {
  %a = memref.alloc() {alignment = 64 : i64} : memref<16xf32>
  linalg.fill ins(%x : f32) outs(%a : memref<16xf32>)
  %b = memref.alloc() {alignment = 64 : i64} : memref<16xf32>
  %av = memref.cast %a : memref<16xf32> to memref<?xf32, strided<[?], offset: ?>>
  func.call @other(%av, %b) : (memref<?xf32, strided<[?], offset: ?>>, memref<16xf32>) -> ()
  memref.copy %b, %out : memref<16xf32> to memref<16xf32>
  return
}

// -----

// Tests that a buffer still live where an output marked kiln.lazy_output
// is first written keeps its own alloc when that lowers the estimated
// peak (by at least 64 KiB): the big %a (128 KiB) dies before the output's
// first write; the small %s (a sum) is read by it. With %s in the arena the
// arena would stay alive under the 128 KiB output; without it the arena
// holds %a alone and dies first (kiln-cpu-free-early frees it).
// CHECK-LABEL: func.func @lazy_output_cuts_tail
// CHECK: memref.alloc() {alignment = 64 : i64, kiln.live_peak_bytes = 131072 : i64, kiln.planned_buffers = 1 : i64, kiln.planned_bytes = 131072 : i64} : memref<131072xi8>
// CHECK: %[[S:.*]] = memref.alloc() : memref<f32>
// CHECK: linalg.generic {{.*}} outs(%[[S]] :
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[S]] :
func.func @lazy_output_cuts_tail(%x: memref<32768xf32>, %out: memref<32768xf32> {kiln.lazy_output = 0 : i64}) {
  %a = memref.alloc() : memref<32768xf32>
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%x : memref<32768xf32>) outs(%a : memref<32768xf32>) {
  ^bb0(%v: f32, %o: f32):
    %e = math.exp %v : f32
    linalg.yield %e : f32
  }
  %s = memref.alloc() : memref<f32>
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> ()>], iterator_types = ["reduction"]}
      ins(%a : memref<32768xf32>) outs(%s : memref<f32>) {
  ^bb0(%v: f32, %o: f32):
    %r = arith.addf %v, %o : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> ()>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%x, %s : memref<32768xf32>, memref<f32>) outs(%out : memref<32768xf32>) {
  ^bb0(%v: f32, %t: f32, %o: f32):
    %m = arith.mulf %v, %t : f32
    linalg.yield %m : f32
  }
  return
}

// -----

// The same function without the mark: both buffers share the arena.
// CHECK-LABEL: func.func @no_lazy_output_one_arena
// CHECK: memref.alloc() {alignment = 64 : i64, kiln.live_peak_bytes = 131076 : i64, kiln.planned_buffers = 2 : i64, {{.*}}}
// CHECK-NOT: memref.alloc()
func.func @no_lazy_output_one_arena(%x: memref<32768xf32>, %out: memref<32768xf32>) {
  %a = memref.alloc() : memref<32768xf32>
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%x : memref<32768xf32>) outs(%a : memref<32768xf32>) {
  ^bb0(%v: f32, %o: f32):
    %e = math.exp %v : f32
    linalg.yield %e : f32
  }
  %s = memref.alloc() : memref<f32>
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> ()>], iterator_types = ["reduction"]}
      ins(%a : memref<32768xf32>) outs(%s : memref<f32>) {
  ^bb0(%v: f32, %o: f32):
    %r = arith.addf %v, %o : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> ()>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%x, %s : memref<32768xf32>, memref<f32>) outs(%out : memref<32768xf32>) {
  ^bb0(%v: f32, %t: f32, %o: f32):
    %m = arith.mulf %v, %t : f32
    linalg.yield %m : f32
  }
  return
}
