"""The compiled int8 group loop (runtime/cpu) against the reference's float32 BLAS path: the
same bits for every tensor type, every variant that runs here, odd shapes, zero and
non-finite activation blocks, through the ops and through whole models. A variant this
CPU cannot run is skipped with the reason (never counted as a pass); a build with FMA
contraction must be caught, which shows the comparison can fail."""

from __future__ import annotations

import numpy as np
import pytest
from gguf import GGMLQuantizationType as T

from exactserve.reference.quants import FLOAT_TYPE_SIZES, QUANT_UNITS, to_integer_form
from exactserve.runtime.backend import ReferenceOps
from exactserve.runtime.cpu import build
from exactserve.runtime.cpu.matmul import LANES, pack, unpack_rows
from exactserve.runtime.cpu.probe import mismatches
from exactserve.runtime.errors import UnsupportedError
from exactserve.runtime.model import load_model
from exactserve.runtime.tiny_model import random_raw_blocks

F32 = np.float32
QUANT_TYPES = sorted(QUANT_UNITS, key=lambda t: t.name)
FLOAT_TYPES = sorted(FLOAT_TYPE_SIZES, key=lambda t: t.name)


@pytest.fixture(scope="module")
def library():
    return build.build_library()


@pytest.fixture(scope="module")
def working(library):
    return build.working_variants(library)


@pytest.fixture(scope="module")
def numpy_ops():
    return ReferenceOps("numpy")


def variant_ops(variant: str, working: list[str]) -> ReferenceOps:
    if variant not in working:
        pytest.skip(f"the {variant} variant does not run on this CPU (its probe failed)")
    return ReferenceOps(variant)


def raw_matrix(qtype: T, n: int, k: int, seed: int = 0) -> np.ndarray:
    if qtype in FLOAT_TYPE_SIZES:
        w = (np.random.default_rng(seed).standard_normal((n, k)) * 0.05).astype(F32)
        if qtype == T.BF16:
            return (w.view(np.uint32) >> 16).astype(np.uint16).view(np.uint8).reshape(-1)
        return w.astype(np.float16 if qtype == T.F16 else F32).view(np.uint8).reshape(-1)
    unit = QUANT_UNITS[qtype]
    rng = np.random.default_rng(seed)
    return random_raw_blocks(rng, qtype, n * k // unit.block_size, 0.05).reshape(-1)


def awkward_activations(m: int, k: int, seed: int = 1) -> np.ndarray:
    """Rows at very different scales, an outlier feature, an all-zero block, and (row 0) a
    block holding a NaN and one holding an infinity (both round to zero, contract 3.1)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((m, k)) * np.exp(rng.uniform(-30, 30, (m, 1)))
    x[:, 5] *= 40
    x = x.astype(F32)
    x[-1, 32:64] = 0.0
    if k >= 96:
        x[0, 33], x[0, 70] = np.nan, np.inf
    return x


@pytest.mark.parametrize("variant", build.VARIANTS)
@pytest.mark.parametrize("qtype", QUANT_TYPES + FLOAT_TYPES, ids=lambda t: t.name)
def test_every_variant_gives_the_references_bits_for_every_type(variant, qtype, working, numpy_ops):
    ops = variant_ops(variant, working)
    n, k = 40, 512  # 40: the last panel of 16 rows is half padding
    raw = raw_matrix(qtype, n, k)
    want_w = numpy_ops.prepare_matrix(raw, qtype, n, k)
    got_w = ops.prepare_matrix(raw, qtype, n, k)
    bias = np.random.default_rng(3).standard_normal(n).astype(F32)
    for m in (1, 3, 4, 5, 9):  # around the kernel's 4-row blocks
        x = awkward_activations(m, k, seed=m)
        want = numpy_ops.matmul(x, want_w, bias)
        got = ops.matmul(x, got_w, bias)
        assert got.dtype == F32 and got.shape == (m, n)
        assert got.view(np.uint32).tobytes() == want.view(np.uint32).tobytes(), (qtype, m)


@pytest.mark.parametrize("variant", build.VARIANTS)
def test_shared_rounding_and_thread_tiles_do_not_change_bits(variant, working, numpy_ops):
    from exactserve.runtime.model.threads import make_executor

    ops = variant_ops(variant, working)
    n, k = 2 * 4096 + 16 * 3, 768  # enough work for the tile threads to share out
    raw = raw_matrix(T.Q4_K, n, k, seed=5)
    x = awkward_activations(17, k, seed=7)
    want = numpy_ops.matmul(x, numpy_ops.prepare_matrix(raw, T.Q4_K, n, k))
    w = ops.prepare_matrix(raw, T.Q4_K, n, k)
    rounded = ops.quantize_activations(x).values  # one rounding, used twice
    executor = make_executor(3)
    try:
        for result in (
            ops.matmul_quantized(rounded, w),
            ops.matmul_quantized(rounded, w, executor=executor),
            np.concatenate([ops.matmul(x[i : i + 1], w) for i in range(len(x))]),
        ):
            assert result.tobytes() == want.tobytes()
    finally:
        executor.shutdown()


@pytest.mark.parametrize("qtype", [T.Q8_0, T.Q4_K, T.Q6_K, T.Q4_1], ids=lambda t: t.name)
def test_packing_round_trips_and_tied_embedding_rows_match(qtype, numpy_ops):
    n, k = 37, 256
    raw = raw_matrix(qtype, n, k, seed=2)
    iw = to_integer_form(raw, qtype, n, k)
    packed = pack(iw)
    assert packed.w.dtype == np.int8 and packed.w.shape == (3, k // 2, LANES, 2)
    ids = np.array([0, 36, 15, 16, 7, 36])
    back = unpack_rows(packed, ids)
    assert np.array_equal(back.q, iw.q[ids]) and np.array_equal(back.scale, iw.scale[ids])
    ops = ReferenceOps("auto")
    if ops.kernel is None:
        pytest.skip("no compiled variant runs here")
    got = ops.embedding_rows(ops.prepare_matrix(raw, qtype, n, k), ids)
    want = numpy_ops.embedding_rows(numpy_ops.prepare_matrix(raw, qtype, n, k), ids)
    assert got.tobytes() == want.tobytes()


def test_the_probe_catches_a_build_that_fuses_multiply_and_add(library, tmp_path, monkeypatch):
    """The negative control: the same source built with FMA contraction (what a default
    -O3 -march=native build of C does) must differ from the reference somewhere."""
    import subprocess

    cc = build.compiler()
    flags = [f for f in build.CFLAGS if f != "-ffp-contract=off"]
    fused = tmp_path / "fused.so"
    subprocess.run([cc, *flags, "-ffp-contract=fast", "-mavx2", "-mfma", str(build.SOURCE),
                    "-o", str(fused)], check=True)  # fmt: skip
    ok = [v for v in ("avx2", "scalar") if build.probe(library, v)]
    assert ok, "neither the avx2 nor the scalar variant runs here"
    fused_matmul_only = build.Kernel(ok[0], build.load_function(fused, ok[0]), fused)
    assert mismatches(fused_matmul_only), "an FMA-contracted group loop went unnoticed"
    found = mismatches(build.load_kernel(fused, ok[0]))
    assert any(case.startswith("gated") for case in found), found  # exp's polynomial fused
    assert not mismatches(build.load_kernel(library, ok[0]))


def test_auto_picks_the_fastest_working_variant_and_numpy_opts_out(working):
    assert working, "no compiled variant passed its probe on this CPU"
    assert ReferenceOps("auto").matmul_variant == working[0]
    assert ReferenceOps("numpy").kernel is None
    assert ReferenceOps("numpy").matmul_variant == "numpy"


def test_bad_choices_say_what_was_wrong(monkeypatch):
    monkeypatch.setenv(build.MATMUL_ENV, "avx9000")
    with pytest.raises(UnsupportedError) as info:
        build.select_kernel()
    assert str(info.value) == (
        "unknown CPU matmul 'avx9000' (from EXACTSERVE_CPU_MATMUL); choose auto, numpy or "
        "one of: avx512vnni, avx512, avx2, scalar"
    )


def test_without_a_compiler_auto_falls_back_and_a_named_variant_fails(
    monkeypatch, tmp_path, capsys
):
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    monkeypatch.setenv("PATH", str(tmp_path))  # no cc, gcc or clang either
    monkeypatch.setenv("EXACTSERVE_CACHE", str(tmp_path / "cache"))
    build.select_kernel.cache_clear()
    try:
        assert build.select_kernel("auto") is None
        assert "using the slower NumPy matmul: no C compiler" in capsys.readouterr().err
        with pytest.raises(UnsupportedError, match="no C compiler"):
            build.select_kernel("avx2")
    finally:
        build.select_kernel.cache_clear()


@pytest.mark.llama_cpp_data
@pytest.mark.parametrize("arch", ["llama", "qwen2", "qwen3", "gemma3"])
def test_whole_tiny_models_give_the_same_logits_with_either_matmul(arch, tiny_model, working):
    path = tiny_model(arch, T.Q4_K)
    logits = {}
    for choice in ("numpy", working[0]):
        model = load_model(path, cpu_matmul=choice)
        assert model.ops.matmul_variant == choice
        cache = model.new_cache()
        steps = [model.forward(cache, [1, 5, 9, 30, 2, 7, 11])]
        steps += [model.forward(cache, [t]) for t in (3, 8, 13)]
        logits[choice] = b"".join(s.tobytes() for s in steps)
    assert logits["numpy"] == logits[working[0]]
