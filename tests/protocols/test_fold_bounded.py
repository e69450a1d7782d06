"""``fold`` keeps the foldings it works out up to a bound: a client sending every character of
Unicode, 2,000 to a sentence (556 HTTP requests, each a valid sentence), left 1.1 million of
them, 211 MB, in the daemon (and in each worker) for as long as it ran."""

from __future__ import annotations

import unicodedata

from ontoflow.protocols import intent
from ontoflow.protocols.intent import MAX_INPUT_CHARS, fold


def _folded(ch: str) -> str:
    """One character's folding, worked out afresh (the rule ``fold`` keeps)."""
    base = unicodedata.normalize("NFKD", ch)
    low = next((c for c in base if not unicodedata.combining(c)), ch).lower()
    return low[0] if low else ch


def test_every_character_of_unicode_leaves_a_bounded_table() -> None:
    codes = [c for c in range(0x80, 0x110000) if not 0xD800 <= c < 0xE000]
    for start in range(0, len(codes), MAX_INPUT_CHARS):
        sentence = "".join(map(chr, codes[start : start + MAX_INPUT_CHARS]))
        assert len(fold(sentence)) == len(sentence)
    assert len(intent._FOLD) <= intent._FOLD_KEPT


def test_a_character_past_the_bound_folds_as_one_kept() -> None:
    for _ in range(2):  # the second time from the table, or worked out again past its bound
        assert fold("Cotação ÇÃO İstanbul 𝐀𝐁 ﬁ ǅ Ⅻ ＡＢ") == "".join(_folded(ch) for ch in "Cotação ÇÃO İstanbul 𝐀𝐁 ﬁ ǅ Ⅻ ＡＢ")
    assert fold("\U0010fffd\U000e0001") == "\U0010fffd\U000e0001"
