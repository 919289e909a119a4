"""The precision contract (docs/PRECISION.md) in NumPy: the oracle every backend must match.

    fp           rounding primitives, powers of two, the summation tree        (section 2)
    quantize     activation blocks (12-bit) and block floats (22-bit)          (3)
    activations  exp, tanh, SiLU, GELU, gating, soft-capping                   (4)
    matmul       weights in integer form, the group loop                       (5)
    rmsnorm, rope, embedding                                                   (6)
    attention    the 64-key chunk loop                                         (7)
    quants       ggml block formats: dequantisation and integer form
    sampling     from logits to a token (docs/SAMPLING.md)
    logprobs     log-probabilities of the logits (docs/SAMPLING.md)

Only NumPy, the standard library and gguf are imported here.
"""

# The version of docs/PRECISION.md and docs/SAMPLING.md this code implements. Any change
# that can move a bit of any logit (or of a sampled token or logprob) increments it, and the
# pinned digests (tests/golden) change in the same commit.
CONTRACT_VERSION = 1
