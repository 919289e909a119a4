"""Evidence that puts a kind in doubt, and a listing that is no failure (round 9, test10).
Data and small helpers: classify.py and rules.py consult them.

- A client-error status (400/404/410/422, fixable: the call's arguments) says one thing, and
  the body another: an authentication exception class (litellm's `AuthenticationError` for a
  400 whose body says `API key not valid`), or words of a withdrawn resource (`This model is
  unavailable`, `... is no longer available` under a 404 or 410: the target is gone, not
  mistyped). Neither is more specific than the other: GUIDE.md's precedence 4, `ambiguous`.
- A "not found" whose list of the available choices is empty (`Skill "x" not found.
  Available skills are: `): no argument could have worked, yet the call named a missing
  item; the two disagree (`ambiguous`, not `fixable`).
- A text made of bare class names, one a line (a script listing exception classes), names
  errors but reports none: no failure.
"""

from __future__ import annotations

import re

from exactserve.toolerr.wide.agents import INTERNAL_ERROR
from exactserve.toolerr.wide.probes import Lexicon
from exactserve.toolerr.wide.tool_faults import ACCESS_WORDS

# Words of a refused credential that a client-error status (fixable) does not outweigh.
# (Narrow on purpose: `credential` alone also names what a malformed request was about.)
CREDENTIAL_WORDS = (
    "API key not valid",
    "nvalid API key",
    "API_KEY_INVALID",
    "ncorrect API key",
    "uthentication failed",
    "not have permission",
    "ot authorized to",
)
# Words of a target that is withdrawn or not offered (a model, a plan's feature), which a
# 404 or 410 alone would read as a mistyped argument.
WITHDRAWN_WORDS = ("no longer available", "is unavailable", "is not available")
# (looked up through their rarest characters: toolerr.wide.probes)
DOUBT_WORDS = Lexicon(CREDENTIAL_WORDS + WITHDRAWN_WORDS + ACCESS_WORDS)

# The fixable words of a missing item, which an empty list of choices contradicts.
MISSING_WORDS = (" not found", "nknown tool")
# An empty list of what is available: nothing after it to the end of the text (`Available
# skills are: `), or an empty list or `none` ending its line (`Available tools: []`).
EMPTY_CHOICES = re.compile(
    r"[Aa]vailable [a-z][a-z _-]{0,40}?(?: are| is)?:[ \t]*"
    r"(?:(?:\[\]|\(none\)|none\b)[ \t.]*(?:\n|$)|\s*\Z)"
)

# A bare class name alone on its line (`ConnectTimeoutError`, `botocore.exceptions.X`).
BARE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]{0,120}")
NAME_LIST_LINES = 3  # the least number of such lines that makes a listing


def client_error_doubt(text: str, exception: tuple[str, str] | None) -> str | None:
    """Evidence in `text` that disagrees with a client-error status (one that alone would be
    fixable), quoted, or None. `exception` is the (kind, evidence) of the text's exception
    class, if any."""
    if exception is not None and exception[0] == "unrecoverable":
        return exception[1]
    if "6" in text and INTERNAL_ERROR in text and "://" not in text:
        # a server's own request failed, and the text shows no URL the call could have
        # chosen: the route may be the server's configuration's (round 10)
        return "a JSON-RPC internal error with no URL"
    word = DOUBT_WORDS.first(text)
    return None if word is None else f"words {word!r}"


def empty_choices(text: str) -> bool:
    """Whether `text` names an empty list of the available choices."""
    return "vailable " in text and EMPTY_CHOICES.search(text) is not None


def names_only(first_lines: list[str], last: str) -> bool:
    """Whether the first lines and the last line (at least three names, blank lines aside)
    are each one bare name: a listing of classes, not a report."""
    lines = [line.rstrip() for line in (*first_lines, last)]
    names = [line for line in lines if line]  # (blank lines between names aside)
    return len(names) > NAME_LIST_LINES and all(BARE_NAME.fullmatch(line) for line in names)
