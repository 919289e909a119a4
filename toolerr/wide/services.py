"""Round 9's failure shapes (test10, tuned on after its one evaluation), by general cause:
JSON error bodies of web APIs in their own layouts, the log lines Go command-line tools end
with, a few report lines and words of toolchains and API servers. Data only, in the form
of toolerr.wide.words; rules.py and classify.py add each list to its tier.

Each shape is a format many tools or services share (a logging library's level, an API's
error layout, an argument parser's usage error), not one text's phrase.
"""

from __future__ import annotations

import re
from typing import Any

# A line that begins a failure report (rules.REPORT_LINE, after every other shape):
# - Go logging libraries' fatal and error levels: logrus's text format on a terminal
#   (`FATA[0000] failed to create shim task: ...`, `ERRO[0003] ...`), a bare upper-case level
#   before a capitalised message (trivy: `FATAL Error ...`); caarlos0/log's error glyph is
#   general.MARKED_LINES' (looked for only when `⨯` occurs);
# - `Fatal: ` (restic and other Go tools' final line), node-gyp's `gyp ERR! `;
# - a failure glyph before `X failed` alone or with a colon ending the line (`❌ Markdown
#   linting failed`, `❌ Content validation failed:`);
# - Google API clients' status and message (`404 Not found: Table x`, `403 Access Denied:
#   ...`; agents.EDGE_BODY reads capitalised reasons only).
REPORT_BODY = (
    r"(?:FATA|ERRO)\[[0-9]{1,6}\] |FATAL (?=[A-Z])|Fatal: |gyp ERR! "
    r"|[✗✕✘×❌✖⨯] ?[A-Z][\w-]{0,30}(?: [\w-]{1,30}){0,3} failed:?$"
    r"|[45][0-9]{2} [A-Z][a-z]{1,20}(?: [a-z]{1,20}){1,2}: "
    # the Azure CLI's error code before its message (`(AuthorizationFailed) The client ...`),
    # a code that names a failure (not `(Optional) The ...`)
    r"|\((?:[A-Z][a-z0-9]{1,20}){1,6}(?:Failed|NotFound|Error|Exception|Denied|Invalid"
    r"|Exceeded|Conflict)\) "
    # round 13: certbot's ACME challenges that failed (`Challenge failed for domain x`, `Some
    # challenges have failed.`); Chocolatey's verdict with a failed package (`Chocolatey
    # installed 0/1 packages. 1 packages failed.`); the Notion SDK's log of a failed request
    # (`@notionhq/client warn: request fail {`, then the error's code and message)
    r"|Challenge failed for domain |Some challenges have failed\."
    r"|Chocolatey (?:installed|upgraded|uninstalled) [0-9]{1,6}/[0-9]{1,6} packages?(?:\(s\))?\."
    r" [1-9][0-9]{0,5} packages?(?:\(s\))? failed\."
    r"|(?:@notionhq/)?[Cc]lient warn: request fail \{"
)
# A linter's failed verdict: eslint's `✖ 84 problems (83 errors, 1 warning)` (with no error,
# `✖ 3 problems (0 errors, 3 warnings)`, the run passed). Fixable evidence only: as a
# detection it would also fire on a file of eslint's output read back (test data).
LINT_VERDICT = re.compile(r"✖ [0-9]{1,6} problems? \([1-9][0-9]{0,5} errors?, ")
# An AWS service's error code (`An error occurred (ValidationException) when calling the
# BatchWriteItem operation: ...`, botocore's and the CLI's form): the exception the service
# named, read by the words of its name when the client's class (`ClientError`) says nothing.
AWS_CODE_MARK = "n error occurred ("
AWS_CODE = re.compile(r"n error occurred \(([A-Za-z][A-Za-z0-9]{1,60})\) when calling ")
# The Azure CLI's error code opening the text (`(AuthorizationFailed) The client ...`).
AZURE_CODE = re.compile(r"\(([A-Z][A-Za-z0-9]{1,60})\) ")
# A path that climbs out of a named folder (`/app/scripts/../output/chunks.json`): a program
# builds it from its own location (`dirname(__file__)/..`); a call's relative path climbs
# from where it is (`../../src`).
BUILT_PATH = re.compile(r"/[\w-][\w.-]{0,80}/\.\./")
# GitHub, whose 403 is both a refusal and a rate limit, and the status with nothing after its
# reason phrase but the end of its line or quote.
GITHUB = "ithub"
BARE_403 = re.compile(r"403 Forbidden[\"']?$", re.MULTILINE)
# A Python package's exception class by its module (`hvac.exceptions.InvalidRequest: ...`,
# `prawcore.exceptions.Redirect: ...`), whose name need not end in `Error`.
MODULE_CLASS_MARK = "exceptions."
MODULE_CLASS = re.compile(r"\.exceptions\.([A-Z][A-Za-z0-9_]{1,60}): ")

# Lines read only as the first line of the text (a marker scan of the first lines would cost
# every text more than these few tools repay): a YAML linter's finding at a location, a
# sentence and its rule named last (actionlint: `test.yaml:3:5: unexpected key "branch" for
# "push" section. ... [syntax-check]`; not `rg --vimgrep`'s `ci.yaml:3:5: branches: [main]`),
# also fixable evidence (classify.py); an argument parser's usage error under a program and
# its subcommand (argparse: `pipx run: error: ambiguous option: ...`; one word is general.py's
# `prog: error:`).
YAML_FINDING = re.compile(
    r"^[\w./-]{1,200}\.ya?ml:[0-9]{1,7}:[0-9]{1,5}: "
    r"(?:[^\s]{1,200} ){4,80}\[[a-z][a-z0-9-]{1,30}\]$",
    re.MULTILINE,
)
SUBCOMMAND_USAGE = re.compile(r"[\w.+-]{1,30}(?: [\w.+-]{1,30}){1,2}: error: ")


def usage_error_at_end(last_line: str) -> str | None:
    """argparse's usage error as the last line of a text its usage opens (round 15: `usage:
    manage.py migrate [-h] ...`, wrapped over lines, then `manage.py migrate: error:
    unrecognized arguments: --list`): a subcommand's name is two words, which no report
    line reads."""
    found = SUBCOMMAND_USAGE.match(last_line) if ": error: " in last_line else None
    return found.group(0) if found else None


def first_line_report(line: str) -> re.Match | None:
    """A YAML linter's finding or a subcommand's usage error as the text's first line."""
    if line.endswith("]"):  # (a finding ends with its rule)
        return YAML_FINDING.match(line)
    if line.find(": error: ", 0, 100) != -1:  # (within the reach of the pattern's start)
        return SUBCOMMAND_USAGE.match(line)
    return None


# Evidence words by kind (classify.py adds them to the tiers).
FIXABLE_WORDS = (
    # a request or input its validator refused (`Validation failed: Password can't be blank`,
    # GitHub's `Validation Failed`, Okta's `Api validation failed: RequestParams`)
    *("alidation failed", "alidation Failed"),
    # tsc's TS2305 and TS2724 (`Module '"bullmq"' has no exported member 'QueueScheduler'`)
    "has no exported member",
    # cobra's (most Go CLIs') and argparse's usage errors
    *('unknown command "', "ambiguous option"),
    # the Kubernetes API server's field validation (`spec.selector: Required value`), JSON
    # Schema validators' `missing properties: ["Name"]`
    *("Required value", "missing properties: ["),
    # a validator's verdict on a named field or object (the Kubernetes API server's
    # `Deployment.apps "x" is invalid: [spec.selector: ...`, Datadog's `Field 'filter.from,to'
    # is invalid: ...`), HTTP 405's reason (GitHub: `Method not allowed. To make changes to a
    # key, ...`), a tool name the framework refused (`invalid tool name pattern`)
    *(" is invalid: ", "ethod not allowed", "nvalid tool name"),
    # a call with the wrong number of arguments (`Function 'f' expects 2 arguments, got 1`),
    # esbuild's compile errors (`Transform failed with 3 errors:`, vite's and tsx's builds)
    *(" arguments, got ", "Transform failed with "),
)
# Conditions that pass by themselves: a Kubernetes container still being created (`container
# "x" in pod "x" is waiting to start: ContainerCreating`), Claude Code's cancellation of a call
# because a parallel call failed (`Sibling tool call errored`: the same call alone goes
# through).
CONDITIONS: tuple[tuple[str, str], ...] = (
    ("ContainerCreating", "transient"),
    ("Sibling tool call errored", "transient"),
    # round 14: git's refusal of a repository another user owns (`fatal: detected dubious
    # ownership in repository at '/src'`), which names the `safe.directory` setting to add: a
    # change of the call or its setup (a `Could not read from remote repository` after it, as
    # a clone from that path prints, disagrees: ambiguous)
    ("detected dubious ownership", "fixable"),
)
UNRECOVERABLE_WORDS = (
    # Slack's Web API refusing the token (round 13: `missing_scope`, which slack-ruby-client
    # raises as `Slack::Web::Api::Errors::MissingScope`, and `invalid_auth`): the app's
    # configuration or credentials, the user's to change
    *("missing_scope", "invalid_auth"),
    # an API the cluster or service does not offer (`metrics API is not available`, `The
    # Gemini API is not available in your country`; GUIDE.md: "a tool or server that is not
    # available in this session"). Not `is not available` alone: composer's boilerplate says
    # `The package is not available in a stable-enough version` under every missing package.
    "API is not available",
    # an authorization the service refused (Kubernetes' kubelet `Authorization error (user=...`)
    "Authorization error",
    # round 14: Microsoft Graph's and Azure AD Graph's refusal for want of a permission the
    # app was not granted (`"code": "Authorization_RequestDenied", "message": "Insufficient
    # privileges to complete the operation."`): an admin's consent, not the call's arguments
    "Insufficient privileges to complete the operation",
)
# Round 14: a single request over a per-minute token limit (Groq's and OpenAI's `Request too
# large for model x ... on tokens per minute (TPM): Limit 12000, Requested 12333, please reduce
# your message size`, sent as a 429 `rate_limit_exceeded`): no retry passes it, a smaller
# request does
TOO_LARGE = "Request too large for "
# A service's own message that names the kind more precisely than the HTTP status it came
# with (GUIDE.md precedence 2; classify.py consults them before the statuses; round 12): npm's
# registry refuses to overwrite a published version with a 403 (`You cannot publish over the
# previously published versions: 3.4.0.`: bump the version); Terraform's state lock that
# another run holds, with DynamoDB's 400 (`Error acquiring the state lock:
# ConditionalCheckFailedException`), and S3's `OperationAborted: A conflicting conditional
# operation is currently in progress against this resource. Please try again.` with its 409:
# released when the other operation ends; an MCP tool whose result lacks the structured
# content its own output schema promises (`Output validation error: Tool x has an output
# schema but no structured content was provided`, under -32602): the server's output, which
# no call's arguments change.
OVER_STATUS: tuple[tuple[str, str], ...] = (
    ("cannot publish over the previously published version", "fixable"),
    ("Error acquiring the state lock", "transient"),
    ("A conflicting conditional operation", "transient"),
    ("has an output schema but", "unrecoverable"),
    # round 13: Deno's refusal of a permission the command did not grant, which names the flag
    # to add (`PermissionDenied: Requires net access to "deno.land", run again with the
    # --allow-net flag`: the call changes, whatever its class's name says)
    ("run again with the --allow-", "fixable"),
    # round 14: one request over a per-minute token limit under its 429 (TOO_LARGE above)
    (TOO_LARGE, "fixable"),
    # round 15: the MCP SDK client's check of a result against the tool's declared output
    # schema (`MCP error -32602: Structured content does not match the tool's output schema:
    # data should NOT have additional properties`): the server's output, as above
    ("does not match the tool's output schema", "unrecoverable"),
)
# Round 13: texts that only a service's failure prints, wherever they stand (rules.py's
# phrases): huggingface_hub's request that raised (`'(ReadTimeoutError("HTTPSConnectionPool(
# ...): Read timed out."), ...)' thrown while requesting HEAD https://...`); an error type of
# Anthropic's and OpenAI's APIs (`"type": "rate_limit_error"`) quoted outside its JSON body.
# (Spelt, where the texts allow, with their rarer characters, `"`: most texts reach the
# phrases, and a phrase whose characters all occur costs a substring scan; words.RARITY,
# probes.py.)
FAILURE_PHRASES = ("thrown while requesting ", '"rate_limit_error"')
# ENOSPC from the kernel's inotify limit (Node's and libuv's `ENOSPC: System limit for number
# of file watchers reached`) is no full disk: a system setting or the project's watch list.
WATCHER_LIMIT = "file watchers"
# gRPC's RESOURCE_EXHAUSTED is a service's rate limit or quota, but XLA (JAX, TensorFlow) sends
# the same status for a device that ran out of memory (`XlaRuntimeError: RESOURCE_EXHAUSTED: Out
# of memory while trying to allocate 4770354232 bytes.`): no rate limit, and memory whose
# kind the corpus's labels do not settle (a smaller batch, or a bigger device); round 13
RESOURCE_EXHAUSTED = "RESOURCE_EXHAUSTED"
OUT_OF_MEMORY = ("Out of memory", "out of memory")
# Azure's error code for a subscription's exhausted quota, and its message for a request
# over an approved limit of cores (`Operation could not be completed as it results in
# exceeding approved Total Regional Cores quota`, sent with 409 Conflict: the quota outranks
# the status); round 15: Git LFS's storage or bandwidth quota of the account, as GitHub's
# batch API answers a push or a pull (`batch response: This repository is over its data
# quota. Purchase more data packs to restore access.`); round 16: a plan's limit per day, which
# a 429 may carry (ipinfo's `You've hit the daily limit for the unauthenticated API.`): no
# retry passes it before the day ends
QUOTA = ("InsufficientQuota", "Cores quota", "over its data quota", "the daily limit")
# Round 14: a quota per minute (Vertex AI's `Quota exceeded for aiplatform.googleapis.com/
# online_prediction_input_tokens_per_minute_per_base_model`, sent with 429 RESOURCE_EXHAUSTED) is
# a rate limit by its nature and a quota by its words; the corpus labels such texts both ways
# (transient where the retries went through, unrecoverable where the limit is 0 or a free
# tier's): ambiguous
PER_MINUTE = "_per_minute"

# The members of an error object inside a JSON body's `errors` list (GraphQL, JSON:API,
# Datadog): `{"errors": [{"message": ...}]}`, or plain strings (`{"errors": ["API key
# required"]}`).
ERROR_ITEM_KEYS = frozenset(("message", "detail", "title", "code", "reason", "description"))


def aws_validation(text: str) -> str | None:
    """AWS's error code when it names the service's validation of the request
    (`ValidationError`, `ValidationException`): fixable evidence, or None."""
    found = AWS_CODE.search(text)
    return found.group(1) if found and "Validation" in found.group(1) else None


def service_class(text: str) -> str | None:
    """An Azure or AWS error code or a Python package's exception class in `text`, or None."""
    found = AZURE_CODE.match(text) if text.startswith("(") else None
    if found is None and AWS_CODE_MARK in text:
        found = AWS_CODE.search(text)
    if found is None and MODULE_CLASS_MARK in text:
        found = MODULE_CLASS.search(text)
    return found.group(1) if found else None


def json_error_body(value: dict[str, Any]) -> str | None:
    """The evidence that a JSON object is an API's error body in a layout other than an
    `error` member, or None: a non-empty `errors` list of error objects or strings; GitHub's
    error layout (`message` with `documentation_url`); an error code with its summary (Okta's
    `errorCode` and `errorSummary`); an AWS SDK for JavaScript v3 error serialized whole
    (`{"name": "ThrottlingException", "$fault": "client", "$metadata": {...}}`)."""
    errors = value.get("errors")
    if isinstance(errors, list) and errors:
        first = errors[0]
        if (isinstance(first, str) and first) or (
            isinstance(first, dict) and not ERROR_ITEM_KEYS.isdisjoint(first)
        ):
            return "JSON errors member"
    if isinstance(value.get("message"), str) and "documentation_url" in value:
        return "JSON message with documentation_url"
    code = value.get("errorCode")
    if isinstance(code, str) and code and ("errorSummary" in value or "errorMessage" in value):
        return "JSON errorCode"
    if "$fault" in value and "$metadata" in value:  # AWS's SDK for JavaScript v3 (round 17)
        return "JSON $fault"
    return None
