// RUN: kiln-opt %s -split-input-file -verify-diagnostics

// Every diagnostic of the kiln.random verifier (ir/KilnRandomOps.cpp).

// Tests that an unknown distribution is rejected.
func.func @random_distribution(%s: tensor<i64>) {
  // expected-error @+1 {{'kiln.random' op distribution must be "uniform", "normal" or "integer", got "poisson"}}
  %0 = kiln.random "poisson" %s, %s : tensor<4xf32>
  return
}

// -----

// Tests that uniform needs a float result.
func.func @random_uniform_int(%s: tensor<i64>) {
  // expected-error @+1 {{'kiln.random' op a "uniform" distribution needs a float result, got 'i64'}}
  %0 = kiln.random "uniform" %s, %s : tensor<4xi64>
  return
}

// -----

// Tests that integer needs an integer result that is not i1.
func.func @random_integer_bool(%s: tensor<i64>) {
  // expected-error @+1 {{'kiln.random' op an "integer" distribution needs an integer result, got 'i1'}}
  %0 = kiln.random "integer" %s, %s {low = 0 : i64, high = 2 : i64} : tensor<4xi1>
  return
}

// -----

// Tests that integer needs both bounds.
func.func @random_integer_bounds(%s: tensor<i64>) {
  // expected-error @+1 {{'kiln.random' op low and high are given exactly for the "integer" distribution}}
  %0 = kiln.random "integer" %s, %s {high = 2 : i64} : tensor<4xi64>
  return
}

// -----

// Tests that bounds are rejected on a float distribution.
func.func @random_normal_bounds(%s: tensor<i64>) {
  // expected-error @+1 {{'kiln.random' op low and high are given exactly for the "integer" distribution}}
  %0 = kiln.random "normal" %s, %s {low = 0 : i64, high = 2 : i64} : tensor<4xf32>
  return
}

// -----

// Tests that low must be below high (negative bounds compare as signed).
func.func @random_integer_empty(%s: tensor<i64>) {
  // expected-error @+1 {{'kiln.random' op low (3) must be less than high (-2)}}
  %0 = kiln.random "integer" %s, %s {low = 3 : i64, high = -2 : i64} : tensor<4xi64>
  return
}

// -----

// Tests that a dynamic result needs `like`.
func.func @random_dynamic(%s: tensor<i64>) {
  // expected-error @+1 {{'kiln.random' op `like` is required exactly when the result has a dynamic dim}}
  %0 = kiln.random "uniform" %s, %s : tensor<?xf32>
  return
}

// -----

// Tests that a static result takes no `like`.
func.func @random_static_like(%s: tensor<i64>, %x: tensor<4xf32>) {
  // expected-error @+1 {{'kiln.random' op `like` is required exactly when the result has a dynamic dim}}
  %0 = kiln.random "uniform" %s, %s like(%x : tensor<4xf32>) : tensor<4xf32>
  return
}

// -----

// Tests that `like` must have the result's shape.
func.func @random_like_shape(%s: tensor<i64>, %x: tensor<?x3xf32>) {
  // expected-error @+1 {{'kiln.random' op `like` of type 'tensor<?x3xf32>' does not have the result's shape}}
  %0 = kiln.random "uniform" %s, %s like(%x : tensor<?x3xf32>) : tensor<?x4xf32>
  return
}

// -----

// Tests that the seed must be a 0-d i64 tensor.
func.func @random_seed_type(%s: tensor<1xi64>, %o: tensor<i64>) {
  // expected-error @+1 {{'kiln.random' op operand #0 must be 0D tensor of 64-bit signless integer values}}
  %0 = "kiln.random"(%s, %o) <{distribution = "uniform"}> : (tensor<1xi64>, tensor<i64>) -> tensor<4xf32>
  return
}
