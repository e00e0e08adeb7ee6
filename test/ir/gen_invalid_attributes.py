# SPDX-License-Identifier: Apache-2.0
"""Generates test/ir/invalid-attributes.mlir: every attribute of every kiln
op verified against out-of-range, negative, overflowing and mistyped values,
and operands of mismatched types, each expecting a diagnostic (never a
crash). The lit file's second RUN line checks that it is what this script
prints, so change the table here and regenerate:

    python test/ir/gen_invalid_attributes.py > test/ir/invalid-attributes.mlir
"""
from __future__ import annotations

I64_MAX, I64_MIN = 9223372036854775807, -9223372036854775808
FAILED = "'kiln.{op}' op failed to infer returned types"
X2 = "%x: tensor<4x8xf32>"
X4 = "%x: tensor<1x2x8x8xf32>"


def case(name: str, what: str, args: str, op: str, errors: list[str]) -> str:
    lines = [f"// Tests that {what}.", f"func.func @{name}({args}) {{"]
    for i, message in enumerate(errors):
        lines.append(f"  // expected-error @+{len(errors) - i} {{{{{message}}}}}")
    lines += [f"  {op}", "  return", "}"]
    return "\n".join(lines)


def ident(value: int) -> str:
    return str(value).replace("-", "m")


def dim_cases():
    """Scalar `dim` attributes: negative, == rank, int64 extremes."""
    ops = {
        # op: (operand args, op text with {d}, errors, inferred)
        "argmax": (X2, "%0 = kiln.argmax %x {{dim = {d} : i64}} : tensor<4x8xf32> -> tensor<4xi64>", False),
        "argmin": (X2, "%0 = kiln.argmin %x {{dim = {d} : i64, keepdim = true}} : tensor<4x8xf32> -> tensor<4x1xi64>", False),
        "cumsum": (X2, "%0 = kiln.cumsum %x {{dim = {d} : i64}} : tensor<4x8xf32>", False),
        "softmax": (X2, "%0 = kiln.softmax %x {{dim = {d} : i64}} : tensor<4x8xf32>", False),
        "concat": (X2, "%0 = kiln.concat %x, %x {{dim = {d} : i64}} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<8x8xf32>", True),
        "gather": (X2 + ", %i: tensor<4x3xi64>", "%0 = kiln.gather %x, %i {{dim = {d} : i64}} : tensor<4x8xf32>, tensor<4x3xi64> -> tensor<4x3xf32>", True),
    }
    for op, (args, text, inferred) in ops.items():
        for d in (-1, 2, I64_MAX, I64_MIN):
            errors = [f"dim {d} is out of range for rank 2"]
            if inferred:
                errors.append(FAILED.format(op=op))
            yield case(f"{op}_dim_{ident(d)}", f"kiln.{op} rejects dim = {d} for rank 2", args,
                       text.format(d=d), errors)


def dims_cases():
    """Array `dims` attributes of the reductions and kiln.permute."""
    for op in ("sum", "mean", "max", "min", "prod"):
        for dims, message in (("-1", "reduction dim -1 is out of range for rank 2"),
                              ("2", "reduction dim 2 is out of range for rank 2"),
                              (str(I64_MIN), f"reduction dim {I64_MIN} is out of range for rank 2"),
                              ("1, 1", "reduction dim 1 is repeated")):
            yield case(f"{op}_dims_{ident(dims.replace(', ', '_'))}",
                       f"kiln.{op} rejects dims = [{dims}]", X2,
                       f"%0 = kiln.{op} %x {{dims = array<i64: {dims}>}} : tensor<4x8xf32> -> tensor<4xf32>",
                       [message, FAILED.format(op=op)])
    for dims, message in (("-1, 0", "permutation dim -1 is out of range for rank 2"),
                          ("0, 2", "permutation dim 2 is out of range for rank 2"),
                          (f"{I64_MAX}, 0", f"permutation dim {I64_MAX} is out of range for rank 2"),
                          ("1, 1", "permutation dim 1 is repeated"),
                          ("0", "dims has 1 entries but the operand has rank 2"),
                          ("0, 1, 2", "dims has 3 entries but the operand has rank 2")):
        yield case(f"permute_dims_{ident(dims.replace(', ', '_'))}",
                   f"kiln.permute rejects dims = [{dims}]", X2,
                   f"%0 = kiln.permute %x {{dims = array<i64: {dims}>}} : tensor<4x8xf32> -> tensor<8x4xf32>",
                   [message, FAILED.format(op="permute")])


def slice_cases():
    bad = [
        ("-5, 0", "4, 8", "1, 1", "dim 0: need 0 <= start <= end, got start -5 and end 4"),
        ("3, 0", "2, 8", "1, 1", "dim 0: need 0 <= start <= end, got start 3 and end 2"),
        ("0, 0", "5, 8", "1, 1", "dim 0: end 5 exceeds the dim size 4"),
        ("0, 0", f"4, {I64_MAX}", "1, 1", f"dim 1: end {I64_MAX} exceeds the dim size 8"),
        ("0, 0", "4, 8", "0, 1", "step 0 of dim 0 must be >= 1"),
        ("0, 0", "4, 8", "1, -1", "step -1 of dim 1 must be >= 1"),
        ("0, 0", "4, 8", f"1, {I64_MIN}", f"step {I64_MIN} of dim 1 must be >= 1"),
        ("0", "4, 8", "1, 1", "start, end and step must have one entry per dim (rank 2), got 1, 2 and 2"),
    ]
    for i, (start, end, step, message) in enumerate(bad):
        yield case(f"slice_{i}", f"kiln.slice rejects start [{start}], end [{end}], step [{step}]",
                   X2, f"%0 = kiln.slice %x {{start = array<i64: {start}>, end = array<i64: {end}>, "
                   f"step = array<i64: {step}>}} : tensor<4x8xf32> -> tensor<4x8xf32>",
                   [message, FAILED.format(op="slice")])
    # Bounds < 0 count from the end: along a dynamic dim a start from the
    # end needs an end from the end, and their span must not overflow.
    yield case("slice_dynamic_mixed_ends", "kiln.slice rejects a start from the end and an end "
               "from the front of a dynamic dim", "%x: tensor<?xf32>",
               "%0 = kiln.slice %x {start = array<i64: -1>, end = array<i64: 4>, "
               "step = array<i64: 1>} : tensor<?xf32> -> tensor<1xf32>",
               ["dim 0: a start from the end needs an end from the end", FAILED.format(op="slice")])
    yield case("slice_dynamic_huge_span", "kiln.slice rejects bounds from the end of a dynamic "
               "dim whose span overflows", "%x: tensor<?xf32>",
               f"%0 = kiln.slice %x {{start = array<i64: {I64_MIN}>, end = array<i64: -1>, "
               f"step = array<i64: 1>}} : tensor<?xf32> -> tensor<1xf32>",
               [f"dim 0: start {I64_MIN} and end -1 span more than 2^63 elements",
                FAILED.format(op="slice")])
    # A dynamic dim only bounds start <= end: a huge end must not overflow.
    yield case("slice_dynamic_huge_end", "kiln.slice computes a huge end of a dynamic dim "
               "without overflow (and the declared type is then wrong)", "%x: tensor<?xf32>",
               f"%0 = kiln.slice %x {{start = array<i64: 1>, end = array<i64: {I64_MAX}>, "
               f"step = array<i64: {I64_MAX}>}} : tensor<?xf32> -> tensor<2xf32>",
               ["'kiln.slice' op inferred type(s) 'tensor<1xf32>' are incompatible with return "
                "type(s) of operation 'tensor<2xf32>'", FAILED.format(op="slice")])


def layer_norm_cases():
    for n in (0, -1, 3, I64_MAX):
        yield case(f"layer_norm_num_dims_{ident(n)}", f"kiln.layer_norm rejects num_dims = {n}",
                   X2, f"%0 = kiln.layer_norm %x {{num_dims = {n} : i64}} : tensor<4x8xf32>",
                   [f"num_dims must be in [1, 2], got {n}"])
    for eps in ("-1.0", "0x7FF8000000000000"):
        yield case(f"layer_norm_eps_{ident(eps).replace('.', '_')}",
                   f"kiln.layer_norm rejects eps = {eps}", X2,
                   f"%0 = kiln.layer_norm %x {{num_dims = 1 : i64, eps = {eps} : f64}} : tensor<4x8xf32>",
                   ["eps must be non-negative"])


def window_cases():
    conv = ("%x: tensor<1x2x8x8xf32>, %w: tensor<4x2x3x3xf32>",
            "%0 = kiln.conv2d %x, %w {{{attrs}}} : tensor<1x2x8x8xf32>, tensor<4x2x3x3xf32> -> tensor<1x4x6x6xf32>")
    conv_bad = [
        ("stride = array<i64: 0, 1>", "stride entries must be >= 1, got 0"),
        ("stride = array<i64: 1>", "stride must have 2 entries, got 1"),
        ("dilation = array<i64: 1, -1>", "dilation entries must be >= 1, got -1"),
        ("padding = array<i64: 0, 0, 0, -1>", "padding entries must be >= 0, got -1"),
        ("padding = array<i64: 0, 0>", "padding must have 4 entries, got 2"),
        ("groups = 0 : i64", "groups must be >= 1, got 0"),
        ("groups = -1 : i64", "groups must be >= 1, got -1"),
        (f"groups = {I64_MAX} : i64", f"groups {I64_MAX} does not divide the 4 output channels"),
        (f"padding = array<i64: {I64_MAX}, {I64_MAX}, 0, 0>",
         "the output size of dim 2 of 'tensor<1x2x8x8xf32>' does not fit in 64 bits"),
        (f"dilation = array<i64: {I64_MAX}, 1>",
         "the output size of dim 2 of 'tensor<1x2x8x8xf32>' does not fit in 64 bits"),
    ]
    for i, (attrs, message) in enumerate(conv_bad):
        yield case(f"conv2d_{i}", f"kiln.conv2d rejects {attrs}", conv[0],
                   conv[1].format(attrs=attrs), [message, FAILED.format(op="conv2d")])
    yield case("conv2d_empty_kernel", "kiln.conv2d rejects an empty kernel",
               "%x: tensor<1x2x8x8xf32>, %w: tensor<4x2x0x3xf32>",
               "%0 = kiln.conv2d %x, %w : tensor<1x2x8x8xf32>, tensor<4x2x0x3xf32> -> tensor<1x4x9x6xf32>",
               ["the kernel must not be empty, got 'tensor<4x2x0x3xf32>'", FAILED.format(op="conv2d")])
    for op in ("max_pool2d", "avg_pool2d"):
        bad = [
            ("kernel = array<i64: 0, 2>, stride = array<i64: 1, 1>", "kernel entries must be >= 1, got 0"),
            ("kernel = array<i64: 2, 2>, stride = array<i64: 1, -1>", "stride entries must be >= 1, got -1"),
            ("kernel = array<i64: 2>, stride = array<i64: 1, 1>", "kernel must have 2 entries, got 1"),
            ("kernel = array<i64: 2, 2>, stride = array<i64: 1, 1>, padding = array<i64: 2, 0>",
             "padding 2 must be at most half the kernel size 2"),
            ("kernel = array<i64: 2, 2>, stride = array<i64: 1, 1>, padding = array<i64: -1, 0>",
             "padding entries must be >= 0, got -1"),
            (f"kernel = array<i64: {I64_MAX}, 2>, stride = array<i64: {I64_MAX}, 1>",
             "the output would be empty: input 'tensor<1x2x8x8xf32>' is smaller than the window in dim 2"),
        ]
        if op == "max_pool2d":
            bad.append(("kernel = array<i64: 2, 2>, stride = array<i64: 1, 1>, dilation = array<i64: 0, 1>",
                        "dilation entries must be >= 1, got 0"))
        else:
            bad.append(("kernel = array<i64: 2, 2>, stride = array<i64: 1, 1>, divisor_override = -1 : i64",
                        "divisor_override must be >= 0, got -1"))
        for i, (attrs, message) in enumerate(bad):
            yield case(f"{op}_{i}", f"kiln.{op} rejects {attrs}", X4,
                       f"%0 = kiln.{op} %x {{{attrs}}} : tensor<1x2x8x8xf32> -> tensor<1x2x7x7xf32>",
                       [message, FAILED.format(op=op)])


def mistyped_cases():
    """Attributes of the wrong kind or width: the ODS constraints reject them."""
    yield case("argmax_dim_f32", "a float dim is rejected", X2,
               "%0 = kiln.argmax %x {dim = 1.0 : f32} : tensor<4x8xf32> -> tensor<4xi64>",
               ["attribute 'dim' failed to satisfy constraint: 64-bit signless integer attribute"])
    yield case("softmax_dim_string", "a string dim is rejected", X2,
               "%0 = kiln.softmax %x {dim = \"1\"} : tensor<4x8xf32>",
               ["attribute 'dim' failed to satisfy constraint: 64-bit signless integer attribute"])
    yield case("sum_dims_i32", "an i32 array of dims is rejected", X2,
               "%0 = kiln.sum %x {dims = array<i32: 1>} : tensor<4x8xf32> -> tensor<4xf32>",
               ["attribute 'dims' failed to satisfy constraint: i64 dense array attribute"])
    yield case("permute_dims_missing", "a missing dims attribute is rejected", X2,
               "%0 = kiln.permute %x : tensor<4x8xf32> -> tensor<8x4xf32>",
               ["'kiln.permute' op requires attribute 'dims'"])
    yield case("gelu_approximate_bogus", "an unknown gelu approximation is rejected", X2,
               "%0 = kiln.gelu %x {approximate = \"fast\"} : tensor<4x8xf32>",
               ["approximate must be \"none\" or \"tanh\", got \"fast\""])
    yield case("gelu_approximate_int", "an integer gelu approximation is rejected", X2,
               "%0 = kiln.gelu %x {approximate = 1 : i64} : tensor<4x8xf32>",
               ["attribute 'approximate' failed to satisfy constraint: string attribute"])
    yield case("layer_norm_eps_i64", "an integer eps is rejected", X2,
               "%0 = kiln.layer_norm %x {num_dims = 1 : i64, eps = 1 : i64} : tensor<4x8xf32>",
               ["attribute 'eps' failed to satisfy constraint: 64-bit float attribute"])
    yield case("argmin_keepdim_int", "an integer keepdim is rejected", X2,
               "%0 = kiln.argmin %x {dim = 0 : i64, keepdim = 1 : i64} : tensor<4x8xf32> -> tensor<8xi64>",
               ["attribute 'keepdim' failed to satisfy constraint: bool attribute"])


def operand_cases():
    """Operands of mismatched element types, ranks and shapes."""
    rows = [
        ("matmul_k", "%a: tensor<4x3xf32>, %b: tensor<5x2xf32>",
         "%0 = kiln.matmul %a, %b : tensor<4x3xf32>, tensor<5x2xf32>",
         ["contraction dims differ: lhs has K = 3, rhs has K = 5"]),
        ("matmul_rank1", "%a: tensor<4xf32>, %b: tensor<4x2xf32>",
         "%0 = kiln.matmul %a, %b : tensor<4xf32>, tensor<4x2xf32>",
         ["operands must have rank >= 2"]),
        ("matmul_types", "%a: tensor<4x3xf32>, %b: tensor<3x2xf16>",
         "%0 = kiln.matmul %a, %b : tensor<4x3xf32>, tensor<3x2xf16>",
         ["operands have different element types ('f32' vs 'f16')"]),
        ("select_types", "%c: tensor<4xi1>, %a: tensor<4xf32>, %b: tensor<4xi64>",
         "%0 = kiln.select %c, %a, %b : tensor<4xi1>, tensor<4xf32>, tensor<4xi64>",
         ["on_true and on_false have different element types ('f32' vs 'i64')"]),
        ("concat_types", "%a: tensor<4xf32>, %b: tensor<4xf64>",
         "%0 = kiln.concat %a, %b {dim = 0 : i64} : tensor<4xf32>, tensor<4xf64> -> tensor<8xf32>",
         ["operands have different element types ('f32' vs 'f64')", FAILED.format(op="concat")]),
        ("concat_ranks", "%a: tensor<4xf32>, %b: tensor<4x1xf32>",
         "%0 = kiln.concat %a, %b {dim = 0 : i64} : tensor<4xf32>, tensor<4x1xf32> -> tensor<8xf32>",
         ["operands have different ranks", FAILED.format(op="concat")]),
        ("concat_overflow", f"%a: tensor<{I64_MAX - 1}xi8>, %b: tensor<3xi8>",
         f"%0 = kiln.concat %a, %b {{dim = 0 : i64}} : tensor<{I64_MAX - 1}xi8>, tensor<3xi8> -> tensor<?xi8>",
         ["the concatenated size of dim 0 does not fit in 64 bits", FAILED.format(op="concat")]),
        ("reshape_overflow", "%a: tensor<4294967296x4294967296xi8>",
         "%0 = kiln.reshape %a : tensor<4294967296x4294967296xi8> -> tensor<16xi8>",
         ["element count of 'tensor<4294967296x4294967296xi8>' does not fit in 64 bits"]),
        ("embedding_float_indices", "%w: tensor<10x4xf32>, %i: tensor<3xf32>",
         "%0 = kiln.embedding %w, %i : tensor<10x4xf32>, tensor<3xf32> -> tensor<3x4xf32>",
         ["indices must be i64 or i32", FAILED.format(op="embedding")]),
        ("gather_rank", "%x: tensor<4x8xf32>, %i: tensor<3xi64>",
         "%0 = kiln.gather %x, %i {dim = 0 : i64} : tensor<4x8xf32>, tensor<3xi64> -> tensor<3xf32>",
         ["must have the rank of the operand", FAILED.format(op="gather")]),
        ("conv2d_types", "%x: tensor<1x2x8x8xf32>, %w: tensor<4x2x3x3xf16>",
         "%0 = kiln.conv2d %x, %w : tensor<1x2x8x8xf32>, tensor<4x2x3x3xf16> -> tensor<1x4x6x6xf32>",
         ["input and weight have different element types ('f32' vs 'f16')", FAILED.format(op="conv2d")]),
        ("layer_norm_weight_type", "%x: tensor<4x8xf32>, %w: tensor<8xf16>",
         "%0 = kiln.layer_norm %x weight %w {num_dims = 1 : i64} : tensor<4x8xf32>, tensor<8xf16>",
         ["weight element type 'f16' differs from the input's 'f32'"]),
        ("cast_shape", "%x: tensor<4xf32>",
         "%0 = kiln.cast %x : tensor<4xf32> -> tensor<5xi64>",
         ["'kiln.cast' op requires the same shape for all operands and results"]),
        ("broadcast_to_shape", "%x: tensor<3xf32>",
         "%0 = kiln.broadcast_to %x : tensor<3xf32> -> tensor<4x4xf32>",
         ["operand type 'tensor<3xf32>' cannot be broadcast to 'tensor<4x4xf32>'"]),
        ("argmax_bool", "%x: tensor<4xi1>",
         "%0 = kiln.argmax %x {dim = 0 : i64} : tensor<4xi1> -> tensor<i64>",
         ["operand must not be i1 (torch rejects bool)"]),
    ]
    for name, args, op, errors in rows:
        yield case(name, f"kiln ops reject mismatched operands ({name})", args, op, errors)


HEADER = """\
// RUN: kiln-opt %s -split-input-file -verify-diagnostics
// RUN: %python %S/gen_invalid_attributes.py | diff - %s

// GENERATED by test/ir/gen_invalid_attributes.py: edit that table, not this
// file. Every attribute of the kiln ops against negative, out-of-range,
// overflowing and mistyped values, and mismatched operands: each is a
// diagnostic, never a crash (tools/fuzz_ir.py searches for the rest).
"""


def main() -> None:
    cases = [c for family in (dim_cases, dims_cases, slice_cases, layer_norm_cases,
                              window_cases, mistyped_cases, operand_cases) for c in family()]
    print(HEADER + "\n" + "\n\n// -----\n\n".join(cases))


if __name__ == "__main__":
    main()
