"""`exactserve check`: every row passes on a tiny model (quick form, as CI can afford), a
planted failure fails its row and the exit status, the negative control is shown as
detected, and digests compare across "machines" (files)."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from gguf import GGMLQuantizationType as T

import exactserve.runtime.conformance as conformance
from exactserve.runtime.model import load_model
from exactserve.server.cli import main

pytestmark = pytest.mark.llama_cpp_data


@pytest.fixture(scope="module")
def gemma(tiny_model):
    return tiny_model("gemma3", T.Q8_0)


def test_quick_check_passes_every_row_and_shows_the_control_detected(gemma, capsys):
    assert main(["check", str(gemma), "--quick"]) == 0
    out = capsys.readouterr().out
    for name in (
        "batch invariance",
        "chunked prefill",
        "prefix cache",
        "speculative decoding",
        "CPU matmul",
        "backends",
    ):
        assert f"{name}" in out
    assert "negative control" in out and "PASS (detected)" in out
    assert "all properties hold" in out and "FAIL" not in out


def test_json_output_and_a_planted_failure_exit_1(gemma, capsys, monkeypatch):
    def broken_chunks(model, needle, sizes):
        rows, _ = conformance._alone(model, needle)
        planted = rows.copy()
        planted[3, 7] = planted[3, 7] * 1.0000001  # one value, a few ulp
        conformance.same_bits(rows, planted, "chunks of 7")
        return "unreachable"

    monkeypatch.setattr(conformance, "check_chunks", broken_chunks)
    assert main(["check", str(gemma), "--quick", "--json"]) == 1
    results = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert results["chunked prefill"]["passed"] is False
    assert "chunks of 7: 1 values differ, first at (3, 7)" in results["chunked prefill"]["detail"]
    assert results["batch invariance"]["passed"] is True


def test_the_cpu_matmul_row_compares_the_compiled_path_with_numpys(gemma, monkeypatch):
    compiled, numpy_path = load_model(gemma), load_model(gemma, cpu_matmul="numpy")
    if compiled.ops.kernel is None:
        pytest.skip("no compiled CPU matmul runs here")
    tokens = [5, 17, 300, 42, 7]
    assert conformance.check_cpu_matmul(compiled, numpy_path, tokens) == (
        f"5-token prefill + decode, {compiled.ops.matmul_variant} vs numpy"
    )
    monkeypatch.setenv("EXACTSERVE_WEIGHT_CACHE", "0")  # a private, writable conversion
    broken = load_model(gemma)  # one scale of the output matrix one ulp up: one logit moves
    scale = broken.weights.output.scale
    scale[0, 0, 3] = np.nextafter(scale[0, 0, 3], np.float32(np.inf))
    with pytest.raises(conformance.Mismatch, match="prefill, .* vs numpy"):
        conformance.check_cpu_matmul(broken, numpy_path, tokens)


def test_a_batch_dependent_model_fails_batch_invariance(gemma):
    model = load_model(gemma)
    planted = conformance._PlantedBatchDependence(model)
    needle = [5, 17, 300, 42, 7, 9, 11, 80]
    with pytest.raises(conformance.Mismatch, match="among 1 others"):
        conformance.check_batch(planted, needle, [1], random.Random(0))
    assert "needle of 8 tokens" in conformance.check_batch(model, needle, [1, 2], random.Random(0))


def test_digest_against_itself_passes_and_a_changed_digest_fails(gemma, tmp_path, capsys):
    assert main(["check", str(gemma), "--digest"]) == 0
    digest = json.loads(capsys.readouterr().out)
    assert digest["backend"] == "reference" and len(digest["digest"]) == 64
    saved = tmp_path / "there.json"
    saved.write_text(json.dumps(digest))
    assert main(["check", str(gemma), "--against", str(saved)]) == 0
    assert "digest PASS" in capsys.readouterr().out
    saved.write_text(json.dumps({**digest, "digest": "0" * 64}))
    assert main(["check", str(gemma), "--against", str(saved)]) == 1
    assert "the logits differ" in capsys.readouterr().out
    saved.write_text(json.dumps({**digest, "model_sha256": "f" * 64}))
    assert main(["check", str(gemma), "--against", str(saved)]) == 1
    assert "model_sha256 differs" in capsys.readouterr().out


def test_bad_input_exits_2(gemma, tmp_path, capsys):
    assert main(["check", "/no/such.gguf"]) == 2
    junk = tmp_path / "junk.json"
    junk.write_text("not json")
    assert main(["check", str(gemma), "--against", str(junk)]) == 2
    assert "not a digest written by --digest" in capsys.readouterr().err
