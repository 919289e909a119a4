"""`exactserve toolerr FILE.json`: show what the tool-error layer sees in a request body and
the conversation the model would read under each form.

FILE is a request body of any of the three API shapes (`-` reads standard input). The shape
is guessed (see `toolerr.detect_api`) unless `--api` names it. `exactserve toolerr --eval
CORPUS.jsonl [--rules paper|wide]` instead measures a rule set on labelled tool results.
Also home of the layer's server options, shared with every command that carries the layer.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any, TextIO

from exactserve.toolerr.body import RequestError
from exactserve.toolerr.detect import RULES
from exactserve.toolerr.evaluate import evaluate, format_report, read_records
from exactserve.toolerr.forms import FORMS, Options
from exactserve.toolerr.messages import Message, text_of
from exactserve.toolerr.request import APIS, TOOL_ERRORS, detect_api, process, select_form

API_TITLES = {
    "chat": "OpenAI Chat Completions",
    "messages": "Anthropic Messages",
    "responses": "OpenAI Responses",
}


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "toolerr",
        help="print the tool-error layer's detections and each form's conversation",
        description=(
            "Read a chat request body (OpenAI Chat Completions, Anthropic Messages or "
            "OpenAI Responses), print each detected tool failure, then the conversation "
            "as the model would read it under each form (off, c1..c4). With --eval, measure "
            "the rule set on a labelled JSONL corpus instead."
        ),
    )
    parser.add_argument(
        "file", metavar="FILE.json", nargs="?", help="request body; - for standard input"
    )
    parser.add_argument(
        "--eval",
        metavar="CORPUS.jsonl",
        help="print the guidance table and confusion matrix of the rule set (both rule sets "
        "unless --rules names one) on labelled tool results, one JSON object a line: "
        "text, label (transient, fixable, unrecoverable, ambiguous, success), optional "
        "is_error and user_agent",
    )
    parser.add_argument(
        "--api",
        choices=APIS,
        help="the body's API shape (default: guessed: responses when it has input and no "
        "messages; messages when it has a top-level system or an Anthropic-only content "
        "block; chat otherwise)",
    )
    parser.add_argument(
        "--user-agent", default="", metavar="UA", help="User-Agent the agent rules see"
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print each form's body as it would be forwarded, in the API's own shape",
    )
    add_layer_options(parser, with_form=False)
    parser.set_defaults(func=run)


def add_layer_options(parser: argparse.ArgumentParser, with_form: bool = True) -> None:
    """The layer's server options (`--tool-errors` only when `with_form`; without it the
    rule set option also answers to `--rules`)."""
    group = parser.add_argument_group("tool-error layer")
    if with_form:
        group.add_argument(
            "--tool-errors",
            choices=FORMS,
            default="off",
            help="form for requests without a tool_errors field (default off)",
        )
    names = ["--tool-error-rules"] if with_form else ["--rules", "--tool-error-rules"]
    group.add_argument(
        *names,
        dest="tool_error_rules",
        choices=RULES,
        default=None,
        help="detection rules for requests without a tool_error_rules field: paper (the "
        "paper's frozen rules, default) or wide (broader, with evidence)",
    )
    group.add_argument(
        "--check-before-retry",
        action="store_true",
        help="for tools not known to be safe to repeat, tell the model to check whether "
        "the failed attempt took effect instead of simply retrying",
    )
    group.add_argument(
        "--retry-safe-tools",
        metavar="NAMES",
        help="comma-separated allow-list of tools safe to repeat; with --check-before-retry "
        "every other tool without a true readOnlyHint or idempotentHint counts as unsafe",
    )
    group.add_argument(
        "--quote-errors",
        action="store_true",
        help="restate each error in a note as a JSON string literal, truncated",
    )
    group.add_argument(
        "--quote-max-chars",
        type=int,
        default=2000,
        metavar="N",
        help="longest quoted error in characters (default 2000)",
    )


def options_from_args(args: argparse.Namespace) -> Options:
    """The layer's Options from parsed arguments; raises ValueError for bad values."""
    safe = None
    if args.retry_safe_tools is not None:
        safe = frozenset(n.strip() for n in args.retry_safe_tools.split(",") if n.strip())
    return Options(
        form=getattr(args, "tool_errors", "off"),
        check_before_retry=args.check_before_retry,
        retry_safe_tools=safe,
        quote_errors=args.quote_errors,
        quote_max_chars=args.quote_max_chars,
        rules=getattr(args, "tool_error_rules", None) or "paper",
    )


def run(args: argparse.Namespace) -> int:
    if args.eval is not None:
        return run_eval(args.eval, args.tool_error_rules, args.file)
    if args.file is None:
        print("exactserve toolerr: error: give FILE.json or --eval CORPUS.jsonl", file=sys.stderr)
        return 2
    try:
        text = sys.stdin.read() if args.file == "-" else Path(args.file).read_text("utf-8")
        body = json.loads(text)
        if not isinstance(body, dict):
            raise ValueError("the request body must be a JSON object")
        options = options_from_args(args)
        api = args.api or detect_api(body)
        select_form(body, "off")  # reject a bad tool_errors field; every form is shown anyway
        body = {key: value for key, value in body.items() if key != TOOL_ERRORS}
        outcomes = {
            form: process(body, api, args.user_agent, _with_form(options, form)) for form in FORMS
        }
    except (OSError, ValueError, RecursionError) as exc:  # RequestError is a ValueError
        where = f"{args.file}: " if not isinstance(exc, OSError) else ""
        detail = exc.message if isinstance(exc, RequestError) else str(exc)
        print(f"exactserve toolerr: error: {where}{detail}", file=sys.stderr)
        return 2
    print_report(outcomes, api, args.api is None, args.user_agent, args.json, sys.stdout)
    return 0


def run_eval(path: str, rules: str | None, extra_file: str | None) -> int:
    """`--eval`: the table and confusion matrix of each requested rule set."""
    if extra_file is not None:
        print("exactserve toolerr: error: --eval takes no FILE.json", file=sys.stderr)
        return 2
    try:
        with open(path, encoding="utf-8") as corpus:
            records = read_records(corpus)
    except (OSError, ValueError) as exc:
        print(f"exactserve toolerr: error: {path}: {exc}", file=sys.stderr)
        return 2
    print(f"corpus: {path} ({len(records)} records)")
    for rule_set in (rules,) if rules else RULES:
        print()
        print(format_report(evaluate(records, rule_set)))
    return 0


def _with_form(options: Options, form: str) -> Options:
    return dataclasses.replace(options, form=form)


def print_report(
    outcomes: dict[str, Any], api: str, guessed: bool, user_agent: str, as_json: bool, out: TextIO
) -> None:
    """Write the detections, then each form's conversation (or body, `as_json`)."""
    first = outcomes[FORMS[0]]
    messages = first.conversation.messages
    how = "guessed; --api overrides" if guessed else "from --api"
    print(f"API: {API_TITLES[api]} ({how})", file=out)
    print(f"User-Agent: {user_agent or '(none)'}", file=out)
    print("Detections:", file=out)
    for failure in first.failures:
        message = messages[failure.message]
        because = f" ({failure.evidence})" if failure.evidence is not None else ""
        print(
            f"  [{failure.message}] tool result for {_call_label(messages, message)}: "
            f"kind {failure.kind}, rule {failure.rule}{because}",
            file=out,
        )
    if not first.failures:
        print("  none", file=out)
    for form, outcome in outcomes.items():
        state = "rewritten" if outcome.changed else "unchanged"
        print(f"\n=== form {form}: {state} ===", file=out)
        print(f"X-Tool-Errors: {outcome.header}", file=out)
        if as_json:
            print(json.dumps(outcome.body, ensure_ascii=False, indent=2), file=out)
        else:
            for index, message in enumerate(outcome.messages):
                print(format_message(index, message), file=out)


def format_message(index: int, message: Message) -> str:
    """One message as a readable block: a header line, then its text indented."""
    head = f"[{index}] {message.role}"
    if message.tool_call_id is not None:
        head += f" (call {message.tool_call_id})"
    if message.origin is None:
        head += " (added by the layer)"
    lines = [head]
    text = _display_text(message)
    if text:
        lines.extend("    " + line if line else "" for line in text.split("\n"))
    for call in message.tool_calls:
        arguments = (
            call.arguments
            if isinstance(call.arguments, str)
            else json.dumps(call.arguments, ensure_ascii=False)
        )
        lines.append(f"    -> {call.name}({arguments}) (call {call.id})")
    return "\n".join(lines)


def _display_text(message: Message) -> str:
    if not isinstance(message.content, tuple):
        return text_of(message.content)
    return "\n".join(
        part["text"] if part.get("type") == "text" else f"<{part.get('type')} part>"
        for part in message.content
    )


def _call_label(messages: tuple[Message, ...], tool_message: Message) -> str:
    for message in messages:
        for call in message.tool_calls:
            if call.id == tool_message.tool_call_id:
                return f"{call.name} (call {call.id})"
    return f"call {tool_message.tool_call_id}"
