//===- KilnRandomOps.td - counter-based random numbers ---------*- tablegen -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Random numbers inside graphs: `kiln.random`, a counter-based generator
// (Philox 4x32-10) whose value at each element is a pure function of a seed,
// an offset and the element's index, so the op is side-effect free, fuses
// with its consumers like any elementwise op and gives the same values when
// recomputed (dropout's mask in the backward). Included by KilnOps.td.
//===----------------------------------------------------------------------===//

#ifndef KILN_RANDOM_OPS_TD
#define KILN_RANDOM_OPS_TD

/// A 0-d i64 tensor (the seed and offset of `kiln.random`).
def Kiln_I64Scalar : 0DTensorOf<[I64]>,
    BuildableType<"::mlir::RankedTensorType::get({}, $_builder.getI64Type())">;

def Kiln_RandomOp : Kiln_Op<"random"> {
  let summary = "Counter-based random numbers (torch.rand / randn / randint)";
  let description = [{
    Fills the result with random values from Philox 4x32-10 (Salmon et al.,
    "Parallel random numbers: as easy as 1, 2, 3"). Element `i` (its
    row-major linear index) is computed from the key
    `(lo32(seed), hi32(seed))` and the counter
    `(lo32(offset + i), hi32(offset + i), 0, 0)`; of the four 32-bit words
    `r0..r3` of the result, `distribution` uses:

    - `"uniform"`: values in `[0, 1)` from the top bits of `r0` that the
      element type holds exactly (24 for f32, 11 for f16, 8 for bf16; f64
      takes 53 bits of `r0:r1`), as torch.rand;
    - `"normal"`: a standard normal from Box-Muller on `r0` and `r1`,
      `sqrt(-2 ln(1 - u0)) * cos(2 pi u1)`, computed in f32 (f64 for f64)
      and rounded once, as torch.randn;
    - `"integer"`: `low + (r1:r0 mod (high - low))` in `[low, high)`, as
      torch.randint (integer results only).

    `seed` and `offset` are 0-d i64 tensors; the frontend passes a seed drawn
    from torch's default generator on every call and gives each random op of
    a graph its own offset (a stream of 2^40 values), so the op is a pure
    function of its operands: CSE may merge two identical ops (they denote
    the same values). The values are not bitwise torch's (torch's CPU
    generator is a Mersenne twister); their distributions are. A result
    with dynamic dims takes them from `like`, a tensor of the result's
    shape whose values are not read.

    The verifier checks the distribution name, a float result for
    `uniform`/`normal` and an integer (not i1) one for `integer`, `low` and
    `high` present exactly for `integer` with `low < high`, and that `like`
    is given when (and only when) the result has a dynamic dim, with a
    shape compatible with the result.

    Example:
    ```mlir
    %u = kiln.random "uniform" %seed, %offset : tensor<4x8xf32>
    %n = kiln.random "normal" %seed, %offset : tensor<16xf64>
    %i = kiln.random "integer" %seed, %offset {high = 10 : i64, low = -3 : i64} : tensor<5xi64>
    %d = kiln.random "uniform" %seed, %offset like(%x : tensor<?x8xf32>) : tensor<?x8xf32>
    ```
  }];
  let arguments = (ins StrAttr:$distribution, Kiln_I64Scalar:$seed,
                   Kiln_I64Scalar:$offset, Optional<Kiln_Tensor>:$like,
                   OptionalAttr<I64Attr>:$low, OptionalAttr<I64Attr>:$high);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = [{
    $distribution $seed `,` $offset (`like` `(` $like^ `:` type($like) `)`)?
    attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
}

#endif // KILN_RANDOM_OPS_TD
