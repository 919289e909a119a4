"""Parsed tool calls, the parser's events, call ids, and reading a decoded JSON object as a
call.

A call's `arguments` is the compact JSON text of the arguments object the model wrote:
`json.dumps(obj, ensure_ascii=False, separators=(",", ":"))`, keys in the model's order.
The same object always gives the same text, so replays are byte-identical.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

ARGUMENT_KEYS = ("arguments", "parameters")


@dataclass(frozen=True)
class ParsedCall:
    """One tool call the model wrote: the tool's name and its arguments as compact JSON
    object text."""

    name: str
    arguments: str


@dataclass(frozen=True)
class TextEvent:
    """Plain output text, to show the client as content."""

    text: str


@dataclass(frozen=True)
class CallEvent:
    """A complete tool call."""

    call: ParsedCall


Event = TextEvent | CallEvent


def call_id(request_id: str, index: int, prefix: str = "call_") -> str:
    """The id of the `index`-th call (from 0) of a request's response: `prefix` and the first
    24 hex digits of SHA-256 over the request id, a NUL and the index. Deterministic, so a
    replayed request gets the same ids (Anthropic clients may pass prefix "toolu_")."""
    digest = hashlib.sha256(f"{request_id}\0{index}".encode()).hexdigest()
    return prefix + digest[:24]


def compact_json(value: Any) -> str:
    """`value` as compact JSON text (no spaces, UTF-8 kept as is)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def decode_json(text: str) -> Any:
    """The JSON value of `text`, or None when it is not JSON. NaN and Infinity are refused;
    raw control characters inside strings are accepted (models write raw newlines)."""
    try:
        return json.loads(text, strict=False, parse_constant=_reject_constant)
    except (ValueError, RecursionError):
        return None


def call_from_object(
    obj: Any, tool_names: Collection[str], *, allow_type: bool = False
) -> ParsedCall | None:
    """`obj` read as one call, or None when it is not one.

    A call is an object with exactly a "name" (a string in `tool_names`) and an arguments
    key, "arguments" or "parameters", whose value is a JSON object or a string holding one
    (some models encode it twice). `allow_type` also admits `"type": "function"` (Llama 3
    writes it).
    """
    if not isinstance(obj, dict):
        return None
    keys = set(obj)
    if allow_type and "type" in keys:
        if obj["type"] != "function":
            return None
        keys.discard("type")
    argument_keys = keys & set(ARGUMENT_KEYS)
    if len(argument_keys) != 1 or keys != {"name"} | argument_keys:
        return None
    name = obj["name"]
    if not isinstance(name, str) or name not in tool_names:
        return None
    arguments = obj[argument_keys.pop()]
    if isinstance(arguments, str):
        arguments = decode_json(arguments)
    if not isinstance(arguments, dict):
        return None
    return ParsedCall(name, compact_json(arguments))
