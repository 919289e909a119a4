"""Errors a user can cause and act on. Each message names the file or field at fault."""

from __future__ import annotations


class ExactserveError(Exception):
    """Base of every error exactserve reports to a user instead of a traceback."""


class GGUFError(ExactserveError, ValueError):
    """A GGUF file is malformed, truncated or lacks a required field."""


class UnsupportedError(ExactserveError, ValueError):
    """The file is well formed but uses something exactserve does not support."""


class TemplateError(ExactserveError, ValueError):
    """A chat template failed to compile or raised while rendering.

    The message names the template and carries the template's own message, e.g.
    "chat template 'default' raised: System role not supported".
    """


class PromptError(ExactserveError, ValueError):
    """A chat cannot be encoded without risking message text becoming control tokens."""
