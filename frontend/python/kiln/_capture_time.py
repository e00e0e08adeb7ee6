# SPDX-License-Identifier: Apache-2.0
"""Methods the capture evaluates at capture time instead of inlining.

Some library methods are pure functions of their receiver's state but are
written in Python the capture should not trace: HuggingFace's
``PretrainedConfig.get_text_config(decoder=True)`` deep-copies a legacy
encoder-decoder config (T5, BART) and ``delattr``s the keys of the other
half, once per forward (``DynamicCache(config=...)``), which made ~65
graph breaks. When the interpreter calls one of the methods named in
CAPTURE_TIME with a receiver it holds as a constant (read through a
source, or made at capture) and constant arguments, it calls the method
now and uses the result as a constant. The receiver is guarded by its type
(a plain object, PlainObjects.h) and its ``__dict__`` by value against a
deep copy (any change of the config's state recompiles); a result that is
the receiver itself keeps its source, any other result keeps the
receiver's identity guard. The result must not escape the frame as a new object per call:
the listed methods return objects the callers only read.
(frontend/csrc/capture/interp/CaptureTimeCalls.cpp.)
"""

# (function __module__, function __qualname__) of each method.
CAPTURE_TIME = frozenset({
    ("transformers.configuration_utils", "PretrainedConfig.get_text_config"),
})

# Module-name prefixes of the nn.Module classes a compiled function may
# construct (`loss_fct = CrossEntropyLoss(); loss_fct(logits, labels)`):
# the capture builds the module once, at capture, with the call's constant
# arguments, when every ``__init__`` of its class's MRO (before nn.Module)
# is defined in one of these modules, the constructor draws no random
# numbers and the module holds no parameters, buffers or tensors
# (frontend/csrc/capture/interp/BuiltModules.cpp).
CONSTRUCT_AT_CAPTURE = ("torch.nn.modules.", "transformers.activations")
