"""The sampling clause (docs/SAMPLING.md): RNG known answers, each sampler on crafted
logits with hand-derived results, determinism and independence from other requests."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from exactserve.reference.sampling import (
    SamplingParams,
    apply_logit_bias,
    apply_penalties,
    cumulative_sum,
    philox4x32_10,
    sample_token,
    sorted_candidates,
    uniform,
)

# Random123 tests/kat_vectors, the three "philox4x32 10" lines: counter, key, output.
PHILOX_KAT = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    (
        (0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF),
        (0xFFFFFFFF, 0xFFFFFFFF),
        (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD),
    ),
    (
        (0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344),
        (0xA4093822, 0x299F31D0),
        (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1),
    ),
]


@pytest.mark.parametrize(("counter", "key", "expected"), PHILOX_KAT)
def test_philox_matches_random123_known_answers(counter, key, expected) -> None:
    assert philox4x32_10(counter, key) == expected


def _philox_vectorised(counters: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """A second Philox, written the way Random123's C is: the key is bumped *before*
    rounds 2..10, products via uint64 arrays. counters [n, 4], keys [n, 2] -> [n, 4]."""
    c = counters.astype(np.uint64)
    k = keys.astype(np.uint64)
    mask = np.uint64(0xFFFFFFFF)
    for r in range(10):
        if r:
            k = (k + np.array([0x9E3779B9, 0xBB67AE85], np.uint64)) & mask
        p0 = np.uint64(0xD2511F53) * c[:, 0]
        p1 = np.uint64(0xCD9E8D57) * c[:, 2]
        c = np.stack(
            [
                (p1 >> np.uint64(32)) ^ c[:, 1] ^ k[:, 0],
                p1 & mask,
                (p0 >> np.uint64(32)) ^ c[:, 3] ^ k[:, 1],
                p0 & mask,
            ],
            axis=1,
        )
    return c


def test_philox_matches_an_independent_implementation() -> None:
    rng = np.random.default_rng(7)
    counters = rng.integers(0, 2**32, size=(200, 4), dtype=np.uint64)
    keys = rng.integers(0, 2**32, size=(200, 2), dtype=np.uint64)
    expected = _philox_vectorised(counters, keys)
    for i in range(200):
        got = philox4x32_10(tuple(int(v) for v in counters[i]), tuple(int(v) for v in keys[i]))
        assert got == tuple(int(v) for v in expected[i])


def test_uniform_bit_construction() -> None:
    # seed 0, position 0 is Random123's all-zero vector: u = top 24 bits of 0x6627E8D5.
    assert uniform(0, 0) == np.float32(0x6627E8 / 2**24)
    seed, position = 0x0123456789ABCDEF, 2**32 + 17
    word0 = philox4x32_10((17, 1, 0, 0), (0x89ABCDEF, 0x01234567))[0]
    u = uniform(seed, position)
    assert u.dtype == np.float32
    assert u == np.float32(word0 >> 8) * np.float32(2**-24)
    assert float(u) * 2**24 == word0 >> 8  # exact: no rounding in the construction


def test_uniform_is_in_range_and_counter_based() -> None:
    draws = np.array([uniform(99, p) for p in range(2000)])
    assert draws.min() >= 0 and draws.max() <= 1 - 2**-24
    assert 0.45 < draws.mean() < 0.55
    assert uniform(99, 5) == uniform(99, 5)
    assert uniform(99, 5) != uniform(99, 6) and uniform(99, 5) != uniform(100, 5)
    with pytest.raises(ValueError, match=r"seed must be in \[0, 2\*\*64\), got -1"):
        uniform(-1, 0)


TRITON_PHILOX = """
import numpy as np, torch, triton, triton.language as tl

@triton.jit
def draw(seed_ptr, pos_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    seed = tl.load(seed_ptr + offs)
    pos = tl.load(pos_ptr + offs)
    zero = tl.zeros_like(pos).to(tl.uint32)
    r0, r1, r2, r3 = tl.philox(seed, (pos & 0xFFFFFFFF).to(tl.uint32),
                               (pos >> 32).to(tl.uint32), zero, zero)
    tl.store(out_ptr + offs, (r0 >> 8).to(tl.float32) * 5.9604644775390625e-08)

seeds = torch.tensor(SEEDS, dtype=torch.int64)
positions = torch.tensor(POSITIONS, dtype=torch.int64)
out = torch.empty(len(SEEDS), dtype=torch.float32)
draw[(1,)](seeds, positions, out, N=len(SEEDS))
print(out.numpy().view(np.uint32).tolist())
"""


def test_triton_philox_reproduces_the_draw() -> None:
    """The clause says a Triton backend gets u from tl.philox; check it in the interpreter."""
    seeds = [0, 1, 2**40 + 5, 12345678901234, 7, 99, 2**63 - 1, 3]
    positions = [0, 5, 2**33 + 1, 77, 2**32 - 1, 1000, 123, 2**40]
    code = TRITON_PHILOX.replace("SEEDS", repr(seeds)).replace("POSITIONS", repr(positions))
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    bits = json.loads(proc.stdout.strip().splitlines()[-1])
    expected = [
        int(np.float32(uniform(s, p)).view(np.uint32))
        for s, p in zip(seeds, positions, strict=True)
    ]
    assert bits == expected


def test_cumulative_sum_is_sequential_float32() -> None:
    rng = np.random.default_rng(3)
    values = (rng.standard_normal(4099) * np.exp(rng.uniform(-20, 20, 4099))).astype(np.float32)
    expected, total = [], np.float32(0)
    for i, v in enumerate(values):
        total = v if i == 0 else np.float32(total + v)
        expected.append(total)
    got = cumulative_sum(values)
    assert got.dtype == np.float32
    assert got.tobytes() == np.array(expected, np.float32).tobytes()


# Penalties: hand-computed, every intermediate exact in binary32.


def test_penalties_follow_llama_cpp_semantics() -> None:
    logits = np.array([2.0, -1.0, 0.5, 3.0, 0.0], np.float32)
    params = SamplingParams(repeat_penalty=2.0, frequency_penalty=0.25, presence_penalty=0.5)
    got = apply_penalties(logits, [4, 0, 1, 0], params)
    # t0 (c=2): 2/2 - (2*0.25 + 0.5) = 0;  t1 (c=1): -1*2 - 0.75 = -2.75
    # t4 (c=1): 0 <= 0 so 0*2 - 0.75 = -0.75;  t2, t3 unseen
    assert got.tolist() == [0.0, -2.75, 0.5, 3.0, -0.75]
    assert logits.tolist() == [2.0, -1.0, 0.5, 3.0, 0.0]  # input untouched


def test_penalty_window_is_the_last_n_context_tokens() -> None:
    logits = np.array([1.0, 1.0, 1.0], np.float32)
    context = [0, 0, 1, 2]
    last2 = apply_penalties(logits, context, SamplingParams(presence_penalty=1.0, penalty_last_n=2))
    assert last2.tolist() == [1.0, 0.0, 0.0]
    whole = apply_penalties(
        logits, context, SamplingParams(frequency_penalty=1.0, penalty_last_n=-1)
    )
    assert whole.tolist() == [-1.0, 0.0, 0.0]
    off = apply_penalties(logits, context, SamplingParams(presence_penalty=1.0, penalty_last_n=0))
    assert off.tolist() == [1.0, 1.0, 1.0]


def test_penalty_rounding_is_float32() -> None:
    logits = np.array([1.0], np.float32)
    got = apply_penalties(logits, [0], SamplingParams(repeat_penalty=3.0))
    assert got[0] == np.float32(1.0) / np.float32(3.0)  # one rounding, not 1/3 in float64
    assert got.dtype == np.float32


def test_penalty_rejects_tokens_outside_the_vocabulary() -> None:
    with pytest.raises(ValueError, match=r"outside the vocabulary \[0, 2\)"):
        apply_penalties(np.zeros(2, np.float32), [5], SamplingParams(repeat_penalty=1.1))


# Logit bias (step 0): x[t] = fl(x[t] + float32(b)), before the penalties.


def test_logit_bias_is_one_float32_addition_of_the_float32_bias() -> None:
    ulp = 2.0**-23
    logits = np.array([1.0, 1.0 + ulp, 0.0, 3.0, -2.5], np.float32)
    params = SamplingParams(
        logit_bias=(
            (0, 2.0**-24),  # 1 + half an ulp: a tie, to even -> 1
            (1, 2.0**-24),  # (1 + ulp) + half an ulp: a tie, to even -> 1 + 2 ulp
            (2, 0.1),  # float32(0.1), not the float64 0.1
            (4, 2.0**-24 + 2.0**-50),  # float32(b) = 2^-24 first, so -2.5 + 2^-24 -> -2.5
        )
    )
    got = apply_logit_bias(logits, params)
    expected = np.array([1.0, 1.0 + 2 * ulp, np.float32(0.1), 3.0, -2.5], np.float32)
    assert got.view(np.uint32).tolist() == expected.view(np.uint32).tolist()
    assert float(got[2]) != 0.1 and float(got[2]) == float(np.float32(0.1))
    # float32(b) is rounded first: 1 + float32(b) is a tie (to 1), 1 + b in float64 is not
    single = apply_logit_bias(
        np.array([1.0], np.float32), SamplingParams(logit_bias=((0, 2.0**-24 + 2.0**-50),))
    )
    assert single[0] == 1.0 and np.float32(1.0 + (2.0**-24 + 2.0**-50)) == np.float32(1 + ulp)
    assert logits.tolist() == [1.0, 1.0 + ulp, 0.0, 3.0, -2.5]  # input untouched


def test_logit_bias_changes_a_greedy_choice() -> None:
    logits = np.array([1.0, 5.0, 4.5, -3.0], np.float32)
    assert sample_token(logits, SamplingParams(temperature=0.0), []) == 1
    banned = SamplingParams(temperature=0.0, logit_bias=((1, -100.0),))
    assert sample_token(logits, banned, []) == 2  # 5 - 100 = -95 < 4.5
    boosted = SamplingParams(temperature=0.0, logit_bias=((3, 8.5),))
    assert sample_token(logits, boosted, []) == 3  # -3 + 8.5 = 5.5 > 5
    assert logits.tolist() == [1.0, 5.0, 4.5, -3.0]


def test_logit_bias_makes_a_token_undrawable_or_certain() -> None:
    logits = np.zeros(4, np.float32)
    # weight exp(-100) ~ 4e-44 is below half an ulp of the running sum 1: never drawn
    banned = [SamplingParams(seed=s, logit_bias=((0, -100.0),)) for s in range(200)]
    assert {sample_token(logits, p, []) for p in banned} == {1, 2, 3}
    forced = [SamplingParams(seed=s, logit_bias=((2, 100.0),)) for s in range(50)]
    assert {sample_token(logits, p, []) for p in forced} == {2}


def test_logit_bias_comes_before_the_penalties() -> None:
    f = np.float32
    logits = np.array([2.0, 0.5, 1.7, -1.0], np.float32)
    params = SamplingParams(
        repeat_penalty=1.5,
        presence_penalty=0.25,
        frequency_penalty=0.125,
        logit_bias=((0, -0.75), (1, -1.0), (3, 0.3)),
    )
    context = [0, 1, 1, 2]
    # by hand, step 0 then step 1 (c: token 0 once, token 1 twice, token 2 once, 3 unseen)
    r, s, fr = f(1.5), f(0.25), f(0.125)
    t0 = f(2.0) + f(-0.75)  # 1.25 > 0: divided
    t0 = t0 / r - (f(1) * fr + s)
    t1 = f(0.5) + f(-1.0)  # -0.5 <= 0: multiplied (it would be divided without the bias)
    t1 = t1 * r - (f(2) * fr + s)
    t2 = f(1.7) / r - (f(1) * fr + s)
    t3 = f(-1.0) + f(0.3)
    expected = np.array([t0, t1, t2, t3], np.float32)
    got = apply_penalties(apply_logit_bias(logits, params), context, params)
    assert got.view(np.uint32).tolist() == expected.view(np.uint32).tolist()
    assert t1 == f(-1.25)  # -0.5 * 1.5 - 0.5
    assert (f(0.5) / r - (f(2) * fr + s)) + f(-1.0) != t1  # what penalising first would give
    greedy = SamplingParams(
        temperature=0.0,
        repeat_penalty=1.5,
        presence_penalty=0.25,
        frequency_penalty=0.125,
        logit_bias=params.logit_bias,
    )
    assert sample_token(logits, greedy, context) == 2  # t2 = 0.758 > t0 = 0.458
    assert sample_token(logits, dataclasses.replace(greedy, logit_bias=()), context) == 0
    assert logits.tolist() == [2.0, 0.5, np.float32(1.7), -1.0]


def test_logit_bias_is_canonical_and_validated() -> None:
    a = SamplingParams(logit_bias=[[5, 1.0], (2, -1.0)])
    assert a.logit_bias == ((2, -1.0), (5, 1.0))
    assert a == SamplingParams(logit_bias=((2, -1.0), (5, 1.0))) and hash(a) == hash(a)
    assert SamplingParams().logit_bias == ()
    with pytest.raises(ValueError, match=r"^logit_bias token ids must be integers >= 0, got -1$"):
        SamplingParams(logit_bias=((-1, 1.0),))
    with pytest.raises(ValueError, match=r"^logit_bias token ids must be integers >= 0, got 1\.0$"):
        SamplingParams(logit_bias=((1.0, 1.0),))
    with pytest.raises(ValueError, match=r"^logit_bias names token 3 more than once$"):
        SamplingParams(logit_bias=((3, 1.0), (3, 2.0)))
    with pytest.raises(
        ValueError, match=r"^logit_bias for token 4 must be a number finite in float32, got 1e\+39$"
    ):
        SamplingParams(logit_bias=((4, 1e39),))
    with pytest.raises(
        ValueError, match=r"for token 4 must be a number finite in float32, got nan$"
    ):
        SamplingParams(logit_bias=((4, math.nan),))
    with pytest.raises(
        ValueError, match=r"for token 4 must be a number finite in float32, got '1'$"
    ):
        SamplingParams(logit_bias=((4, "1"),))
    with pytest.raises(
        ValueError, match=r"^logit_bias must be a sequence of \(token id, bias\) pairs, got 5$"
    ):
        SamplingParams(logit_bias=5)
    with pytest.raises(ValueError, match=r"pairs, got \[\(1, 2, 3\)\]$"):
        SamplingParams(logit_bias=[(1, 2, 3)])
    with pytest.raises(ValueError, match=r"^top_k must be >= 0 .*; logit_bias names token 3 more"):
        SamplingParams(top_k=-1, logit_bias=((3, 1.0), (3, 2.0)))


def test_logit_bias_errors_at_the_draw() -> None:
    params = SamplingParams(logit_bias=((1, 1.0), (7, 1.0)))
    with pytest.raises(
        ValueError,
        match=r"^logit_bias names token 7 but the vocabulary has 3 tokens \(ids 0\.\.2\)$",
    ):
        sample_token(np.zeros(3, np.float32), params, [])
    with pytest.raises(ValueError, match="the logit bias overflowed a logit to infinity"):
        sample_token(np.array([3e38, 0.0], np.float32), SamplingParams(logit_bias=((0, 1e38),)), [])


# Greedy.


def test_greedy_takes_the_lowest_id_among_tied_maxima() -> None:
    logits = np.array([1.0, 5.0, -2.0, 5.0, 5.0], np.float32)
    assert sample_token(logits, SamplingParams(temperature=0.0), []) == 1


def test_greedy_sees_penalised_logits() -> None:
    logits = np.array([1.0, 5.0, 4.5], np.float32)
    params = SamplingParams(temperature=0.0, repeat_penalty=2.0)
    assert sample_token(logits, params, [1]) == 2  # 5/2 = 2.5 < 4.5


# Candidate order and top-k.


def test_candidate_order_is_logit_descending_then_id_ascending() -> None:
    logits = np.array([0.0, 2.0, -0.0, 2.0, 1.0, 0.0], np.float32)
    assert sorted_candidates(logits, 0).tolist() == [1, 3, 4, 0, 2, 5]  # -0 ties with +0
    assert sorted_candidates(logits, 4).tolist() == [1, 3, 4, 0]


def test_top_k_selection_equals_a_full_sort_cut() -> None:
    rng = np.random.default_rng(11)
    logits = rng.integers(-5, 5, size=1000).astype(np.float32)  # many ties
    full = sorted_candidates(logits, 0)
    for k in (1, 2, 37, 99, 100, 101, 999, 1000, 5000):
        assert sorted_candidates(logits, k).tolist() == full[:k].tolist()


def test_top_k_one_is_always_the_best_token() -> None:
    logits = np.array([0.0, 0.3, 0.2, 0.3], np.float32)
    params = [SamplingParams(top_k=1, temperature=2.0, seed=s) for s in range(50)]
    assert {sample_token(logits, p, []) for p in params} == {1}


def test_top_k_boundary_ties_keep_the_lower_ids() -> None:
    logits = np.array([1.0, 3.0, 3.0, 3.0, 0.0], np.float32)
    drawn = {sample_token(logits, SamplingParams(top_k=2, seed=s), []) for s in range(64)}
    assert drawn == {1, 2}


# The draw: with n equal logits every weight is exp(0) = 1, the running sums are the
# exact integers 1..n, and the walk picks index floor(fl(u * n)) of the id-ascending order.


@pytest.mark.parametrize("n", [1, 2, 3, 7, 1000])
def test_draw_over_equal_weights_is_floor_u_times_n(n: int) -> None:
    logits = np.full(n, 0.25, np.float32)
    for position in range(40):
        params = SamplingParams(seed=5)
        expected = int(math.floor(float(uniform(5, position) * np.float32(n))))
        assert sample_token(logits, params, [0] * position) == expected


def test_draw_uses_context_length_as_position() -> None:
    logits = np.zeros(1000, np.float32)
    params = SamplingParams(seed=77)
    draws = [sample_token(logits, params, list(range(p))) for p in range(30)]
    assert draws == [int(uniform(77, p) * np.float32(1000)) for p in range(30)]


def test_temperature_and_draw_on_a_two_token_distribution() -> None:
    # d = [0, -ln 3]: p = [3/4, 1/4] at T = 1, [9/10, 1/10] at T = 0.5 (weight 1/9).
    logits = np.array([2.0, 2.0 - math.log(3.0)], np.float32)
    for temperature, p0 in ((1.0, 0.75), (0.5, 0.9), (2.0, 1 / (1 + 3**-0.5))):
        for seed in range(200):
            u = float(uniform(seed, 3))
            if abs(u - p0) < 1e-4:
                continue  # too close to the boundary for a hand-derived answer
            params = SamplingParams(temperature=temperature, seed=seed)
            assert sample_token(logits, params, [0, 0, 0]) == (0 if u < p0 else 1)


# Top-p: four equal logits give running sums 1, 2, 3, 4 exactly; t = fl(p * 4).


@pytest.mark.parametrize(("top_p", "kept"), [(0.25, 1), (0.26, 2), (0.5, 2), (0.51, 3), (0.99, 4)])
def test_top_p_keeps_the_shortest_prefix_reaching_p(top_p: float, kept: int) -> None:
    logits = np.ones(4, np.float32)
    drawn = set()
    for seed in range(200):
        token = sample_token(logits, SamplingParams(top_p=top_p, seed=seed), [])
        assert token == int(math.floor(float(uniform(seed, 0) * np.float32(kept))))
        drawn.add(token)
    assert drawn == set(range(kept))


def test_top_p_runs_after_top_k() -> None:
    # e = [1, e^-1, e^-2, e^-2, e^-2]: token 0 holds 1/1.774 = 0.564 of the whole mass,
    # but 1/1.368 = 0.731 of the mass left by top-k 2.
    logits = np.array([2.0, 1.0, -0.0, -0.0, -0.0], np.float32)
    first_only = {sample_token(logits, SamplingParams(top_p=0.55, seed=s), []) for s in range(64)}
    assert first_only == {0}
    params = [SamplingParams(top_k=2, top_p=0.75, seed=s) for s in range(64)]
    assert {sample_token(logits, p, []) for p in params} == {0, 1}


# Min-p: e_i = exp(x_i - x_0) >= min_p.


def test_min_p_keeps_tokens_at_least_min_p_times_the_best() -> None:
    logits = np.array([-3.0, 0.0, math.log(0.5), math.log(0.2), math.log(0.05)], np.float32)
    drawn = {sample_token(logits, SamplingParams(min_p=0.1, seed=s), []) for s in range(300)}
    assert drawn == {1, 2, 3}  # e = 1, 0.5, 0.2 kept; 0.05 and e^-3 = 0.0498 dropped


def test_min_p_sees_untempered_weights() -> None:
    logits = np.array([0.0, math.log(0.2)], np.float32)
    # after T = 100 the weight would be 0.2^0.01 = 0.98 and the token would survive
    params = [SamplingParams(min_p=0.3, temperature=100.0, seed=s) for s in range(64)]
    assert {sample_token(logits, p, []) for p in params} == {0}


# Determinism and independence from other requests.


def test_sampling_is_a_pure_function_of_its_inputs() -> None:
    rng = np.random.default_rng(0)
    logits = rng.standard_normal(50_000).astype(np.float32)
    params = SamplingParams(temperature=0.9, top_k=40, top_p=0.95, min_p=0.05, seed=42)
    first = sample_token(logits, params, [1, 2, 3])
    np.random.seed(123)  # global NumPy state must not matter
    rng.standard_normal(10)
    assert all(sample_token(logits.copy(), params, [1, 2, 3]) == first for _ in range(3))


def test_a_requests_draws_do_not_depend_on_other_requests() -> None:
    rng = np.random.default_rng(1)
    vocab = 4096
    requests = [
        (
            rng.standard_normal((12, vocab)).astype(np.float32) * 3,
            SamplingParams(temperature=t, top_k=k, top_p=p, seed=seed),
        )
        for t, k, p, seed in [
            (1.0, 0, 1.0, 1),
            (0.7, 40, 0.9, 2),
            (1.3, 0, 0.8, 1),
            (0.5, 5, 1.0, 9),
        ]
    ]

    def serve(order: list[int]) -> dict[int, list[int]]:
        """Steps all requests together, visiting them in `order` at each step."""
        tokens: dict[int, list[int]] = {i: [] for i in order}
        for step in range(12):
            for i in order:
                logits, params = requests[i]
                tokens[i].append(sample_token(logits[step], params, [0] + tokens[i]))
        return tokens

    alone = {i: serve([i])[i] for i in range(len(requests))}
    assert serve([0, 1, 2, 3]) == alone
    assert serve([3, 1, 0, 2]) == alone
    assert alone[0] != alone[2]  # same seed, different logits and settings


def test_invalid_parameters_name_the_problem() -> None:
    with pytest.raises(ValueError, match=r"temperature must be a finite number >= 0, got -1"):
        SamplingParams(temperature=-1)
    with pytest.raises(ValueError, match=r"top_p must be in \(0, 1\].*; min_p must be"):
        SamplingParams(top_p=0, min_p=2)
    with pytest.raises(ValueError, match="logits contain NaN or infinity"):
        sample_token(np.array([0, np.nan], np.float32), SamplingParams(), [])
    with pytest.raises(ValueError, match="must be a non-empty 1-D float32 array, got float64"):
        sample_token(np.zeros(3), SamplingParams(), [])


def test_degenerate_parameters_are_refused_or_defined() -> None:
    with pytest.raises(ValueError, match="repeat_penalty must be > 0 and finite in float32"):
        SamplingParams(repeat_penalty=1e-50)  # 0 in float32
    with pytest.raises(ValueError, match=r"temperature 1e\+39 overflows float32"):
        SamplingParams(temperature=1e39)
    with pytest.raises(ValueError, match="the penalties overflowed a logit to infinity"):
        apply_penalties(np.array([1e30], np.float32), [0], SamplingParams(repeat_penalty=1e-10))
    tiny = SamplingParams(temperature=1e-50)  # 0 in float32: greedy
    assert tiny.is_greedy
    assert sample_token(np.array([0.0, 2.0, 2.0], np.float32), tiny, []) == 1
