"""The `wide` rule set (opt-in): detection and classification beyond the paper's rules,
for the failure shapes current agents and tools produce, with the evidence of each
decision. See `rules.py` for the order of the rules and docs/TOOLERR.md for the spec.
"""

from __future__ import annotations

from exactserve.toolerr.wide.classify import classify_wide
from exactserve.toolerr.wide.rules import Verdict, judge

__all__ = ["Verdict", "classify_wide", "judge"]
