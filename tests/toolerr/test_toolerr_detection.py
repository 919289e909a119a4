# ruff: noqa: E501
"""Detection and classification cases: recorded agent formats, library and protocol error
texts, and texts that must not be detected. Each expected rule and kind was worked out by
hand from the rules in issue 5 (docs/TOOLERR.md), not produced by the code under test."""

from __future__ import annotations

import pytest

from exactserve.toolerr.classify import classify
from exactserve.toolerr.detect import detect, detect_rule
from exactserve.toolerr.messages import Message

QWEN = "QwenCode/0.0.14 (linux; x64)"
CODEX = "codex_cli_rs/0.42.0 (Ubuntu 24.4.0; x86_64) xterm-256color"
KILO = "Kilo-Code/4.95.0"
OPENCODE = "opencode/0.15.3 ai-sdk/provider-utils/3.0.9 runtime/bun/1.2.21"
SDK = "OpenAI/Python 1.99.9"
CLINE = "Cline/3.32.0"  # not an agent with its own rules: the generic rule applies

QWEN_NPM_TEST_FAILED = """Command: npm test
Directory: (root)
Stdout: 
> app@1.0.0 test
> jest

FAIL src/app.test.ts
Stderr: (empty)
Error: (none)
Exit Code: 1
Signal: (none)
Background PIDs: (none)
Process Group PGID: 48213"""  # noqa: W291 (the recorded output has a trailing space)

QWEN_RM_DENIED = """Command: rm -rf /var/log/app
Directory: (root)
Stdout: (empty)
Stderr: rm: cannot remove '/var/log/app/current.log': Permission denied
Error: (none)
Exit Code: 1
Signal: (none)
Background PIDs: (none)
Process Group PGID: 50112"""

QWEN_LS_OK = """Command: ls src
Directory: (root)
Stdout: app.ts
errors.ts
Stderr: (empty)
Error: (none)
Exit Code: 0
Signal: (none)
Background PIDs: (none)
Process Group PGID: 50200"""

QWEN_SPAWN_FAILED = """Command: pnpm build
Directory: (root)
Stdout: (empty)
Stderr: (empty)
Error: spawn pnpm ENOENT
Exit Code: (none)
Signal: (none)
Background PIDs: (none)
Process Group PGID: (none)"""

QWEN_KILLED = """Command: sleep 600
Directory: (root)
Stdout: (empty)
Stderr: (empty)
Error: (none)
Exit Code: (none)
Signal: 15
Background PIDs: (none)
Process Group PGID: 50311"""

# (id, user agent, tool text, is_error flag, expected rule, expected kind)
# fmt: off
CASES = [
    # --- explicit flags, for every client ---
    ('is_error-readonly', SDK, "Unable to write file '/etc/app.conf': EROFS: read-only file system", True, 'is_error', 'unrecoverable'),
    ('is_error-common-only', SDK, 'Connection refused by 10.0.0.5:5432', True, 'is_error', 'ambiguous'),
    ('is_error-transient', SDK, 'Upload failed: ECONNRESET', True, 'is_error', 'transient'),
    ('is_error-beats-agent', QWEN, 'The build is still running in the background.', True, 'is_error', 'ambiguous'),
    ('cline-429', CLINE, '{"query":"latest httpx release","success":false,"error":"Request failed: 429 Too Many Requests"}', False, 'cline', 'transient'),
    ('cline-spaced', CLINE, '{"query": "python 3.14 changelog", "success": false, "error": "no results"}', False, 'cline', 'ambiguous'),
    ('cline-success', CLINE, '{"query":"python 3.13 release date","success":true,"results":[]}', False, None, None),
    ('opencode-json', SDK, '{"error":{"type":"tool.execution","message":"EACCES: permission denied, open \'/root/.ssh/id_rsa\'"}}', False, 'opencode', 'unrecoverable'),
    ('opencode-json-beats-agent', QWEN, '{"error":{"type":"tool.execution","message":"Command failed"}}', False, 'opencode', 'ambiguous'),
    ('mcp-unauthorized', SDK, '{"content":[{"type":"text","text":"Error: Request failed with status 401 Unauthorized"}],"isError":true}', False, 'mcp-iserror', 'unrecoverable'),
    ('mcp-reset', SDK, '{"content":[{"type":"text","text":"Connection reset by peer while fetching https://api.example.com"}],"isError":true}', False, 'mcp-iserror', 'transient'),
    ('mcp-nested-spaced', SDK, '{"result": {"content": [{"type": "text", "text": "unknown tool: grep_search"}], "isError": true}}', False, 'mcp-iserror', 'fixable'),
    ('mcp-beats-agent', KILO, '{"content":[{"type":"text","text":"Rate limit exceeded"}],"isError":true}', False, 'mcp-iserror', 'transient'),
    ('mcp-not-error', SDK, '{"content":[{"type":"text","text":"Error: none"}],"isError":false}', False, None, None),
    # --- QwenCode ---
    ('qwen-notfound', QWEN, 'File not found: /home/dev/app/src/utils/format.ts', False, 'qwen-notfound', 'ambiguous'),
    ('qwen-exit-1', QWEN, QWEN_NPM_TEST_FAILED, False, 'qwen-exit', 'ambiguous'),
    ('qwen-exit-denied', QWEN, QWEN_RM_DENIED, False, 'qwen-exit', 'unrecoverable'),
    ('qwen-exit-0', QWEN, QWEN_LS_OK, False, None, None),
    ('qwen-exit-error-line', QWEN, QWEN_SPAWN_FAILED, False, 'qwen-exit', 'ambiguous'),
    ('qwen-killed-no-rule', QWEN, QWEN_KILLED, False, None, None),
    ('qwen-edit-error', QWEN, 'Error: Failed to edit, could not find the string to replace.', False, 'qwen-error', 'ambiguous'),
    ('qwen-invalid-params', QWEN, "Error: Invalid parameters provided. Reason: params must have required property 'file_path'", False, 'qwen-error', 'fixable'),
    ('qwen-not-read', QWEN, 'File /home/dev/app/src/config.ts has not been read yet. Read it first before writing to it.', False, 'qwen-error', 'fixable'),
    ('qwen-relative-path', QWEN, 'File path must be absolute, but was relative: src/index.ts. You must provide an absolute path.', False, None, None),
    ('qwen-no-generic', QWEN, 'Traceback (most recent call last):\n  File "x.py", line 1\nValueError: bad', False, None, None),
    # --- Codex ---
    ('codex-exit-code', CODEX, 'Exit code: 1\nWall time: 2.3 seconds\nOutput:\nerror[E0425]: cannot find value `cfg` in this scope\n --> src/main.rs:12:5\n', False, 'codex-exit', 'ambiguous'),
    ('codex-process-exited', CODEX, 'Chunk ID: 9f1c2e\nWall time: 0.0513 seconds\nProcess exited with code 127\nOriginal token count: 9\nOutput:\nbash: line 1: rg: command not found\n', False, 'codex-exit', 'ambiguous'),
    ('codex-process-exited-0', CODEX, 'Chunk ID: 4ab1\nWall time: 0.2 seconds\nProcess exited with code 0\nOriginal token count: 20\nOutput:\nerror.rs\nlib.rs\nmain.rs\n', False, None, None),
    ('codex-exit-0', CODEX, 'Exit code: 0\nWall time: 0.9 seconds\nOutput:\ntest result: ok. 12 passed; 0 failed\n', False, None, None),
    ('codex-timeout', CODEX, 'command timed out after 10000 milliseconds\n', False, 'codex-timeout', 'ambiguous'),
    ('codex-timeout-exit-first', CODEX, 'Exit code: 124\nWall time: 10 seconds\nOutput:\ncommand timed out after 10000 milliseconds\n', False, 'codex-exit', 'ambiguous'),
    ('codex-patch', CODEX, 'apply_patch verification failed: Failed to find expected lines in /repo/src/lib.rs:\n    let total = a + b;', False, 'codex-patch', 'fixable'),
    ('codex-npm-eai-again', CODEX, 'Exit code: 1\nWall time: 31.2 seconds\nOutput:\nnpm ERR! code EAI_AGAIN\nnpm ERR! errno EAI_AGAIN\nnpm ERR! request to https://registry.npmjs.org/left-pad failed, reason: getaddrinfo EAI_AGAIN registry.npmjs.org\n', False, 'codex-exit', 'transient'),
    ('codex-wider-not-used', CODEX, 'Exit code: 7\nWall time: 0.0 seconds\nOutput:\ncurl: (7) Failed to connect to localhost port 8080 after 0 ms: Connection refused\n', False, 'codex-exit', 'ambiguous'),
    ('codex-denied', CODEX, "Chunk ID: 77aa\nWall time: 0.0107 seconds\nProcess exited with code 1\nOriginal token count: 14\nOutput:\ntouch: cannot touch '/usr/local/bin/tool': Permission denied\n", False, 'codex-exit', 'unrecoverable'),
    ('codex-no-generic', CODEX, 'failed to parse function arguments: missing field `cmd` at line 1 column 2', False, None, None),
    ('codex-no-generic-error', CODEX, 'Error: unsupported call: grep', False, None, None),
    # --- Kilo-Code ---
    ('kilo-notfound', KILO, 'File not found: src/components/Button.tsx', False, 'kilo-notfound', 'ambiguous'),
    ('kilo-fs-denied', KILO, 'Unknown: FileSystem.readFile (/workspace/app/.env): EACCES: permission denied', False, 'kilo-fs', 'unrecoverable'),
    ('kilo-fs-enoent', KILO, 'Unknown: FileSystem.stat (/workspace/app/missing): ENOENT: no such file or directory', False, 'kilo-fs', 'ambiguous'),
    ('kilo-usage-notfound', KILO, 'oldString not found in content', False, 'kilo-usage', 'ambiguous'),
    ('kilo-usage-empty', KILO, 'oldString must not be empty', False, 'kilo-usage', 'fixable'),
    ('kilo-no-generic', KILO, 'Error: ECONNREFUSED 127.0.0.1:11434', False, None, None),
    ('kilo-success', KILO, 'Edit applied successfully.', False, None, None),
    # --- opencode ---
    ('opencode-exit-2', OPENCODE, "src/index.ts(3,7): error TS2322: Type 'string' is not assignable to type 'number'.\n\nExited with code 2", False, 'opencode-exit', 'ambiguous'),
    ('opencode-exit-0', OPENCODE, 'Compiled successfully.\n\nExited with code 0', False, None, None),
    ('opencode-exit-trailing-newline', OPENCODE, 'npm ERR! code ECONNRESET\nnpm ERR! network aborted\n\nExited with code 1\n', False, 'opencode-exit', 'transient'),
    ('opencode-exit-not-last', OPENCODE, 'Exited with code 1\nretrying...\nDone.', False, None, None),
    # --- generic: prefixes ---
    ('generic-enoent', SDK, "Error: ENOENT: no such file or directory, open '/app/config.yml'", False, 'generic', 'ambiguous'),
    ('generic-ERROR', SDK, 'ERROR: relation "users" does not exist', False, 'generic', 'ambiguous'),
    ('generic-git', SDK, "error: pathspec 'feature/x' did not match any file(s) known to git", False, 'generic', 'fixable'),
    ('generic-executing', SDK, "Error executing tool read_file: [Errno 13] Permission denied: '/root/secret.txt'", False, 'generic', 'unrecoverable'),
    ('generic-mcp-32602', SDK, 'MCP error -32602: Invalid arguments for tool search: query must be a string', False, 'generic', 'fixable'),
    ('generic-mcp-32601', SDK, 'MCP error -32601: Method not found', False, 'generic', 'fixable'),
    ('generic-mcp-timeout', SDK, 'MCP error -32001: Request timed out', False, 'generic', 'transient'),
    ('generic-agents-sdk', SDK, 'An error occurred while running the tool. Please try again. Error: 503 Service Unavailable', False, 'generic', 'transient'),
    ('generic-leading-space', CLINE, "\n\n  Error: Invalid arguments: 'limit' must be positive", False, 'generic', 'fixable'),
    ('generic-order', SDK, 'Error: 403 Forbidden: rate limit for unauthenticated requests exceeded', False, 'generic', 'unrecoverable'),
    # --- generic: Python ---
    ('py-traceback', SDK, 'Traceback (most recent call last):\n  File "/app/tools.py", line 41, in run\n    return search(**args)\nTypeError: search() got an unexpected keyword argument \'q\'', False, 'generic', 'fixable'),
    ('py-permission', SDK, "PermissionError: [Errno 13] Permission denied: '/etc/shadow'", False, 'generic', 'unrecoverable'),
    ('py-filenotfound', SDK, "FileNotFoundError: [Errno 2] No such file or directory: 'data.csv'", False, 'generic', 'ambiguous'),
    ('py-jsondecode', SDK, 'json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)', False, 'generic', 'ambiguous'),
    ('py-pydantic', SDK, 'pydantic_core._pydantic_core.ValidationError: 1 validation error for SearchArgs\nquery\n  Field required [type=missing, input_value={}, input_type=dict]', False, 'generic', 'fixable'),
    ('py-readonly', SDK, "OSError: [Errno 30] Read-only file system: '/usr/lib/x'", False, 'generic', 'unrecoverable'),
    ('py-socket-timeout', SDK, 'socket.timeout: timed out', False, 'generic', 'transient'),
    ('py-reset', SDK, 'ConnectionResetError: [Errno 104] Connection reset by peer', False, 'generic', 'transient'),
    ('py-timeout-parens', SDK, 'TimeoutError()', False, 'generic', 'transient'),
    ('py-keyerror', SDK, "KeyError: 'path'", False, 'generic', 'ambiguous'),
    ('py-missing-positional', SDK, "TypeError: read_file() missing 1 required positional argument: 'path'", False, 'generic', 'fixable'),
    # --- generic: requests ---
    ('requests-connection', SDK, "requests.exceptions.ConnectionError: HTTPSConnectionPool(host='api.github.com', port=443): Max retries exceeded with url: /repos/acme/app (Caused by NewConnectionError('<urllib3.connection.HTTPSConnection object at 0x7f3c>: Failed to establish a new connection: [Errno 111] Connection refused'))", False, 'generic', 'transient'),
    ('requests-readtimeout', SDK, "requests.exceptions.ReadTimeout: HTTPSConnectionPool(host='api.example.com', port=443): Read timed out. (read timeout=10)", False, 'generic', 'transient'),
    ('requests-404', SDK, '404 Client Error: Not Found for url: https://api.github.com/repos/acme/missing', False, 'generic', 'ambiguous'),
    ('requests-429', SDK, '429 Client Error: Too Many Requests for url: https://api.github.com/search/code?q=x', False, 'generic', 'transient'),
    ('requests-500', SDK, '500 Server Error: Internal Server Error for url: https://api.example.com/v1/items', False, 'generic', 'transient'),
    ('requests-403', SDK, '403 Client Error: Forbidden for url: https://api.example.com/admin', False, 'generic', 'unrecoverable'),
    ('requests-401', SDK, '401 Client Error: Unauthorized for url: https://api.example.com/me', False, 'generic', 'unrecoverable'),
    ('requests-422', SDK, '422 Client Error: Unprocessable Entity for url: https://api.example.com/items', False, 'generic', 'fixable'),
    # --- generic: httpx ---
    ('httpx-404', SDK, "Client error '404 Not Found' for url 'https://example.com/docs/missing'\nFor more information check: https://developer.mozilla.org/en-US/docs/Web/HTTP/Status/404", False, 'generic', 'ambiguous'),
    ('httpx-502', SDK, "Server error '502 Bad Gateway' for url 'https://api.example.com/v1/run'\nFor more information check: https://developer.mozilla.org/en-US/docs/Web/HTTP/Status/502", False, 'generic', 'transient'),
    ('httpx-connect', SDK, 'httpx.ConnectError: [Errno 111] Connection refused', False, 'generic', 'transient'),
    ('httpx-readtimeout', SDK, 'httpx.ReadTimeout: The read operation timed out', False, 'generic', 'transient'),
    ('httpx-protocol', SDK, 'httpx.RemoteProtocolError: Server disconnected without sending a response.', False, 'generic', 'ambiguous'),
    # --- generic: aiohttp ---
    ('aiohttp-connector', SDK, 'aiohttp.client_exceptions.ClientConnectorError: Cannot connect to host api.example.com:443 ssl:default [Connection refused]', False, 'generic', 'transient'),
    ('aiohttp-429', SDK, "aiohttp.client_exceptions.ClientResponseError: 429, message='Too Many Requests', url='https://api.example.com/v1/search'", False, 'generic', 'transient'),
    ('aiohttp-disconnected', SDK, 'aiohttp.client_exceptions.ServerDisconnectedError: Server disconnected', False, 'generic', 'ambiguous'),
    # --- generic: node fetch ---
    ('node-fetch-failed', SDK, 'TypeError: fetch failed', False, 'generic', 'transient'),
    ('node-fetch-eai', SDK, 'FetchError: request to https://registry.example.com/pkg failed, reason: getaddrinfo EAI_AGAIN registry.example.com', False, 'generic', 'transient'),
    ('node-hang-up', SDK, 'Error: socket hang up', False, 'generic', 'transient'),
    ('node-econnrefused', SDK, 'Error: connect ECONNREFUSED 127.0.0.1:5432', False, 'generic', 'transient'),
    ('node-abort', SDK, 'AbortError: The operation was aborted due to timeout', False, 'generic', 'ambiguous'),
    # --- generic: gRPC ---
    ('grpc-python-unavailable', SDK, 'grpc._channel._InactiveRpcError: <_InactiveRpcError of RPC that terminated with:\n\tstatus = StatusCode.UNAVAILABLE\n\tdetails = "failed to connect to all addresses"\n>', False, 'generic', 'transient'),
    ('grpc-node-deadline', SDK, 'Error: 4 DEADLINE_EXCEEDED: Deadline exceeded after 5.002s', False, 'generic', 'transient'),
    ('grpc-node-invalid', SDK, "Error: 3 INVALID_ARGUMENT: field 'page_size' must be positive", False, 'generic', 'fixable'),
    ('grpc-node-denied', SDK, 'Error: 7 PERMISSION_DENIED: caller lacks storage.objects.get', False, 'generic', 'unrecoverable'),
    ('grpc-node-unauthenticated', SDK, 'Error: 16 UNAUTHENTICATED: Request had invalid authentication credentials.', False, 'generic', 'unrecoverable'),
    ('grpc-node-exhausted', SDK, "Error: 8 RESOURCE_EXHAUSTED: Quota exceeded for quota metric 'Read requests'", False, 'generic', 'transient'),
    ('grpc-go-not-a-prefix', SDK, 'rpc error: code = Unavailable desc = connection error', False, None, None),
    # --- generic: JSON and JSON-RPC ---
    ('json-32601', SDK, '{"error":{"code":-32601,"message":"Method not found"}}', False, 'generic', 'fixable'),
    ('json-32602-spaced', SDK, '{"error": {"code": -32602, "message": "Invalid params: missing field `uri`"}}', False, 'generic', 'fixable'),
    ('json-rate-limit', SDK, '{"error": "rate limit exceeded, retry in 20s"}', False, 'generic', 'transient'),
    ('json-api-key', SDK, '{"error":"Incorrect API key provided: sk-abc***"}', False, 'generic', 'unrecoverable'),
    ('json-reverted', SDK, '{"error": {"code": -32000, "message": "execution reverted"}}', False, 'generic', 'ambiguous'),
    ('jsonrpc-envelope-not-a-prefix', SDK, '{"jsonrpc":"2.0","id":4,"error":{"code":-32601,"message":"Method not found"}}', False, None, None),
    # --- generic: HTTP ---
    ('http-error-503', SDK, 'HTTP Error 503: Service Unavailable', False, 'generic', 'transient'),
    ('http-error-404', SDK, 'HTTP Error 404: Not Found', False, 'generic', 'ambiguous'),
    ('http-400', SDK, "HTTP 400 Bad Request: 'limit' is not of type 'integer'", False, 'generic', 'fixable'),
    ('http-502', SDK, 'HTTP 502 Bad Gateway', False, 'generic', 'transient'),
    # --- a command's own timeout is not made transient by the wider words ---
    ('command-timeout', SDK, 'Error: Command timed out after 120 seconds', False, 'generic', 'ambiguous'),
    ('command-timeout-common-word', SDK, 'Error: execution timed out after 30s (ETIMEDOUT)', False, 'generic', 'transient'),
    ('command-timeout-masks-wider', SDK, 'Error: Command timed out after 60s; last output: curl: (7) Connection refused', False, 'generic', 'ambiguous'),
    ('command-timeout-other-kinds', SDK, 'Error: command timeout while waiting; validation error for args', False, 'generic', 'fixable'),
    # --- only the first 4,096 characters are classified ---
    ('classify-window-inside', SDK, 'Error: build failed\n' + 'x' * 4000 + ' Permission denied', False, 'generic', 'unrecoverable'),
    ('classify-window-outside', SDK, 'Error: build failed\n' + 'x' * 4100 + ' Permission denied', False, 'generic', 'ambiguous'),
    # --- the spec's exception-name prefix also matches a YAML key ending in timeout ---
    ('yaml-timeout-key', SDK, 'read_timeout: 10\nretries: 3', False, 'generic', 'ambiguous'),
    # --- successes and texts that must not be detected ---
    ('ok-grep', SDK, 'Found 3 matches for "Error:" in src/', False, None, None),
    ('ok-json-error-null', SDK, '{"error": null, "data": {"id": 7}}', False, None, None),
    ('ok-json-error-empty', SDK, '{"error": ""}', False, None, None),
    ('ok-json-error-false', SDK, '{"error": false, "items": []}', False, None, None),
    ('ok-json-error-null-compact', SDK, '{"error":null}', False, None, None),
    ('ok-json-errors-key', SDK, '{"errors": []}', False, None, None),
    ('ok-http-status-line', SDK, 'HTTP/1.1 404 Not Found\nContent-Type: text/html', False, None, None),
    ('ok-http-404-mid-text', SDK, 'The endpoint returns HTTP 404 when the id is unknown; see docs/api.md.', False, None, None),
    ('ok-status-500-mid', SDK, 'Status: 500 Internal Server Error', False, None, None),
    ('ok-ls-error-files', SDK, 'ErrorBoundary.tsx\nErrorPage.tsx\nindex.ts', False, None, None),
    ('ok-errors-count', SDK, 'Errors: 0, Warnings: 2', False, None, None),
    ('ok-error-words-mid', SDK, 'All 12 tests passed. The log mentions Error: ECONNRESET once, from a retry that succeeded.', False, None, None),
    ('ok-timeout-camel', SDK, 'timeoutMs: 3000', False, None, None),
    ('ok-empty', SDK, '', False, None, None),
    ('ok-grep-line', SDK, 'error_handler.py:14:    raise ValueError(msg)', False, None, None),
    ('ok-is-error-false', SDK, 'Wrote 12 bytes to notes.txt', False, None, None),
]
# fmt: on


@pytest.mark.parametrize(
    ("user_agent", "text", "is_error", "rule", "kind"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_detection_case(user_agent, text, is_error, rule, kind):
    assert detect_rule(text, is_error, user_agent) == rule
    message = Message(role="tool", content=text, tool_call_id="call_1", is_error=is_error)
    failures = detect((Message(role="user", content="go"), message), user_agent)
    if rule is None:
        assert failures == ()
    else:
        assert [(f.message, f.rule, f.kind) for f in failures] == [(1, rule, kind)]
        assert classify(text, rule) == kind


def test_there_are_enough_cases():
    assert len(CASES) >= 75
    assert len({c[0] for c in CASES}) == len(CASES)
    assert sum(1 for c in CASES if c[4] is None) >= 20


def test_text_parts_are_joined_by_a_newline():
    # Multi-part tool content: the text parts joined by "\n"; image parts ignored. The
    # second part starts a line, but only the start of the whole text is a generic prefix.
    content = (
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
        {"type": "text", "text": "Screenshot saved."},
        {"type": "text", "text": "Error: Permission denied"},
    )
    message = Message(role="tool", content=content, tool_call_id="c")
    assert detect((message,), SDK) == ()
    first = Message(role="tool", content=tuple(reversed(content)), tool_call_id="c")
    [failure] = detect((first,), SDK)
    assert (failure.rule, failure.kind) == ("generic", "unrecoverable")


def test_only_tool_messages_are_examined():
    messages = (
        Message(role="user", content="Error: EACCES"),
        Message(role="assistant", content="Error: EACCES"),
        Message(role="system", content="Error: EACCES"),
    )
    assert detect(messages, SDK) == ()


def test_client_error_kind_wins_over_text_rules():
    messages = (
        Message(role="tool", content="Error: EACCES", tool_call_id="a", error_kind="transient"),
        Message(role="tool", content="all good", tool_call_id="b", error_kind="fixable"),
        Message(role="tool", content="x", tool_call_id="c", is_error=True, error_kind="ambiguous"),
    )
    got = [(f.message, f.rule, f.kind) for f in detect(messages, QWEN)]
    assert got == [(0, "client", "transient"), (1, "client", "fixable"), (2, "client", "ambiguous")]


def test_agent_marker_is_a_case_sensitive_substring():
    text = "File not found: a.txt"
    assert detect_rule(text, False, "Mozilla/5.0 QwenCode/1.2 extra") == "qwen-notfound"
    assert detect_rule(text, False, "qwencode/1.2") is None  # generic: no prefix matches
    assert detect_rule(text, False, "Codex Desktop") is None
    assert detect_rule("command timed out", False, "my-codex-wrapper/2") == "codex-timeout"


def test_json_nested_deeper_than_python_allows_is_no_crash():
    deep = '{"a":' * 100000 + "1" + "}" * 100000
    assert detect_rule(deep, False, SDK) is None
    assert detect_rule('{"query":' + "[" * 100000 + "]" * 100000 + "}", False, SDK) is None
