"""Classification of a wide failure: the kind of the evidence window, taken from the first
tier with evidence (the order is in rules.py's docstring and docs/TOOLERR.md); conflicting
evidence inside the deciding tier gives `ambiguous`.
"""

from __future__ import annotations

from exactserve.toolerr.wide import agents as a
from exactserve.toolerr.wide import general as g
from exactserve.toolerr.wide import programs as p
from exactserve.toolerr.wide import services as s
from exactserve.toolerr.wide import toolchains as t
from exactserve.toolerr.wide import words as w
from exactserve.toolerr.wide.conflicts import MISSING_WORDS, client_error_doubt, empty_choices
from exactserve.toolerr.wide.lexicons import (
    FIRST_TIER,
    FIRST_TIERS,
    FIXABLE_FAMILIES,
    FIXABLE_THEN_MARKERS,
    FIXABLE_WORDS,
    LATE_FIXABLE,
    OVER_STATUS,
    OVER_STATUS_KIND,
    RETRY_AFTER,
    SIXTH_KIND,
    SIXTH_TIER,
    STATUS_LOOKUPS,
    UNRECOVERABLE_WORDS,
)
from exactserve.toolerr.wide.lines import failed_verdict, quote
from exactserve.toolerr.wide.opinion import learned_kind
from exactserve.toolerr.wide.shapes import Shape
from exactserve.toolerr.wide.tool_faults import (
    HARNESS_BLOCK,
    SHARING,
    code_error_in_tool,
    only_lookup_answers,
)

# The evidence when no rule names a kind, and how it goes on when the learned opinion does
# (`no evidence of a kind; learned fixable at 0.98`).
NO_EVIDENCE = "no evidence of a kind"
# Unrecoverable conditions that explain a missing file or directory named after them.
EXPLAINS_MISSING = (*a.DISK_WORDS, t.DOCKER_API)
LEARNED = "; learned "


def classify_wide(text: str, shape: Shape | None = None) -> tuple[str, str]:
    """(kind, evidence) for a failure whose evidence window is `text`."""
    if text.startswith(HARNESS_BLOCK):  # the harness refuses the call's form and says how
        return "fixable", f"harness block {quote(HARNESS_BLOCK)}"
    seen: dict[str, bool] = {}  # markers scanned for, shared by the tiers' lookups
    word = FIRST_TIERS.first(text, seen)  # DENIAL, QUOTA, RATE_LIMIT, OWN_TIMEOUT in turn
    tier = FIRST_TIER.get(word)
    if tier == "denial":
        return "unrecoverable", f"denial {quote(word)}"
    if tier == "quota":
        retry = RETRY_AFTER.first(text)
        if retry is not None:
            return "ambiguous", f"quota {quote(word)} and {quote(retry)} disagree"
        if s.PER_MINUTE in text:  # a quota per minute: a rate limit as well (round 14)
            return "ambiguous", f"quota {quote(word)} per minute: a rate limit as well"
        return "unrecoverable", f"quota {quote(word)}"
    if tier == "rate":
        if word == s.RESOURCE_EXHAUSTED and any(oom in text for oom in s.OUT_OF_MEMORY):
            return "ambiguous", f"{quote(word)} of memory, not a rate limit"
        if s.TOO_LARGE in text:  # one request over the limit: a smaller one passes (round 14)
            return "fixable", f"message {quote(s.TOO_LARGE.strip())} over {quote(word)}"
        return "transient", f"rate limit {quote(word)}"
    if tier == "timeout":
        return "ambiguous", f"own timeout {quote(word)}"
    if shape is not None and shape.signal is not None:
        return "ambiguous", f"signal {shape.signal}"
    if shape is not None and shape.exit_code in a.SIGNAL_EXITS:
        return "ambiguous", f"exit {shape.exit_code}: killed by a signal"
    word = OVER_STATUS.first(text, seen)  # a service's message more specific than its status
    if word is not None:
        return OVER_STATUS_KIND[word], f"message {quote(word)}"
    statuses = _http_statuses(text, shape)
    if statuses and failed_verdict(text):
        statuses = []  # a failed test run's statuses are its tests' names and expectations
    if statuses:
        kinds = {_status_kind(s) for s in statuses}
        named = ",".join(str(s) for s in statuses)
        if kinds == {"fixable"}:  # the call's arguments, unless the body says otherwise
            # (an authentication class: its name holds `Auth`)
            exception = _exception_kind(text) if "Auth" in text else None
            doubt = client_error_doubt(text, exception)
            if doubt is not None:
                return "ambiguous", f"HTTP {named} and {doubt} disagree"
        if statuses == [403] and s.GITHUB in text and _bare_github_403(text):
            return "ambiguous", "HTTP 403 from GitHub, which also sends it for rate limits"
        if len(kinds) == 1:
            return kinds.pop(), f"HTTP {named}"
        return "ambiguous", f"HTTP {named} disagree"
    decided = _conditions(text, seen)
    if decided is not None:
        return decided
    decided = _exception_kind(text)
    if decided is not None:
        return decided
    bad = UNRECOVERABLE_WORDS.first(text, seen)
    if bad == SHARING and "404" in text:  # a page not shared, under a 404 the tiers did not read
        return "ambiguous", f"words {quote(bad)} and a 404 disagree"
    # the fixable words, then (only when none occurs) the tool families whose marker occurs
    found = FIXABLE_THEN_MARKERS.first_at(text, seen)
    fix, families = None, FIXABLE_FAMILIES[found - FIXABLE_WORDS.size :]
    if found < FIXABLE_WORDS.size:
        fix, families = FIXABLE_THEN_MARKERS.words[found], ()
    for marker, family in families:
        if fix is None and marker in text:
            fix = family.first(text)
    if bad is None and fix == " not found" and only_lookup_answers(text):
        return "ambiguous", f"words {quote(fix)} of a lookup's answer: a program not installed"
    if bad is None and fix in MISSING_WORDS and empty_choices(text):
        bad = "none available"  # a missing item, and nothing else to choose: they disagree
    if fix is None and s.AWS_CODE_MARK in text:  # AWS's `(ValidationError)`: the request
        fix = s.aws_validation(text)
    if fix is None and failed_verdict(text):
        fix = "failed tests"
    if fix is None and "error: " in text and w.COMPILER_ERROR.search(text):
        fix = "compiler error"
    head = text[: t.FINDING_HEAD]  # (findings are listed from the first lines on)
    if fix is None and t.LINT_FINDING.search(head):
        fix = "lint finding"
    if fix is None and ".go:" in head and t.GO_LOCATION.search(head):
        fix = "Go source location"
    if fix is None and "✖" in text and s.LINT_VERDICT.search(text):
        fix = "lint verdict"
    if fix is None and "]" in head and "ml:" in head and s.YAML_FINDING.search(head):
        fix = "lint finding"
    if fix is None:
        fix = LATE_FIXABLE.first(text, seen)
    if bad and fix:
        return "ambiguous", f"words {quote(bad)} and {quote(fix)} disagree"
    if bad:
        return "unrecoverable", f"words {quote(bad)}"
    if fix:
        return "fixable", f"words {quote(fix)}"
    return _service_kind(text) or _learned(text)


def _bare_github_403(text: str) -> bool:
    """Whether a 403 from GitHub comes with its reason phrase alone (`github request failed:
    403 Forbidden`) and no other word of a kind: GitHub sends 403 for its rate limits too
    (GUIDE.md), so the status alone does not say which."""
    if "ccess" in text or "ermission" in text or s.BARE_403.search(text) is None:
        return False  # a refusal that says what was refused, or a status with a message
    said = "\n".join(line for line in text.split("\n") if "403 Forbidden" in line)
    return set(UNRECOVERABLE_WORDS.present(said)) <= {"Forbidden"}  # (on the status's lines)


def _learned(text: str) -> tuple[str, str]:
    """The last tier: the learned opinion (opinion.py) when it is confident."""
    learned = learned_kind(text)
    if learned is None:
        return "ambiguous", NO_EVIDENCE
    kind, probability = learned
    return kind, f"{NO_EVIDENCE}{LEARNED}{kind} at {probability:.2f}"


def _exception_kind(text: str) -> tuple[str, str] | None:
    """The kind of the last exception class named on a report line (or, when none is
    named there, in the middle of a line): the known classes, then the words of the
    class's own name. (Every class named ends in `Error`, `Exception` or `Timeout`, or
    follows a `::`: a text with none of them names none, and costs four scans at most.)"""
    if not ("Error" in text or "Exception" in text or "Timeout" in text or "::" in text):
        return None
    names = [a or b for a, b in w.EXCEPTION_NAME.findall(text)] or g.classes_mid_line(text)
    if not names:
        return None
    name = names[-1]
    if code_error_in_tool(text, name):  # the tool's own code or schema, or the call
        return "ambiguous", f"exception {name} inside a tool's run"
    if name in w.EXCEPTION_KIND:
        return w.EXCEPTION_KIND[name], f"exception {name}"
    kind = g.class_kind(name)
    return (kind, f"exception class {name}") if kind else None


def _service_kind(text: str) -> tuple[str, str] | None:
    """The kind of a class that a service or package named, by the words of its name, when
    no other evidence gave one (the client's class, `ClientError`, says nothing): AWS's `An
    error occurred (ValidationException) when calling ...`, Azure's `(AuthorizationFailed)
    ...`, a package's `hvac.exceptions.InvalidRequest: ...`."""
    name = s.service_class(text)
    kind = g.class_kind(name) if name else None
    return (kind, f"exception class {name}") if kind else None


def _http_statuses(text: str, shape: Shape | None) -> list[int]:
    scope = text[: w.HTTP_SCOPE]
    found = set()
    if "4" in scope or "5" in scope:  # every status is 4xx or 5xx: most texts hold neither digit
        found = {
            int(status)
            for gate, pattern in STATUS_LOOKUPS
            if gate in scope
            for status in pattern.findall(scope)
        }
    if shape is not None and shape.html_status is not None:
        found.add(shape.html_status)
    if shape is not None and shape.json_status is not None:
        found.add(shape.json_status)
    return sorted(found)[:4]


def _status_kind(status: int) -> str:
    if status in (401, 402, 403, 407):  # 402: Payment Required; 407: proxy credentials
        return "unrecoverable"
    if status in (400, 404, 405, 409, 410, 422):
        return "fixable"
    if status in (408, 425, 429, 502, 503, 504, 529):  # 529: Anthropic's "Overloaded"
        return "transient"
    return "ambiguous"


def _conditions(text: str, seen: dict[str, bool] | None = None) -> tuple[str, str] | None:
    kinds: dict[str, str] = {}
    unsure = None
    permission = decided = False
    for index in SIXTH_TIER.present_at(text, seen):  # CONDITIONS, UNSURE_NETWORK, PERMISSION
        word, kind = SIXTH_TIER.words[index], SIXTH_KIND[index]
        if kind == "unsure":
            unsure = unsure or word
        elif kind == "permission":
            permission = True
        else:
            kinds.setdefault(kind, word)
            # ssh's methods and a database's privileges: the permission is decided
            decided = decided or word.startswith(("Permission denied (", "permission denied for "))
    # Google's canonical status beside it (round 16): the caller's identity lacks the
    # permission, which its unrecoverable word says (tier 8)
    decided = decided or (permission and p.PERMISSION_DENIED in text)
    if permission and not decided:
        if w.RELATIVE_EXEC.search(text):
            kinds.setdefault("fixable", "./... Permission denied")
        elif w.SYSTEM_PATH.search(text):
            kinds.setdefault("unrecoverable", "Permission denied on a system path")
        else:
            unsure = unsure or "Permission denied"
    if kinds.keys() == {"unrecoverable", "fixable"} and kinds["unrecoverable"] in EXPLAINS_MISSING:
        # a full or read-only disk, then the files it could not write; Docker's engine not
        # reachable, then its socket or pipe not found (round 15)
        del kinds["fixable"]
    if kinds.get("unrecoverable") == "ENOSPC" and s.WATCHER_LIMIT in text:
        unsure = unsure or f"{kinds.pop('unrecoverable')} of the file watchers' limit"
    # (each substring scan behind a `memchr` of its rarest character: most texts lack it)
    if "fixable" in kinds and "6" in text and a.INTERNAL_ERROR in text:
        # a JSON-RPC internal error: the missing path may be the server's own, not the call's
        unsure = unsure or f"{kinds.pop('fixable')} in an internal error"
    if "fixable" in kinds and "/../" in text and s.BUILT_PATH.search(text):
        # a path that climbs out of a folder (`/srv/app/scripts/../output/x`): built by the
        # program from its own location, not chosen by the call
        unsure = unsure or f"{kinds.pop('fixable')} of a path the program built"
    if "transient" in kinds:
        if "k" in text and a.DNS_LOOKUP in text:  # a timeout of a DNS lookup: no passing fault
            unsure = unsure or f"{kinds.pop('transient')} in a DNS lookup"
        elif kinds["transient"] in a.RESET_WORDS and any(host in text for host in a.LOOPBACK):
            # a reset by a server on this machine (one the agent started): not a passing fault
            unsure = unsure or f"{kinds.pop('transient')} on a local address"
    if len(kinds) == 1 and unsure is None:
        kind, word = next(iter(kinds.items()))
        return kind, f"condition {quote(word)}"
    if kinds or unsure:
        named = [*kinds.values(), *([unsure] if unsure else [])]
        return "ambiguous", "conditions " + " and ".join(quote(n) for n in named)
    return None
