// RUN: kiln-opt %s -split-input-file -verify-diagnostics -kiln-cpu-lowering

// What kiln-cpu-lowering rejects: each case must stop the pipeline with an
// error at the offending op (or function) rather than crash or emit
// half-lowered IR. The frontend falls back to eager for these graphs.

// Tests that a reshape to a target with several dynamic dims (no static
// shape to build the result from) is reported.
func.func @dynamic_reshape_target(%x: tensor<?x4xf32>) -> tensor<?x?xf32> {
  // expected-error @+1 {{failed to legalize operation 'kiln.reshape'}}
  %0 = kiln.reshape %x : tensor<?x4xf32> -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// Tests that a broadcast_to a dynamic shape is reported.
func.func @dynamic_broadcast_target(%x: tensor<1x4xf32>) -> tensor<?x4xf32> {
  // expected-error @+1 {{failed to legalize operation 'kiln.broadcast_to'}}
  %0 = kiln.broadcast_to %x : tensor<1x4xf32> -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

// Tests that running the lowering without kiln-optimize (so without
// kiln-decompose) reports the composite op instead of failing to legalize it.
func.func @layer_norm_without_optimize(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'kiln.layer_norm' reached codegen; run kiln-decompose first}}
  %0 = kiln.layer_norm %x {num_dims = 1 : i64} : tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

// Tests that a public function with a non-tensor result stops the pipeline
// at kiln-destination-outputs, at the function.
// expected-error @+1 {{result type 'index' is not a ranked tensor}}
func.func @index_result(%x: tensor<2x4xf32>) -> (tensor<2x4xf32>, index) {
  %c = arith.constant 0 : index
  return %x, %c : tensor<2x4xf32>, index
}
