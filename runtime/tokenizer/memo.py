"""A bounded memo table for per-word / per-chunk token ids."""

from __future__ import annotations

from collections.abc import Callable

DEFAULT_LIMIT = 1 << 17


class Memo(dict):
    """dict from a text to its token ids, filled on first lookup by `compute`.

    `memo[key]` computes and stores missing keys, so `map(memo.__getitem__, keys)` runs
    at C speed for keys already seen. When `limit` entries are stored, the table is
    cleared rather than grown. Safe to share between threads: a race at worst computes a
    key twice, and every computation of a key gives the same ids.
    """

    __slots__ = ("compute", "limit")

    def __init__(self, compute: Callable[[str], list[int]], limit: int = DEFAULT_LIMIT) -> None:
        super().__init__()
        self.compute = compute
        self.limit = limit

    def __missing__(self, key: str) -> list[int]:
        value = self.compute(key)
        if len(self) >= self.limit:
            self.clear()
        self[key] = value
        return value
