"""The word lists' lookups (toolerr/wide/probes.py) give the plain loops' answers: the first
present word in list order, or every present word, whether or not the tiers of one
classification share their memo of markers. A marker is scanned only once a word filed under
it could occur (its two rarest characters do), so a text without them leaves it unscanned."""

from __future__ import annotations

from corpus_records import TUNING_SPLITS, read_split

from exactserve.toolerr.wide import lexicons

TEXTS = [r["text"] for split in TUNING_SPLITS for r in read_split(split)]
PIECES = [
    piece
    for text in TEXTS
    for piece in (text, text[:300], text[-300:], text[len(text) // 3 :], text.lower(), text.upper())
]
# In the order classify.py consults them, sharing one memo of markers.
CLASSIFICATION_LOOKUPS = (
    lexicons.FIRST_TIERS,
    lexicons.SIXTH_TIER,
    lexicons.UNRECOVERABLE_WORDS,
    lexicons.FIXABLE_THEN_MARKERS,
)


def _plain_present(words: tuple[str, ...], text: str) -> list[int]:
    return [index for index, word in enumerate(words) if word in text]


def test_the_corpus_is_read():
    assert len(TEXTS) > 700


def test_lookups_with_a_shared_memo_give_the_plain_loops_answers():
    for piece in PIECES:
        seen: dict[str, bool] = {}
        for lexicon in CLASSIFICATION_LOOKUPS:
            present = _plain_present(lexicon.words, piece)
            first = lexicon.words[present[0]] if present else None
            assert lexicon.first(piece, seen) == first
            assert lexicon.present_at(piece, seen) == present
            assert lexicon.first_at(piece, seen) == (present[0] if present else lexicon.size)
        assert all(hit == (marker in piece) for marker, hit in seen.items())


def test_lookups_without_a_memo_give_the_plain_loops_answers():
    lookups = (*CLASSIFICATION_LOOKUPS, lexicons.FAILURE_PHRASES, lexicons.RETRY_AFTER)
    for piece in PIECES:
        for lexicon in lookups:
            present = _plain_present(lexicon.words, piece)
            assert lexicon.present_at(piece) == present
            assert lexicon.first(piece) == (lexicon.words[present[0]] if present else None)


def test_a_marker_is_not_scanned_when_no_word_under_it_can_occur():
    """`_TIMEOUT` and `::ERR_` file upper-case words (`UND_ERR_CONNECT_TIMEOUT`,
    `::ERR_CONNECTION_RESET`): a lower-case text holds none of their rarest characters."""
    seen: dict[str, bool] = {}
    assert lexicons.SIXTH_TIER.present_at("no network here", seen) == []
    assert "_TIMEOUT" not in seen
    assert "::ERR_" not in seen
    seen = {}
    text = "Error: ::ERR_CONNECTION_RESET while loading"
    assert lexicons.SIXTH_TIER.words[lexicons.SIXTH_TIER.present_at(text, seen)[0]] == (
        "::ERR_CONNECTION_RESET"
    )
    assert seen["::ERR_"] is True
