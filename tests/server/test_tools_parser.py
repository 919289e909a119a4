"""server.tools: reading tool calls out of model output, whole and streamed."""

from __future__ import annotations

import json
import random

import pytest

from exactserve.server.tools import (
    CallEvent,
    ParsedCall,
    TextEvent,
    ToolCallParser,
    ToolChoice,
    ToolFormat,
    parse_tool_calls,
)

NAMES = ("get_weather", "search")
HERMES, LLAMA3, GENERIC = ToolFormat("hermes"), ToolFormat("llama3"), ToolFormat("generic")
PARIS = ParsedCall("get_weather", '{"city":"Paris"}')
LYON = ParsedCall("get_weather", '{"city":"Lyon"}')

# Arguments with nesting, braces, quotes, escapes and a closing tag inside strings.
TRICKY_ARGS = (
    '{"query": "a {b} </tool_call> \\"q\\" }", "filters": {"tags": ["x", {"y": [1, 2.5e3, '
    'null, true, false, -0.5]}]}, "path": "C:\\\\tmp\\\\"}'
)
TRICKY = ParsedCall("search", json.dumps(json.loads(TRICKY_ARGS), separators=(",", ":")))
UNICODE = ParsedCall("get_weather", '{"city":"Zürich 東京 🌧","note":"é\\n"}')


def _hermes(name: str, arguments: str) -> str:
    return f'<tool_call>\n{{"name": "{name}", "arguments": {arguments}}}\n</tool_call>'


def _parse(fmt: ToolFormat, text: str, prefix: str = "") -> tuple[str, list[ParsedCall]]:
    return parse_tool_calls(fmt, text, NAMES, prefix)


# (format, output, expected content, expected calls): outputs shaped as the models write them.
CALLS = [
    (HERMES, _hermes("get_weather", '{"city": "Paris"}'), "", [PARIS]),
    (
        HERMES,
        _hermes("get_weather", '{"city": "Paris"}')
        + "\n"
        + _hermes("get_weather", '{"city": "Lyon"}'),
        "",
        [PARIS, LYON],
    ),
    (
        HERMES,
        "I'll check the weather.\n\n" + _hermes("get_weather", '{"city": "Paris"}'),
        "I'll check the weather.",
        [PARIS],
    ),
    (
        HERMES,
        "<think>\nThe user wants weather.\n</think>\n\n"
        + _hermes("get_weather", '{"city": "Paris"}'),
        "<think>\nThe user wants weather.\n</think>",
        [PARIS],
    ),
    (HERMES, _hermes("search", TRICKY_ARGS), "", [TRICKY]),
    (HERMES, _hermes("get_weather", '{"city": "Zürich 東京 🌧", "note": "é\\n"}'), "", [UNICODE]),
    (
        HERMES,
        _hermes("get_weather", '"{\\"city\\": \\"Paris\\"}"'),  # arguments encoded twice
        "",
        [PARIS],
    ),
    (
        HERMES,
        '<tool_call>{"arguments":{"city":"Paris"},"name":"get_weather"}</tool_call>\nDone.',
        "Done.",
        [ParsedCall("get_weather", '{"city":"Paris"}')],
    ),
    (HERMES, _hermes("get_weather", '{"city": "Paris"}') + "\n\n", "", [PARIS]),
    (LLAMA3, '{"name": "get_weather", "parameters": {"city": "Paris"}}', "", [PARIS]),
    (LLAMA3, '<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}', "", [PARIS]),
    (LLAMA3, '{"name": "get_weather", "arguments": {"city": "Paris"}}', "", [PARIS]),
    (
        LLAMA3,
        '{"type": "function", "name": "get_weather", "parameters": {"city": "Paris"}}',
        "",
        [PARIS],
    ),
    (
        LLAMA3,
        '{"name": "get_weather", "parameters": {"city": "Paris"}}; '
        '{"name": "get_weather", "parameters": {"city": "Lyon"}}',
        "",
        [PARIS, LYON],
    ),
    (
        LLAMA3,
        'Let me look that up.\n{"name": "search", "parameters": ' + TRICKY_ARGS + "}",
        "Let me look that up.",
        [TRICKY],
    ),
    (
        LLAMA3,
        'Checking. <|python_tag|>{"name": "get_weather", "parameters": {"city": "Zürich 東京 🌧", '
        '"note": "é\\n"}}',
        "Checking.",
        [UNICODE],
    ),
    (
        GENERIC,
        '{"tool_call": {"name": "get_weather", "arguments": {"city": "Paris"}}}',
        "",
        [PARIS],
    ),
    (
        GENERIC,
        '\n  {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}, '
        '{"name": "get_weather", "arguments": {"city": "Lyon"}}]}\n',
        "",
        [PARIS, LYON],
    ),
    (
        GENERIC,
        'Let me search.\n{"tool_call": {"name": "search", "arguments": ' + TRICKY_ARGS + "}}",
        "Let me search.",
        [TRICKY],
    ),
    (
        GENERIC,
        '{"tool_call": {"name": "get_weather", "arguments": {"city": "Zürich 東京 🌧", "note": '
        '"é\\n"}}}',
        "",
        [UNICODE],
    ),
]

# Output that is not a call comes out as text, verbatim.
FALLBACKS = [
    (HERMES, ""),
    (HERMES, "Plain answer with a < sign, <b>tags</b> and {braces}."),
    (HERMES, "Write calls inside <tool_call></tool_call> tags."),
    (HERMES, '<tool_call>\n{"name": "get_weather", "arguments": {"city": Paris}}\n</tool_call>'),
    (HERMES, '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}\n</tool_call>'),
    (HERMES, _hermes("get_time", '{"zone": "UTC"}')),  # unknown tool
    (HERMES, _hermes("get_weather", '["Paris"]')),  # arguments not an object
    (HERMES, _hermes("get_weather", '"not json"')),
    (HERMES, _hermes("get_weather", '{"t": NaN}')),
    (HERMES, '<tool_call>\n{"name": "get_weather", "arguments": {}, "id": 1}\n</tool_call>'),
    (HERMES, '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Pa'),  # unterminated
    (HERMES, '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}'),  # no close
    (HERMES, '<tool_call>\n{"name": "get_weather", "arguments": {}}\n</tool_ca'),
    (HERMES, '<tool_call>\n{"name": "get_weather", "arguments": {}} trailing</tool_call>'),
    (HERMES, "<tool_call>\nget_weather(city='Paris')\n</tool_call>"),
    (LLAMA3, '{"answer": 42, "unit": "km"}'),
    (LLAMA3, '{"name": "get_time", "parameters": {}}'),
    (LLAMA3, '{"type": "object", "name": "get_weather", "parameters": {}}'),
    (LLAMA3, 'Call it as {"name": "get_weather", "parameters": {"city": "Paris"}} please.'),
    (LLAMA3, '<|python_tag|>brave_search.call(query="weather in Paris")'),
    (LLAMA3, '{"name": "get_weather", "parameters": {"city": "Paris"'),
    (LLAMA3, "a; b; {c}"),
    (GENERIC, '{"response": "Hello!"}'),
    (GENERIC, '{"tool_calls": []}'),
    (GENERIC, '{"tool_call": {"name": "get_weather", "arguments": {}}, "extra": 1}'),
    (GENERIC, '{"tool_call": {"name": "get_time", "arguments": {}}}'),
    (GENERIC, '{"tool_call": {"name": "get_weather", "parameters": {}, "id": "x"}}'),
    (GENERIC, 'Sure: {"tool_call": {"name": "get_weather", "arguments": {}}}'),
    (GENERIC, '{"tool_calls": [{"name": "get_weather", "arguments": {}}, {"name": "x"}]}'),
    (GENERIC, '{"tool_call": {"name": "get_weather", "arguments": {'),
]


@pytest.mark.parametrize(("fmt", "text", "content", "calls"), CALLS)
def test_real_shaped_outputs_parse(fmt, text, content, calls) -> None:
    assert _parse(fmt, text) == (content, calls)


@pytest.mark.parametrize(("fmt", "text"), FALLBACKS)
def test_what_is_not_a_call_stays_text_verbatim(fmt, text) -> None:
    assert _parse(fmt, text) == (text, [])


def test_a_broken_block_does_not_hide_the_call_after_it() -> None:
    broken = '<tool_call>\n{"name": <tool_call>\n'
    text = broken + '{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
    assert _parse(HERMES, text) == ('<tool_call>\n{"name":', [PARIS])
    text = _hermes("get_time", "{}") + "\n" + _hermes("get_weather", '{"city": "Paris"}')
    assert _parse(HERMES, text) == (_hermes("get_time", "{}"), [PARIS])


def test_text_after_calls_is_kept_without_the_white_space_around_them() -> None:
    text = "Checking.\n" + _hermes("get_weather", '{"city": "Paris"}') + "\n\nIt is sunny.\n"
    assert _parse(HERMES, text) == ("Checking.It is sunny.\n", [PARIS])


def _stream(fmt, pieces, prefix=""):
    parser = ToolCallParser(fmt, NAMES, prefix)
    return [parser.feed(piece) for piece in pieces] + [parser.finish()]


def test_text_is_emitted_at_once_and_calls_as_soon_as_complete() -> None:
    steps = _stream(
        HERMES,
        ["Let me check", ".\n<tool", '_call>\n{"name": "get_weather", ', '"arguments": {"city": ']
        + ['"Paris"}}\n</tool_call', ">", "\nDone", "."],
    )
    assert steps == [
        [TextEvent("Let me check")],
        [TextEvent(".")],
        [],
        [],
        [],
        [CallEvent(PARIS)],
        [TextEvent("Done")],
        [TextEvent(".")],
        [],
    ]


def test_llama3_and_generic_calls_come_out_before_finish() -> None:
    one = '{"name": "get_weather", "parameters": {"city": "Paris"}}'
    assert _stream(LLAMA3, [one[:-1], one[-1:] + ";", " " + one]) == [
        [],
        [CallEvent(PARIS)],
        [CallEvent(PARIS)],
        [],
    ]
    text = '{"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}, '
    text += '{"name": "get_weather", "arguments": {"city": "Lyon"}}]}'
    assert _stream(GENERIC, [text[:-1], text[-1:]]) == [[], [CallEvent(PARIS), CallEvent(LYON)], []]


def test_only_a_possible_call_is_held_back() -> None:
    assert _stream(HERMES, ["a <b", "r> c"]) == [[TextEvent("a <b")], [TextEvent("r> c")], []]
    assert _stream(HERMES, ["a <tool_", "cal> c"]) == [
        [TextEvent("a")],
        [TextEvent(" <tool_cal> c")],
        [],
    ]
    assert _stream(LLAMA3, ['x {"name"', ": 1}"]) == [
        [TextEvent('x {"name"')],
        [TextEvent(": 1}")],
        [],
    ]
    assert _stream(GENERIC, ['{"answer"', ": 1}"]) == [
        [TextEvent('{"answer"')],
        [TextEvent(": 1}")],
        [],
    ]
    assert _stream(HERMES, ["Hi ", "\n"]) == [[TextEvent("Hi")], [], [TextEvent(" \n")]]


def test_feeding_after_finish_is_an_error() -> None:
    parser = ToolCallParser(HERMES, NAMES)
    parser.finish()
    with pytest.raises(RuntimeError, match="feed after finish"):
        parser.feed("x")
    with pytest.raises(RuntimeError, match="finish called twice"):
        parser.finish()


# --- forced prefixes -----------------------------------------------------------------------

REQUIRED, NAMED, AUTO = (
    ToolChoice("required"),
    ToolChoice("named", "get_weather"),
    ToolChoice("auto"),
)


@pytest.mark.parametrize(
    ("fmt", "required", "named"),
    [
        (HERMES, '<tool_call>\n{"name": "', '<tool_call>\n{"name": "get_weather", "arguments": '),
        (LLAMA3, '{"name": "', '{"name": "get_weather", "parameters": '),
        (
            GENERIC,
            '{"tool_call": {"name": "',
            '{"tool_call": {"name": "get_weather", "arguments": ',
        ),
    ],
)
def test_forced_prefixes(fmt, required, named) -> None:
    assert fmt.forced_prefix(REQUIRED) == required
    assert fmt.forced_prefix(NAMED) == named
    assert fmt.forced_prefix(AUTO) == fmt.forced_prefix(ToolChoice("none")) == ""


@pytest.mark.parametrize(
    ("fmt", "after_required", "after_named"),
    [
        (
            HERMES,
            'get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
            '{"city": "Paris"}}\n</tool_call>',
        ),
        (LLAMA3, 'get_weather", "parameters": {"city": "Paris"}}', '{"city": "Paris"}}'),
        (GENERIC, 'get_weather", "arguments": {"city": "Paris"}}}', '{"city": "Paris"}}}'),
    ],
)
def test_forced_prefixes_produce_calls(fmt, after_required, after_named) -> None:
    assert _parse(fmt, after_required, fmt.forced_prefix(REQUIRED)) == ("", [PARIS])
    assert _parse(fmt, after_named, fmt.forced_prefix(NAMED)) == ("", [PARIS])
    pieces = [after_named[i : i + 3] for i in range(0, len(after_named), 3)]
    events = [e for step in _stream(fmt, pieces, fmt.forced_prefix(NAMED)) for e in step]
    assert events == [CallEvent(PARIS)]


@pytest.mark.parametrize("fmt", [HERMES, LLAMA3, GENERIC])
def test_a_forced_prefix_is_never_text(fmt) -> None:
    assert _parse(fmt, "Sorry, I cannot.", fmt.forced_prefix(NAMED)) == ("Sorry, I cannot.", [])
    assert _parse(fmt, "", fmt.forced_prefix(REQUIRED)) == ("", [])
    assert _parse(fmt, 'nowhere", "arguments": {}}', fmt.forced_prefix(REQUIRED)) == (
        'nowhere", "arguments": {}}',
        [],
    )


# --- streaming equals whole-text parsing ---------------------------------------------------

SAMPLES = [(fmt, text) for fmt, text, _, _ in CALLS] + FALLBACKS
PIECES = {
    "hermes": ["<tool_call>", "</tool_call>", "<tool_", "</tool", "<"]
    + 3 * [_hermes("get_weather", '{"city": "Paris"}'), _hermes("search", TRICKY_ARGS)],
    "llama3": ["<|python_tag|>", "<|python", ";", ";\n"]
    + 3 * ['{"name": "get_weather", "parameters": {"city": "Paris"}}', "; "],
    "generic": ['{"tool_call": ', '{"tool_calls": [', "]}"]
    + 3 * ['{"tool_call": {"name": "get_weather", "arguments": {"city": "Paris"}}}'],
}
COMMON = ['{"name": "get_weather", ', '"arguments": {"city": "Paris"}}', '"parameters": {}}']
COMMON += ["{", "}", '"', "\\", " ", "\n", "x", "é", '"a}"', "🌧"]


def _chunked(text: str, rng: random.Random) -> list[str]:
    cuts = rng.sample(range(1, len(text)), min(rng.randint(0, 12), len(text) - 1)) if text else []
    bounds = [0, *sorted(cuts), len(text)]
    return [text[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]


def _streamed(fmt, pieces, prefix=""):
    parser = ToolCallParser(fmt, NAMES, prefix)
    events = [e for piece in pieces for e in parser.feed(piece)] + parser.finish()
    text = "".join(e.text for e in events if isinstance(e, TextEvent))
    return text, [e.call for e in events if isinstance(e, CallEvent)]


@pytest.mark.parametrize(("fmt", "text"), SAMPLES)
def test_streaming_equals_whole_parse_on_real_outputs(fmt, text) -> None:
    whole = _parse(fmt, text)
    assert _streamed(fmt, list(text)) == whole  # one character at a time
    rng = random.Random(text)
    for _ in range(30):
        assert _streamed(fmt, _chunked(text, rng)) == whole


@pytest.mark.parametrize("seed", range(8))
def test_streaming_equals_whole_parse_on_fuzzed_outputs(seed) -> None:
    rng = random.Random(seed)
    for _ in range(150):
        fmt = rng.choice([HERMES, LLAMA3, GENERIC])
        alphabet = PIECES[fmt.family] + COMMON
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 16)))
        prefix = rng.choice(["", fmt.forced_prefix(REQUIRED), fmt.forced_prefix(NAMED)])
        whole = _parse(fmt, text, prefix)
        assert _streamed(fmt, _chunked(text, rng), prefix) == whole, (fmt, text, prefix)
        if not whole[1] and not prefix:
            assert whole[0] == text  # no call: the output is the content, verbatim
