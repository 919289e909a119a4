"""One entry point per question for every quantised type, chosen at compile time.

`unpack_q(QTYPE, blk, e)`: integer weight q (int32) of weight e of the block at `blk`;
`unpack_group(QTYPE, blk, g)`: (scale, offset) float32 of group g of that block. QTYPE is
the ggml type number (`gguf.GGMLQuantizationType`), a constexpr, so only one decoder is
compiled per kernel. `blk` and `e`/`g` are broadcast against each other first.
"""

from __future__ import annotations

import triton
import triton.language as tl
from gguf import GGMLQuantizationType as T

from exactserve.kernels.quants.iquants import iq4_nl_group, iq4_nl_q, iq4_xs_group, iq4_xs_q
from exactserve.kernels.quants.kquants import (
    q2_k_group,
    q2_k_q,
    q3_k_group,
    q3_k_q,
    q4_k_group,
    q4_k_q,
    q5_k_group,
    q5_k_q,
    q6_k_group,
    q6_k_q,
)
from exactserve.kernels.quants.legacy import (
    q4_0_group,
    q4_0_q,
    q4_1_group,
    q4_1_q,
    q5_0_group,
    q5_0_q,
    q5_1_group,
    q5_1_q,
    q8_0_group,
    q8_0_q,
)

Q4_0 = tl.constexpr(int(T.Q4_0))
Q4_1 = tl.constexpr(int(T.Q4_1))
Q5_0 = tl.constexpr(int(T.Q5_0))
Q5_1 = tl.constexpr(int(T.Q5_1))
Q8_0 = tl.constexpr(int(T.Q8_0))
Q2_K = tl.constexpr(int(T.Q2_K))
Q3_K = tl.constexpr(int(T.Q3_K))
Q4_K = tl.constexpr(int(T.Q4_K))
Q5_K = tl.constexpr(int(T.Q5_K))
Q6_K = tl.constexpr(int(T.Q6_K))
IQ4_NL = tl.constexpr(int(T.IQ4_NL))
IQ4_XS = tl.constexpr(int(T.IQ4_XS))


@triton.jit
def unpack_q(QTYPE: tl.constexpr, blk, e):
    blk, e = tl.broadcast(blk, e)
    if QTYPE == Q4_0:
        q = q4_0_q(blk, e)
    elif QTYPE == Q4_1:
        q = q4_1_q(blk, e)
    elif QTYPE == Q5_0:
        q = q5_0_q(blk, e)
    elif QTYPE == Q5_1:
        q = q5_1_q(blk, e)
    elif QTYPE == Q8_0:
        q = q8_0_q(blk, e)
    elif QTYPE == Q2_K:
        q = q2_k_q(blk, e)
    elif QTYPE == Q3_K:
        q = q3_k_q(blk, e)
    elif QTYPE == Q4_K:
        q = q4_k_q(blk, e)
    elif QTYPE == Q5_K:
        q = q5_k_q(blk, e)
    elif QTYPE == Q6_K:
        q = q6_k_q(blk, e)
    elif QTYPE == IQ4_NL:
        q = iq4_nl_q(blk, e)
    else:
        tl.static_assert(QTYPE == IQ4_XS, "unsupported quantised type")
        q = iq4_xs_q(blk, e)
    return q


@triton.jit
def unpack_group(QTYPE: tl.constexpr, blk, g):
    blk, g = tl.broadcast(blk, g)
    if QTYPE == Q4_0:
        scale, offset = q4_0_group(blk, g)
    elif QTYPE == Q4_1:
        scale, offset = q4_1_group(blk, g)
    elif QTYPE == Q5_0:
        scale, offset = q5_0_group(blk, g)
    elif QTYPE == Q5_1:
        scale, offset = q5_1_group(blk, g)
    elif QTYPE == Q8_0:
        scale, offset = q8_0_group(blk, g)
    elif QTYPE == Q2_K:
        scale, offset = q2_k_group(blk, g)
    elif QTYPE == Q3_K:
        scale, offset = q3_k_group(blk, g)
    elif QTYPE == Q4_K:
        scale, offset = q4_k_group(blk, g)
    elif QTYPE == Q5_K:
        scale, offset = q5_k_group(blk, g)
    elif QTYPE == Q6_K:
        scale, offset = q6_k_group(blk, g)
    elif QTYPE == IQ4_NL:
        scale, offset = iq4_nl_group(blk, g)
    else:
        tl.static_assert(QTYPE == IQ4_XS, "unsupported quantised type")
        scale, offset = iq4_xs_group(blk, g)
    return scale, offset
