"""The one-tier word lookups that the wide rules' merged lists stand in for
(lexicons.FIRST_TIERS for tiers 1-4, lexicons.SIXTH_TIER for tier 6): built here, for the
tests that check the merged lists give each tier's answer."""

from __future__ import annotations

from exactserve.toolerr.wide import lexicons
from exactserve.toolerr.wide import words as w
from exactserve.toolerr.wide.probes import Lexicon

DENIAL = Lexicon(lexicons.WORDS["denial"], w.MARKERS)
QUOTA = Lexicon(lexicons.WORDS["quota"], w.MARKERS)
RATE_LIMIT = Lexicon(lexicons.WORDS["rate"], w.MARKERS)
OWN_TIMEOUT = Lexicon(lexicons.WORDS["timeout"], w.MARKERS)
CONDITIONS = Lexicon(tuple(word for word, _ in lexicons.WORDS["conditions"]), w.MARKERS)
UNSURE_NETWORK = Lexicon(lexicons.WORDS["unsure"], w.MARKERS)
PERMISSION = Lexicon(lexicons.WORDS["permission"], w.MARKERS)
