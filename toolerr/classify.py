"""Classify a detected failure as unrecoverable, transient, fixable or ambiguous.

Substring tests on the first 4,096 characters of the tool's text, kinds tried in the order
unrecoverable, transient, fixable; the first kind with a matching word wins. Matching is
case-sensitive; some words omit their first letter so both capitalisations match. The common
words apply to every rule; the wider words only to the `generic` and `mcp-iserror` rules,
whose texts come from arbitrary libraries rather than a known agent's own formats.
"""

from __future__ import annotations

CLASSIFY_CHARS = 4096

# The order the kinds are tried in.
ORDER = ("unrecoverable", "transient", "fixable")

COMMON_WORDS: dict[str, tuple[str, ...]] = {
    "unrecoverable": (
        "EACCES",
        "EPERM",
        "ermission denied",
        "Access is denied",
        "ead-only",
        "Unable to write",
        "Forbidden",
    ),
    "transient": (
        "ECONNRESET",
        "ECONNREFUSED",
        "ETIMEDOUT",
        "EAI_AGAIN",
        "Too Many Requests",
        "ate limit",
        "Service Unavailable",
        "Gateway Timeout",
        "emporarily unavailable",
    ),
    "fixable": (
        "must not be empty",
        "cannot be empty",
        "has not been read",
        "No replacement performed",
        "Invalid insert_line",
        "was omitted",
        "did not match",
        "not unique",
        "verification failed",
        "Invalid arguments",
        "Invalid parameters",
    ),
}

WIDER_WORDS: dict[str, tuple[str, ...]] = {
    "unrecoverable": (
        "Unauthorized",
        "PERMISSION_DENIED",
        "UNAUTHENTICATED",
        "ccess denied",
        "ot authorized to",
        "ncorrect API key",
        "nvalid API key",
    ),
    "transient": (
        "timed out",
        "TimeoutError",
        "ReadTimeout",
        "ConnectTimeout",
        "WriteTimeout",
        "PoolTimeout",
        "socket.timeout",
        "Request Timeout",
        "DEADLINE_EXCEEDED",
        "UNAVAILABLE",
        "RESOURCE_EXHAUSTED",
        "onnection reset",
        "onnection refused",
        "onnection aborted",
        "Bad Gateway",
        "Internal Server Error",
        "socket hang up",
        "fetch failed",
        "Max retries exceeded",
    ),
    "fixable": (
        "unexpected keyword argument",
        "required positional argument",
        "positional arguments but",
        "nvalid params",
        "INVALID_ARGUMENT",
        "Bad Request",
        "Unprocessable",
        "validation error",
        "is a required property",
        "is not of type",
        "dditional properties are not allowed",
        "is not a valid tool",
        "nknown tool",
        "ethod not found",
        "-32601",
        "-32602",
    ),
}

# Rules whose texts may use the wider words.
WIDER_RULES = frozenset({"generic", "mcp-iserror"})

# A command's own timeout: a text containing one of these is never made transient by the
# wider words (it would be by "timed out"), only by the common ones.
COMMAND_TIMEOUT_WORDS = ("ommand timed out", "ommand timeout", "xecution timed out")


def classify(text: str, rule: str) -> str:
    """The kind of a failure whose tool text is `text`, detected by `rule`."""
    head = text[:CLASSIFY_CHARS]
    use_wider = rule in WIDER_RULES
    is_command_timeout = any(word in head for word in COMMAND_TIMEOUT_WORDS)
    for kind in ORDER:
        words = COMMON_WORDS[kind]
        if use_wider and not (kind == "transient" and is_command_timeout):
            words = words + WIDER_WORDS[kind]
        if any(word in head for word in words):
            return kind
    return "ambiguous"
