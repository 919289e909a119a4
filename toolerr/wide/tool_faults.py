"""Evidence that a failure lies with the tool or its environment rather than the call's
arguments (round 10: the general causes of test11's and test12's mistakes). Data and small
helpers: classify.py and rules.py consult them.

- A code error (`TypeError`, `AttributeError`, ...) raised while a client validated a tool or a
  server ran one (`Failed to validate tool x: TypeError: ...`, `Error executing function x:
  TypeError: compile() arg 1 must be ...`) is the tool's own code or schema failing, unless
  its message names the call's arguments (`got an unexpected keyword argument`, `missing 1
  required positional argument`): without them the text cannot tell the two apart.
- A lookup's answer that a program is absent (zsh's `which`: `composer not found`, one word
  and ` not found` on its line) says no program of that name is installed here, not that a
  command was mistyped: no fixable evidence.
- A JSON body's failed state (`{"status": "failed", ...}`) is a failure only when the body
  says something beside it (a string member: a message, a reason); a record of a test run
  (`{"status": "failed", "failedTests": [...]}`, read as a file) reports no failure of the
  call.
- Claude Code's harness refusal of a call's form (`<tool_use_error>Blocked: sleep 3 followed
  by: ...`) says how to make the call instead (run it in the background, a shorter sleep):
  fixable, whatever words its advice holds (`rate limiting` as a reason for a delay).
"""

from __future__ import annotations

import re

# The clients' and servers' prefixes of a tool's run or validation that failed.
TOOL_RUNS = ("Failed to validate tool ", "Error executing function ", "Error executing tool ")
# The code errors whose kind (fixable: the agent's own script) a tool's run puts in doubt.
CODE_ERRORS = frozenset(
    ("TypeError", "AttributeError", "NameError", "KeyError", "IndexError", "UnboundLocalError")
)
# Words of a code error that name the call's arguments (Python's and JavaScript's).
ARGUMENT_WORDS = ("argument", "parameter", "keyword")

# zsh's `which` answer for an absent program: one name and ` not found`, alone on its line.
WHICH_ANSWER = re.compile(r"[a-z][a-z0-9+._-]{0,40} not found")
WHICH_LINES = 6  # (a lookup's answer is short: only its first lines are read)

HARNESS_BLOCK = "<tool_use_error>Blocked: "

# Notion's answer for a page or database that exists but is not shared with the integration
# (`Could not find database with ID: x. Make sure the relevant pages and databases are shared
# with your integration.`; round 13): the user must share it, unrecoverable, and a text only a
# failure prints (a phrase, rules.py). With a 404 in the text, read as a status or not
# (`"status":404` in a body the SDK logged), the two disagree, as round 10 decided for the
# status (conflicts.client_error_doubt): ambiguous (classify.py).
SHARING = "Make sure the relevant pages and databases are shared with your integration"
# Words of a refused login or of rights the caller lacks, unrecoverable: the user must grant
# or supply them. A login refused (Snowflake's, databases' and hosts' `Incorrect username or
# password`); rights (Firestore's `Missing or insufficient permissions.`, Google's `Request
# had insufficient authentication scopes.`); PostgreSQL's privileges (`must be member of
# role "x"`, `must be owner of table x`); SQLite's `attempt to write a readonly database`.
UNRECOVERABLE_WORDS = (
    "ncorrect username or password",
    "insufficient permission",
    "nsufficient authentication scopes",
    "must be member of role",
    "must be owner of ",
    "readonly database",
    SHARING,
)
# PostgreSQL's refusal of a privilege (`ERROR:  permission denied for table users`): a
# database's grant, not a path (tier 6 gives it its kind, as ssh's refusals: not unsure).
PRIVILEGE_DENIED = tuple(
    ("permission denied for " + thing, "unrecoverable")
    for thing in ("table ", "schema ", "database ", "relation ", "sequence ", "function ")
)
# Words of a resource that exists but is not shared with the caller (Notion's `Make sure the
# relevant pages and databases are shared with your integration.`), which a 404 alone would
# read as a mistyped identifier.
ACCESS_WORDS = ("shared with your", "not shared with")


def code_error_in_tool(text: str, name: str) -> bool:
    """Whether `name`, a code error, was raised inside a tool's run or validation that
    `text` opens with, with no word of the call's arguments."""
    if name not in CODE_ERRORS or not text.startswith(TOOL_RUNS):
        return False
    return not any(word in text for word in ARGUMENT_WORDS)


def only_lookup_answers(text: str) -> bool:
    """Whether every line among the first that holds ` not found` is a lookup's answer
    (`php not found`) and one is."""
    lines = [line.strip() for line in text.split("\n", WHICH_LINES)[:WHICH_LINES]]
    missing = [line for line in lines if " not found" in line]
    return bool(missing) and all(WHICH_ANSWER.fullmatch(line) for line in missing)


def says_why(value: dict, key: str) -> bool:
    """Whether a JSON object says more than its failed state under `key`: another member
    holds a non-empty string."""
    return any(isinstance(v, str) and v for k, v in value.items() if k != key)
