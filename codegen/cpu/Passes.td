//===- Passes.td - CPU codegen passes -------------------------*- tablegen -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// CPU-only passes (`kiln-cpu-*`), in the order kiln-cpu-lowering runs them:
// after bufferization (row loops, memory planning), calls and loops (BLAS,
// strided copies, parallel loops), and the LLVM lowering (alloca scopes,
// alias scopes, polynomial math). Each pass's algorithm is described here
// once; READMEs link to the generated reference
// (docs/reference/KilnCpuPasses.md).
//===----------------------------------------------------------------------===//

#ifndef KILN_CODEGEN_CPU_PASSES_TD
#define KILN_CODEGEN_CPU_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// CPU
//===----------------------------------------------------------------------===//

def CpuSplitLongSumsPass : Pass<"kiln-cpu-split-long-sums", "func::FuncOp"> {
  let summary = "Splits f32 sums and means over many elements into short sums";
  let description = [{
    Runs on kiln IR after `kiln-decompose`. An f32 `kiln.sum` or `kiln.mean`
    with static shapes over more than 32768 elements (size-1 dims do not
    count) is rewritten into sums over at most about 32768 elements each,
    so the f32 accumulators of the reduction loops stay accurate (one
    accumulator over 1e7 values lost 3-4 digits; eager sums in a cascade):

    - several reduced dims: the inner ones first (keepdim), then all of
      them over the partial sums (only the outermost is still longer than 1);
    - one reduced dim of `n` elements: `n / 1024 * 1024` of them reshaped to
      `[n / 1024, 1024]` and summed over both (which the first rule splits),
      the remainder slice summed and added;
    - a mean is that sum divided by the element count; a result without
      keepdim is reshaped.

    New sums are rewritten again until none is long. Integer sums (exact),
    16-bit floats (accumulated in f32 by the lowering, rounded once) and
    dynamic shapes are left alone.
  }];
}

def CpuFuseRowsPass : Pass<"kiln-cpu-fuse-rows", "func::FuncOp"> {
  let summary = "Runs consecutive row-wise linalg.generic ops row by row in one loop";
  let description = [{
    Runs after bufferization. A run of `linalg.generic` ops on memrefs whose
    first loop is parallel with the same static extent N (softmax's max,
    sum and division; layer_norm's means and final expression), separated
    only by side-effect-free ops and allocations, is wrapped in one
    `scf.for` over rows: each op runs on `memref.subview`s of row i, so the
    row stays in cache across all of them instead of every op streaming
    the whole tensor through memory.

    Legal only when each buffer written in the run is accessed by the run
    exclusively through row i (indexing map result 0 is `d0`, views keep
    dim 0) — a reduction over rows or any other access to a written buffer
    ends the run. Applied only to runs that contain a reduction (other
    elementwise chains are already fused on tensors). Ops using
    `linalg.index` are left alone. First, `linalg.fill`s of allocations
    move down to the next op touching their buffer (as in
    kiln-cpu-plan-memory): bufferization hoists GEMM-output zero fills,
    which would otherwise join the first run of their row count and make
    those outputs live from there on.
  }];
  let dependentDialects = ["::mlir::scf::SCFDialect", "::mlir::memref::MemRefDialect"];
}

def CpuPlanMemoryPass : Pass<"kiln-cpu-plan-memory", "func::FuncOp"> {
  let summary = "Packs a function's intermediate buffers into one arena by liveness";
  let description = [{
    Runs after bufferization, before buffer deallocation. Each top-level
    `memref.alloc` of the function's (single) block with a static shape,
    identity layout, default memory space and an int/float/index element
    type whose uses can all be followed becomes a `memref.view` of one
    `memref<Nxi8>` arena allocated at the function's entry (the
    deallocation pipeline frees it once, at the end). Followed: views and
    casts (`ViewLikeOpInterface`: subview, collapse/expand_shape, cast,
    reinterpret_cast, view; also `memref.extract_strided_metadata`'s base
    buffer), ops that only read or write the buffer, also nested in
    loops/ifs, and calls of functions declared `kiln.buffer_args_only`
    (they access their memref arguments only while they run: the oneDNN
    shim of `kiln-cpu-convs-to-dnnl`). Not followed (the buffer keeps its
    own alloc): any other call, return, yield, region operand (scf.for iter_args),
    dealloc, or any op with a memref/tensor result that is not a view.

    Live range: first to last top-level op that reads or writes the
    buffer or an alias (a nested use counts as its top-level ancestor, so
    a buffer used in an `scf.for` is live for the whole loop; making a
    view is not an access). Top-level `linalg.fill`s of allocations first
    move down to just before their buffer's next access (bufferization
    leaves GEMM zero fills and pad borders at the top), and so do copies
    of a constant `memref.global` into them (pad borders of splat
    constants). In place: an
    all-parallel `linalg.generic` that is the last access of an input
    buffer and the first of a same-size output buffer, both seen with the
    same type and permutation map and touched by no other operand, writes
    the output over the input (same offset). Packing: greedy by size, best
    fit — largest slot (buffer or in-place chain) first, each placed in
    the smallest gap (aligned to `alignment`, or the alloc's own alignment
    if larger) left by the placed slots whose live ranges overlap, else
    above them. Lazy outputs: when output arguments are marked
    `kiln.lazy_output` (allocated by the frontend at their first write,
    kiln-cpu-lazy-outputs), the buffers still live at an output's first
    touch stay out of the arena (their own allocs, freed after their last
    use by kiln-cpu-free-early) if the estimated peak (the arena's live
    peak held from its first to its last use, the others one by one, each
    output from its first touch on) drops by at least 1/64 and 64 KiB: the
    arena then dies before the output is allocated (a segmentation head's
    small class map no longer keeps the backbone's arena alive under its
    upsampled result). The arena carries `kiln.planned_buffers`,
    `kiln.planned_bytes` and `kiln.live_peak_bytes` (the packing's lower
    bound) for IR dumps.

    Example (`a` dies before `b` is first used, so both sit at offset 0):
    ```mlir
    %a = memref.alloc() : memref<16xf32>   // %arena = memref.alloc() : memref<64xi8>
    linalg.fill ins(%x) outs(%a)           // %a = memref.view %arena[%c0][]
    memref.copy %a, %out0                  // ...
    %b = memref.alloc() : memref<16xf32>   // %b = memref.view %arena[%c0][]
    linalg.fill ins(%x) outs(%b)
    memref.copy %b, %out1
    ```
  }];
  let options = [
    Option<"alignment", "alignment", "int64_t", "64",
           "Byte alignment of every buffer in the arena (and of the arena)">,
  ];
  let statistics = [
    Statistic<"numBuffers", "planned-buffers", "Allocations moved into arenas">,
    Statistic<"numBytes", "planned-bytes", "Bytes of those allocations">,
    Statistic<"numArenaBytes", "arena-bytes", "Bytes of the arenas">,
    Statistic<"numLiveBytes", "live-peak-bytes",
              "Most planned bytes live at one op (the arenas' lower bound)">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::memref::MemRefDialect"];
}

def CpuFoldTransposedOperandsPass : Pass<"kiln-cpu-fold-transposed-operands", "func::FuncOp"> {
  let summary = "Reads GEMM operands through their transposes instead of transposed copies";
  let description = [{
    Runs on tensors, after elementwise fusion and before bufferization. An
    f32/f64 `linalg.matmul`, `linalg.matmul_transpose_b`,
    `linalg.batch_matmul` or `linalg.batch_matmul_transpose_b` whose operand
    is a copy of another tensor with its last two dims swapped, used only
    there (a `linalg.transpose`, or the permuting generic
    `kiln-fuse-linalg-elementwise` makes of one), reads that tensor instead:
    A^T B becomes `linalg.matmul_transpose_a`, A B^T `linalg.matmul_transpose_b`,
    a transposed operand of a `_transpose_b` op a plain matmul (batched the
    same). The copy is then dead. `kiln-cpu-linalg-to-blas` passes the
    stored matrix to the BLAS with its transpose flag (kiln-autodiff's
    weight gradients `g^T x`). Other element types keep the copy. See
    codegen/cpu/FoldTransposedOperands.cpp.

    ```mlir
    %t = linalg.transpose ins(%g : tensor<64x32xf32>) outs(%e : tensor<32x64xf32>) permutation = [1, 0]
    %w = linalg.matmul ins(%t, %x : tensor<32x64xf32>, tensor<64x16xf32>) outs(%c : tensor<32x16xf32>) -> tensor<32x16xf32>
    // →
    %w = linalg.matmul_transpose_a ins(%g, %x : tensor<64x32xf32>, tensor<64x16xf32>) outs(%c : tensor<32x16xf32>) -> tensor<32x16xf32>
    ```
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def CpuLinalgToBlasPass : Pass<"kiln-cpu-linalg-to-blas", "ModuleOp"> {
  let summary = "Replaces f32/f64 matmuls on memrefs with calls into a tuned BLAS";
  let description = [{
    Runs after bufferization. Each `linalg.matmul`, `linalg.matmul_transpose_b`,
    `linalg.batch_matmul` and `linalg.batch_matmul_transpose_b` on memrefs
    whose innermost dim is contiguous (and `linalg.matmul_transpose_a`,
    `linalg.batch_matmul_transpose_a` whose stored left operand is) becomes a `func.call` to a `kiln_blas_*`
    function (declared with `llvm.emit_c_interface`) that the JIT resolves to
    kiln's BLAS shims (runtime/cpu/BlasShims.cpp, OpenBLAS `cblas_?gemm`).
    A `linalg.fill` of zero feeding the output is folded into beta = 0 (ops
    in between that provably touch other bytes, such as fills of other
    buffers and GEMM calls made before, do not stop it). A transposed left
    operand (`kiln-cpu-fold-transposed-operands`) is passed as a
    `memref.transpose` view of the stored matrix; the shim passes such a
    unit-row-stride operand to the BLAS as transposed. Other element
    types and layouts are left for the loop lowering.
  }];
  let dependentDialects = ["::mlir::func::FuncDialect", "::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect"];
}

def CpuConvsToDnnlPass : Pass<"kiln-cpu-convs-to-dnnl", "ModuleOp"> {
  let summary = "Runs f32 convolutions as oneDNN calls on channels-last buffers";
  let description = [{
    Runs on kiln IR, before `kiln-decompose` (the CPU compile driver adds it
    when kiln was built with oneDNN, runtime/cpu/DnnlConv.cpp, and the
    graph has a convolution: all of them with `kiln.config.dnnl_convs` on,
    else with `min-columns-bytes`, below). Each `kiln.conv2d` with
    static shapes and f32 operands (1x1, depthwise and grouped included)
    becomes the sequence below, in program order:

    - the per-channel chain after the convolution (DnnlConvEpilogue.h):
      `kiln.mul`/`kiln.add`/`kiln.sub` by [1, F, 1, 1] or [F, 1, 1] tensors
      that do not depend on the convolution (a conv bias, an eval-mode
      BatchNorm as captured), each the single user of the previous value,
      then a `kiln.relu` or `kiln.silu`, is absorbed: the call computes
      act(scale * conv + shift) with `scale` and `shift` [F] tensors built
      by kiln ops (F elements per call; ones and zeros without a chain). A
      training-mode BatchNorm normalizes with statistics of the
      convolution's output and is never absorbed;
    - the input as NHWC: when it is the `kiln.permute` back to NCHW of an
      earlier call's result, that NHWC result itself (the two permutes
      cancel); else a copy (a permuting `linalg.generic`: a `kiln.permute`
      would become a `linalg.transpose`, which does not fuse with its
      producers); read through `bufferization.to_memref ... read_only`;
    - a 64-byte aligned `memref.alloc` of the NHWC result;
    - a `func.call @kiln_dnnl_conv2d_f32` (declared with
      `llvm.emit_c_interface` and `kiln.buffer_args_only`, so
      `kiln-cpu-plan-memory` puts its buffers in the arena) on NCHW-shaped
      strided views of both buffers and the weight, the scale and shift,
      and strides, dilations, paddings, groups and the activation (0 none,
      1 ReLU, 2 SiLU) as i64 constants; it is placed where the last
      absorbed op was;
    - `bufferization.to_tensor ... restrict writable` of the result and a
      `kiln.permute` back to NCHW, which replaces the last absorbed value;
    - that permute sinks below the elementwise ops using it (`kiln.add`,
      `sub`, `mul`, `div`, `maximum`, `minimum`, `relu`, `silu`, `sigmoid`,
      `neg`) whose other operands are such permutes of the same shape or
      0-d scalars: `op(permute(a), permute(b))` becomes
      `permute(op(a, b))`, repeatedly, so residual streams and activations
      stay NHWC and the next convolution takes them without a copy.

    The shim folds `scale` into the weights when it packs them into
    oneDNN's blocked layout, once per weight tensor and version
    (runtime/cpu/WeightStamps.h). The permutes left are plain tensor ops,
    which elementwise fusion folds into the remaining pointwise consumers.
    Other convolutions (f16/bf16/f64, dynamic shapes) are left alone.

    A statically quantized convolution (kiln.quant's capture: the input
    `kiln.dequantize(kiln.quantize_static(x))` with the same scale and zero
    point, the weight `kiln.dequantize(%w_i32, %s)` with `%s` [F, 1, 1, 1])
    becomes a call of `@kiln_dnnl_qconv2d_u8s8` instead (DnnlQConv.cpp:
    oneDNN's u8 x s8 convolution): `x` itself as the input, the i32 weight
    values, `scale` times the weight scales, and the input's scale and zero
    point as trailing f32 / i64 constants; the q/dq ops are erased. When
    every user of such a convolution's result (after its epilogue) is the
    `kiln.quantize_static` of int8 convolutions' inputs, all with one scale
    and zero point, the call is `@kiln_dnnl_qconv2d_u8s8_yu8` (that scale
    and zero point appended) writing a u8 NHWC buffer that replaces those
    quantize ops; a consumer whose input is `kiln.dequantize` of such a u8
    value (through the NCHW permute) calls `@kiln_dnnl_qconv2d_u8s8_xu8`
    on the buffer as it is: activations stay u8 between consecutive int8
    convolutions. A result also used by float ops (a residual add) stays
    f32. With `quantized-only` (the driver's setting when `dnnl_convs` is
    off) only quantized convolutions are rewritten.

    With `min-columns-bytes=B` > 0 (the driver's setting when `dnnl_convs`
    is off and weights are not frozen), an f32 convolution is rewritten only
    when `kiln-decompose` would give it im2col columns (a kernel larger
    than 1x1, not depthwise, windows that overlap or leave gaps) of at
    least B bytes and at least 8 times its weight's bytes: without
    freezing, the call re-lays the weight on every call, which pays where
    the weight is small next to the columns it saves (resnet's stem and
    first-stage 3x3 convolutions: 7 MiB of columns for a 37-147 KiB
    weight). With `min-output-positions=P` > 0 (the driver sets both), an
    f32 convolution with at least P output positions (batch x height x
    width) is rewritten too: each weight element it re-lays serves P
    multiply-adds, so the re-lay (one oneDNN reorder pass, BatchNorm's
    scale applied on the way) costs a few percent of the call, and oneDNN's
    channels-last kernels win (efficientnet_b0 at 224 px: 20 -> 14 ms with
    P = 196, i.e. every stage but the 7x7 one). With both options set a
    convolution qualifying under either is rewritten. Quantized
    convolutions are rewritten as without the options.

    First, with `conv-grads` (default; the driver's setting unless
    `kiln.config.dnnl_conv_grads` is off), the convolution gradients
    kiln-autodiff marked (ir/ConvGradMarks.h) become calls of
    `@kiln_dnnl_conv2d_bwd_data_f32` / `@kiln_dnnl_conv2d_bwd_weights_f32`
    (runtime/cpu/DnnlConvBwd.cpp: oneDNN's backward primitives) on the
    chain's marked sources (result gradient, weight, input), writing a new
    buffer; the decomposed chains left dead are erased later
    (codegen/cpu/ConvGradsToDnnl.cpp). A chain whose sources do not
    resolve (other shapes, not f32) keeps its decomposition.

    Before:
    ```mlir
    %y = kiln.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>} : tensor<1x8x6x6xf32>, tensor<4x8x3x3xf32> -> tensor<1x4x6x6xf32>
    ```
    After (abridged):
    ```mlir
    %xt = linalg.generic {indexing_maps = [(n, h, w, c) -> (n, c, h, w), identity]} ins(%x) outs(...)
    %xm = bufferization.to_memref %xt read_only : ...
    %ym = memref.alloc() {alignment = 64 : i64} : memref<1x6x6x4xf32>
    call @kiln_dnnl_conv2d_f32(%xv, %wv, %yv, %ones, %zeros, %c1, %c1, %c1, %c1, %c1, %c1, %c1, %c1, %c1, %c0) : ...
    %yt = bufferization.to_tensor %ym restrict writable : memref<1x6x6x4xf32>
    %y = kiln.permute %yt {dims = array<i64: 0, 3, 1, 2>} : tensor<1x6x6x4xf32> -> tensor<1x4x6x6xf32>
    ```
  }];
  // linalg and tensor are added by the pass (getDependentDialects).
  let dependentDialects = ["::mlir::func::FuncDialect", "::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::bufferization::BufferizationDialect"];
  let options = [
    Option<"quantizedOnly", "quantized-only", "bool", /*default=*/"false",
           "Rewrite only statically quantized convolutions (int8)">,
    Option<"minColumnsBytes", "min-columns-bytes", "int64_t", /*default=*/"0",
           "When > 0, rewrite an f32 convolution only when its im2col columns "
           "would take at least this many bytes and at least 8x its weight's">,
    Option<"minOutputPositions", "min-output-positions", "int64_t", /*default=*/"0",
           "When > 0, also rewrite an f32 convolution with at least this many "
           "output positions (batch x height x width)">,
    Option<"convGrads", "conv-grads", "bool", /*default=*/"true",
           "Rewrite the convolution gradients kiln-autodiff marked into oneDNN "
           "backward calls (whatever the other options)">
  ];
}

def CpuOrderSliceInsertsPass : Pass<"kiln-cpu-order-slice-inserts", "func::FuncOp"> {
  let summary = "Builds a concat's destination before its pieces, each inserted where it is made";
  let description = [{
    Runs on linalg on tensors, before `eliminate-empty-tensors`. A static
    `tensor.empty` whose result is the destination of a chain of
    `tensor.insert_slice`s (each intermediate result used only by the next
    insert, all in one block) with static, pairwise disjoint boxes is moved
    before the first piece's producer, and the chain is rebuilt in producer
    order with each insert right after its piece's producer. The pieces are
    disjoint, so the order does not change the result; the destination's
    chain value now exists before each producer, which lets
    eliminate-empty-tensors have the producer write its piece in place
    instead of into a buffer of its own copied at the concat (a concat
    lowers at its own position, after all its pieces). Chains with
    dynamic or overlapping boxes are left as they are.
    See codegen/cpu/OrderSliceInserts.cpp.

    ```mlir
    %a = linalg.generic ... outs(%ea : tensor<2x4xf32>)
    %b = linalg.generic ... outs(%eb : tensor<2x4xf32>)
    %d = tensor.empty() : tensor<4x4xf32>
    %0 = tensor.insert_slice %b into %d[2, 0] [2, 4] [1, 1]
    %1 = tensor.insert_slice %a into %0[0, 0] [2, 4] [1, 1]
    // →
    %d = tensor.empty() : tensor<4x4xf32>
    %a = linalg.generic ... outs(%ea : tensor<2x4xf32>)
    %0 = tensor.insert_slice %a into %d[0, 0] [2, 4] [1, 1]
    %b = linalg.generic ... outs(%eb : tensor<2x4xf32>)
    %1 = tensor.insert_slice %b into %0[2, 0] [2, 4] [1, 1]
    ```
  }];
  let dependentDialects = ["::mlir::tensor::TensorDialect"];
}

def CpuWriteOverDeadViewsPass : Pass<"kiln-cpu-write-over-dead-views", "func::FuncOp"> {
  let summary = "Computes an elementwise result over a dead input that is a view";
  let description = [{
    Runs on linalg on tensors, after `eliminate-empty-tensors`, before
    one-shot bufferization. An all-parallel `linalg.generic` with one init,
    a `tensor.empty` it does not read, with an identity indexing map, and an
    input of the same type, with an identity map, that is an
    `extract_slice`, `collapse_shape` or `expand_shape` (through any chain
    of them) of a computed tensor, each value of the chain used once and
    defined in the generic's block (a loop body never writes over a value
    its next iteration reads), takes
    that input as its init: one-shot bufferization then writes the result
    over the input's elements (elementwise access: each element is read
    before it is written, by the same iteration). kiln-cpu-plan-memory
    already reuses a dead input buffer of the result's own type; a view of
    a bigger buffer is not one, so such a result needed a buffer of its own
    (resnet's stem: the ReLU gradient reads the interior of the max-pool
    gradient's padded interleave; 25 MiB more at 224 px, batch 8).
    Function arguments, constants and `tensor.empty` values are never
    written over; an input with a second use is left alone.
    See codegen/cpu/WriteOverDeadViews.cpp.

    ```mlir
    %v = tensor.extract_slice %padded[0, 1] [4, 4] [1, 1] : tensor<6x6xf32> to tensor<4x4xf32>
    %e = tensor.empty() : tensor<4x4xf32>
    %r = linalg.generic ... ins(%mask, %v : ...) outs(%e : tensor<4x4xf32>)
    // →
    %r = linalg.generic ... ins(%mask, %v : ...) outs(%v : tensor<4x4xf32>)
    ```
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def CpuElideOutputCopiesPass : Pass<"kiln-cpu-elide-output-copies", "func::FuncOp"> {
  let summary = "Computes a buffer copied whole into an output argument in that argument";
  let description = [{
    Runs after bufferization, before memory planning. A `memref.alloc` in
    the entry block whose buffer is last touched by a `memref.copy` into an
    output argument of the function is replaced by that argument, and the
    copy erased, when the argument has the alloc's type (identity layout),
    no other use (nothing reads or writes it earlier) and no
    `kiln.in_place_input` (it may share an input's memory), and every
    access to the buffer, through any view, comes before the copy. A value
    one-shot bufferization cannot write in place, such as a run-time call's
    result (oneDNN's convolution weight gradient), is then computed where
    the caller reads it, instead of in an intermediate that stays live
    until the copy at the function's end (a backward's weight gradients:
    resnet18's backward at 8x3x64x64 held 40 MiB of them).
    See codegen/cpu/ElideOutputCopies.cpp.

    ```mlir
    %a = memref.alloc() : memref<8x4xf32>
    call @producer(%a) : (memref<8x4xf32>) -> ()
    ...
    memref.copy %a, %out : memref<8x4xf32> to memref<8x4xf32>
    // →
    call @producer(%out) : (memref<8x4xf32>) -> ()
    ```
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
}

def CpuFreeEarlyPass : Pass<"kiln-cpu-free-early", "func::FuncOp"> {
  let summary = "Frees each buffer after its last use and allocates it at its first";
  let description = [{
    Runs after the deallocation pipeline, which frees every buffer it owns
    at the end of its block: without the arena (buffers with symbolic
    sizes, buffers kiln-cpu-plan-memory cannot follow) all of a function's
    intermediates were live at once (an 8-layer MLP with a symbolic batch
    peaked at 5x eager's memory). A top-level `memref.dealloc` of a
    top-level `memref.alloc` of the entry block moves up to just after the
    last top-level op that reads or writes the buffer or a view of it
    (nested uses count as their top-level ancestor), and the alloc moves
    down to just before its first user. Uses are followed as in
    kiln-cpu-plan-memory (views, plain accesses, calls of functions
    declared `kiln.buffer_args_only`); a buffer with any other use keeps
    its alloc and dealloc where they are. See codegen/cpu/FreeEarly.cpp.

    ```mlir
    %a = memref.alloc(%n) : memref<?xf32>
    %b = memref.alloc(%n) : memref<?xf32>
    linalg.fill ins(%x) outs(%a)
    linalg.copy ins(%a) outs(%b)
    linalg.copy ins(%b) outs(%out)
    memref.dealloc %a
    memref.dealloc %b
    // →
    %a = memref.alloc(%n) ...
    linalg.fill ins(%x) outs(%a)
    %b = memref.alloc(%n) ...
    linalg.copy ins(%a) outs(%b)
    memref.dealloc %a
    linalg.copy ins(%b) outs(%out)
    memref.dealloc %b
    ```
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
}

def CpuLazyOutputsPass : Pass<"kiln-cpu-lazy-outputs", "func::FuncOp"> {
  let summary = "Allocates outputs marked kiln.lazy_output right before their first write";
  let description = [{
    The frontend leaves a big result unallocated (`kiln.lazy_output = i` on
    its output argument, moved there from the result by
    kiln-destination-outputs; data pointer null, sizes set) so that the
    caller's tensor is allocated where eager would allocate it, after the
    intermediates that died before it (a segmentation model's upsampled
    map, a backward's weight gradients). This pass places a
    `memref.alloc {kiln.output_index = i}` of the argument's type (dynamic
    sizes read from the argument) just before the first top-level op of
    the entry block that touches the argument or a view of it (reading
    its sizes is no touch; a nested use counts as its top-level ancestor),
    before the terminator when nothing touches it, or at the top of a
    function with several blocks, and makes every later use read the
    alloc; views of the argument made above it move below it.
    kiln-cpu-lower-output-allocs lowers the alloc. Runs after the loops are
    final (a canonicalization would erase an alloc that is only written).
    See codegen/cpu/LazyOutputs.cpp.

    ```mlir
    func.func @f(%x: memref<64xf32>, %out: memref<64xf32> {kiln.lazy_output = 0 : i64}) {
      ... // intermediates
      linalg.copy ins(%t) outs(%out)
    // →
      ...
      %a = memref.alloc() {alignment = 64 : i64, kiln.output_index = 0 : i64} : memref<64xf32>
      linalg.copy ins(%t) outs(%a)
    ```
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
}

def CpuLowerOutputAllocsPass : Pass<"kiln-cpu-lower-output-allocs", "ModuleOp"> {
  let summary = "Lowers kiln-cpu-lazy-outputs' allocs to calls of the output allocator";
  let description = [{
    Each `memref.alloc` carrying `kiln.output_index = i` becomes
    `llvm.call @kilnOutputData(i, bytes)` (runtime/cpu/CallHooks.h:
    the frontend allocates the caller's tensor through torch and returns
    its data pointer) and a memref descriptor around that pointer (the
    alloc's sizes, row-major strides). Other allocs are left for
    finalize-memref-to-llvm. Runs after kiln-cpu-alias-scopes, which treats
    the alloc as a root of its own. See codegen/cpu/LowerOutputAllocs.cpp.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def CpuReleaseDeadInputsPass : Pass<"kiln-cpu-release-dead-inputs", "ModuleOp"> {
  let summary = "Calls kilnReleaseInput(i) after the last access of each releasable input";
  let description = [{
    On functions marked `kiln.release_inputs = array<i64: ...>` (kiln-autodiff
    marks a backward's saved activations: the compiled forward's extra
    results, which only the backward reads): for each such argument `i`, a
    call `func.call @kilnReleaseInput(i)` right after the last top-level op
    of the entry block that reads or writes the argument or a view of it
    (uses followed as in kiln-cpu-plan-memory; a nested use counts as its
    top-level ancestor), at the top when nothing uses it. At run time the
    frontend drops the input there when the caller handed it over
    (runtime/cpu/CallHooks.h: the tensor's memory goes back to torch while
    the backward still runs, as eager frees a node's saved tensors after
    the node); otherwise the call does nothing. An argument with a use the
    live range cannot follow (a call that may keep the pointer) gets no
    call. Runs after the deallocation pipeline, before the BLAS calls.
    See codegen/cpu/ReleaseDeadInputs.cpp.

    ```mlir
    func.func @backward(%g: memref<8xf32>, %saved: memref<8xf32>, %out: memref<8xf32>)
        attributes {kiln.release_inputs = array<i64: 1>} {
      linalg.mul ins(%g, %saved : ...) outs(%out : ...)
      // → %c1 = arith.constant 1 : i64
      //   call @kilnReleaseInput(%c1) : (i64) -> ()
      ...
    ```
  }];
  let dependentDialects = ["::mlir::func::FuncDialect", "::mlir::arith::ArithDialect"];
}

def CpuFoldViewReshapesPass : Pass<"kiln-cpu-fold-view-reshapes", "func::FuncOp"> {
  let summary = "Turns reshapes of arena views into views of the arena";
  let description = [{
    Runs after memory planning. A static `memref.expand_shape` or
    `memref.collapse_shape` of a `memref.view` (a planned buffer in the
    arena) becomes a `memref.view` of the same buffer at the same byte shift
    with the reshape's type, so CSE merges it with the other views of that
    slot. An elementwise op that writes over its dead input (the planner
    gives both one slot) then reads and writes through one memref: one
    pointer in an OpenMP region's captured values, where two would make
    LLVM's vectorizer add a run-time overlap check that sends the in-place
    loop down its scalar path (efficientnet_b0 at 2 threads: 32 ms, 21 ms
    with parallel loops off). See codegen/cpu/FoldViewReshapes.cpp.

    ```mlir
    %v = memref.view %arena[%c64][] : memref<1024xi8> to memref<4x8xf32>
    %e = memref.expand_shape %v [[0], [1, 2]] output_shape [4, 2, 4]
        : memref<4x8xf32> into memref<4x2x4xf32>
    // →
    %e = memref.view %arena[%c64][] : memref<1024xi8> to memref<4x2x4xf32>
    ```
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
}

def CpuInPlaceOutputsPass : Pass<"kiln-cpu-in-place-outputs", "func::FuncOp"> {
  let summary = "Lets a result marked kiln.in_place_input share its input's memory";
  let description = [{
    Runs after bufferization. An output argument marked
    `kiln.in_place_input = i` (moved there from the result by
    `kiln-destination-outputs`) receives, at run time, the memory of input
    `i` (the frontend's write-back of an updated graph input: no buffer of
    its own, no copy back). Every read of input `i` is redirected to the
    output argument when all reads come before the first op touching the
    output or are in that op itself, a parallel `linalg.generic` reading the
    input with the same permutation map it writes the output with;
    otherwise the readers use a copy of the input made at entry. Input `i`
    is left unused. See codegen/cpu/InPlaceOutputs.cpp.
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
}

def CpuCopiesToLoopsPass : Pass<"kiln-cpu-copies-to-loops", "ModuleOp"> {
  let summary = "Turns strided memref.copy ops into a parallel loop over rows";
  let description = [{
    Runs after bufferization, before `kiln-cpu-parallelize-loops`. A
    `memref.copy` whose source or target is not contiguous (im2col taps,
    padding, concat pieces, strided slices) becomes one `scf.parallel` over
    its rows (the row: the innermost non-unit dimension; the row index: the
    outer dimensions flattened). A static row with unit stride on both
    sides is copied with `vector.load`/`vector.store` (at most 256 bytes
    each, a loop of 64-byte vectors and a tail beyond that); any other row
    is a second, element dimension of the loop. This replaces a call to
    the runtime's generic `memrefCopy` (one memcpy per row), and the
    flattened trip count keeps LLVM from unrolling whole nests. The loop
    lives in a private `noinline` helper `@kiln_copy_<i>`, one per pair of
    source/target types with the offsets made dynamic (a convolution's taps
    share one), called at each copy. Copies between contiguous buffers stay
    `memref.copy` (one memcpy). See codegen/cpu/CopiesToLoops.cpp.
  }];
  let dependentDialects = ["::mlir::scf::SCFDialect", "::mlir::arith::ArithDialect",
                           "::mlir::vector::VectorDialect", "::mlir::func::FuncDialect"];
}

def CpuParallelizeLoopsPass : Pass<"kiln-cpu-parallelize-loops", "func::FuncOp"> {
  let summary = "Keeps the scf.parallel loops worth running on several threads, serializes the rest";
  let description = [{
    Runs after `convert-linalg-to-parallel-loops` and before
    `convert-scf-to-openmp`. A loop nest at the top of the function with
    static bounds, no reductions and enough work (kMinParallelWork
    operation-iterations) stays parallel, with its last dimension turned
    into an `scf.for` (cut into parallel blocks when the other dimensions
    are too few) so the vectorized loop is never part of the OpenMP
    iteration space. Every other `scf.parallel` becomes a nest of `scf.for`.
    A kiln-cpu-fuse-rows row loop (`kiln.independent_rows`) with enough work
    becomes a parallel loop over blocks of rows, each block an alloca scope
    with its own copy of the loop's one-row stack buffers.
    See codegen/cpu/ParallelLoops.cpp.
  }];
  let options = [
    Option<"enabled", "enabled", "bool", /*default=*/"true",
           "Keep parallel loops (false: every scf.parallel becomes serial)">
  ];
  let dependentDialects = ["::mlir::scf::SCFDialect", "::mlir::arith::ArithDialect"];
}

def CpuLowerAllocaScopesPass : Pass<"kiln-cpu-lower-alloca-scopes", "func::FuncOp"> {
  let summary = "Inlines memref.alloca_scope bodies between llvm.intr.stacksave/stackrestore";
  let description = [{
    Runs after `convert-scf-to-openmp` (which wraps each parallel body in an
    alloca scope) and before `convert-scf-to-cf`, which would otherwise
    split loops inside a scope into blocks the single-block op forbids.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def CpuAliasScopesPass : Pass<"kiln-cpu-alias-scopes", "func::FuncOp"> {
  let summary = "Lowers memref loads/stores to LLVM with scoped-noalias metadata from buffer roots";
  let description = [{
    Runs right before `finalize-memref-to-llvm`. Every `memref.load` and
    `memref.store` whose buffer traces back (through views, casts,
    reinterpret_casts, extract_strided_metadata) to a root becomes an
    `llvm.load` / `llvm.store` with `alias_scopes` = the root's scope and
    `noalias_scopes` = the scopes of every root whose memory is disjoint
    from it. Roots: a static byte range of a `memref.view` (the arena
    buffers of kiln-cpu-plan-memory), an alloc/alloca/get_global, an argument
    marked `llvm.noalias`. Lets LLVM vectorize loops over arena views and
    keeps those facts inside loops outlined for OpenMP. Untraceable
    accesses are left to finalize-memref-to-llvm (no metadata). See
    codegen/cpu/AliasScopes.cpp.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def CpuApproximateMathPass : Pass<"kiln-cpu-approximate-math", "ModuleOp"> {
  let summary = "Expands math ops (exp, log, tanh, erf, ...) into vectorizable polynomials";
  let description = [{
    Applies MLIR's polynomial approximations to `math` ops so that LLVM can
    vectorize them instead of emitting scalar libm calls.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
    "::mlir::vector::VectorDialect", "::mlir::x86vector::X86VectorDialect"];
}

#endif // KILN_CODEGEN_CPU_PASSES_TD
