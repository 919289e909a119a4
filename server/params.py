"""Typed reads of request fields, each failure a RequestError (400) naming the field, and
the sampling and generation settings the three API families share.

JSON numbers arrive as int or float; booleans are never numbers here (Python's True == 1
would otherwise slip through). Absent and null mean "use the default" everywhere.
"""

from __future__ import annotations

import math

from exactserve.reference.sampling import SamplingParams
from exactserve.runtime.generate import MAX_TOP_LOGPROBS, GenerationConfig
from exactserve.toolerr.body import RequestError, json_type

MAX_N = 16
MAX_STOP = 16
SEED_RANGE = (-(2**63), 2**64)


def number(body: dict, key: str, default: float, lo: float, hi: float) -> float:
    value = body.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise RequestError(f"{key} must be a number, got {json_type(value)}", key)
    if not lo <= value <= hi:
        raise RequestError(f"{key} must be between {lo:g} and {hi:g}, got {value}", key)
    return float(value)


def integer(body: dict, key: str, default: int | None, lo: int, hi: int) -> int | None:
    value = body.get(key)
    if value is None:
        return default
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise RequestError(f"{key} must be an integer, got {json_type(value)}", key)
    if not lo <= value <= hi:
        raise RequestError(f"{key} must be between {lo} and {hi}, got {value}", key)
    return value


def boolean(body: dict, key: str, default: bool) -> bool:
    value = body.get(key)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise RequestError(f"{key} must be true or false, got {json_type(value)}", key)
    return value


def obj(body: dict, key: str) -> dict:
    value = body.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise RequestError(f"{key} must be an object, got {json_type(value)}", key)
    return value


def stop_strings(body: dict, key: str) -> tuple[str, ...]:
    value = body.get(key)
    if value is None:
        return ()
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(s, str) for s in items):
        raise RequestError(f"{key} must be a string or an array of strings", key)
    if len(items) > MAX_STOP:
        raise RequestError(f"{key} holds {len(items)} strings; at most {MAX_STOP}", key)
    if any(not s for s in items):
        raise RequestError(f"{key} must not contain an empty string", key)
    return tuple(items)


def seed(body: dict) -> int:
    """The sampling seed: the request's `seed` (negative values as their 64-bit two's
    complement), else 0, so a request without one is reproducible too."""
    value = integer(body, "seed", 0, SEED_RANGE[0], SEED_RANGE[1] - 1)
    return value % 2**64


def logit_bias(body: dict, n_vocab: int) -> tuple[tuple[int, float], ...]:
    """OpenAI's `logit_bias`: {"token id": bias in [-100, 100]}, ids below n_vocab."""
    value = obj(body, "logit_bias")
    out = []
    for key, bias in value.items():
        try:
            token = int(key)
        except ValueError:
            token = -1
        if not 0 <= token < n_vocab or str(token) != key.strip():
            raise RequestError(
                f"logit_bias key {key!r} is not a token id of this model (0..{n_vocab - 1})",
                "logit_bias",
            )
        if isinstance(bias, bool) or not isinstance(bias, (int, float)) or not -100 <= bias <= 100:
            raise RequestError(
                f"logit_bias[{key!r}] must be a number between -100 and 100, got {bias!r}",
                "logit_bias",
            )
        out.append((token, float(bias)))
    return tuple(sorted(out))


def sampling(body: dict, n_vocab: int, *, index: int = 0) -> SamplingParams:
    """SamplingParams from the fields OpenAI, Anthropic and llama-server share, with
    OpenAI's defaults (temperature 1, top_p 1, no top-k or min-p, no penalties). Choice
    `index` of an n > 1 request draws with seed + index (mod 2^64): its own stream."""
    top_k = integer(body, "top_k", 0, -1, 2**31 - 1)
    params = dict(
        temperature=number(body, "temperature", 1.0, 0.0, 100.0),
        top_p=number(body, "top_p", 1.0, 0.0, 1.0),
        top_k=max(top_k, 0),
        min_p=number(body, "min_p", 0.0, 0.0, 1.0),
        presence_penalty=number(body, "presence_penalty", 0.0, -2.0, 2.0),
        frequency_penalty=number(body, "frequency_penalty", 0.0, -2.0, 2.0),
        repeat_penalty=number(body, "repetition_penalty", 1.0, 1e-6, 100.0),
        penalty_last_n=integer(body, "repeat_last_n", 64, -1, 2**31 - 1),
        seed=(seed(body) + index) % 2**64,
        logit_bias=logit_bias(body, n_vocab),
    )
    if params["top_p"] == 0.0:
        raise RequestError("top_p must be greater than 0", "top_p")
    try:
        return SamplingParams(**params)
    except ValueError as exc:
        raise RequestError(f"invalid sampling parameters: {exc}") from exc


def generation_configs(
    body: dict,
    served,
    max_tokens: int,
    *,
    n: int = 1,
    stop: tuple[str, ...] = (),
    logprobs: int | None = None,
) -> list[GenerationConfig]:
    """One GenerationConfig per choice (choice i samples with seed + i), with the request's
    sampling fields, `ignore_eos`, and the server's speculative setting."""
    ignore_eos = boolean(body, "ignore_eos", False)
    return [
        GenerationConfig(
            max_tokens=max_tokens,
            sampling=sampling(body, served.n_vocab, index=i),
            stop=stop,
            ignore_eog=ignore_eos,
            logprobs=logprobs,
            speculative=served.speculative,
        )
        for i in range(n)
    ]


def choices(body: dict) -> int:
    return integer(body, "n", 1, 1, MAX_N)


def top_logprobs(body: dict, key: str = "top_logprobs") -> int:
    return integer(body, key, 0, 0, MAX_TOP_LOGPROBS)


def max_new_tokens(
    body: dict, keys: tuple[str, ...], n_prompt: int, context: int, *, minimum: int = 1
) -> int:
    """The first of `keys` present, checked against the context (400 naming both lengths
    when the prompt and the request do not fit); absent: the rest of the context."""
    room = context - n_prompt
    if room <= 0:
        raise RequestError(
            f"the prompt has {n_prompt} tokens but the context holds {context}; "
            "shorten the prompt or start the server with a larger --ctx-size",
            "messages",
        )
    for key in keys:
        if body.get(key) is not None:
            value = integer(body, key, None, minimum, 2**31 - 1)
            if value > room:
                raise RequestError(
                    f"{key} is {value} but the prompt has {n_prompt} tokens and the context "
                    f"holds {context}: at most {room} tokens can be generated",
                    key,
                )
            return value
    return room


def require_fields(body: dict, *keys: str) -> None:
    for key in keys:
        if key not in body or body[key] is None:
            raise RequestError(f"{key} is required", key)


def string_field(body: dict, key: str, default: str | None = None) -> str | None:
    value = body.get(key)
    if value is None:
        return default
    if not isinstance(value, str):
        raise RequestError(f"{key} must be a string, got {json_type(value)}", key)
    return value
