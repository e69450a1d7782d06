"""Which of a question's candidates a person's reply names ("NDA-FI.HE", "a segunda", "the 2nd").

A suspended run asks a question with candidates (two tickers for "Nordea"); the run accepts
as its answer a candidate, or one of the values of a candidate that is a map
(``engine._suspend.check_answer``). People answer less exactly: in another case, by position
("2", "a segunda", "the second one", "o último"), or by a word only one candidate holds
("Helsinki"). :func:`choose` turns such a reply into the exact answer the run accepts; a reply
that names no candidate, or several, is left to the run to refuse.

A candidate that is a map is answered by its first value, whichever of its values the reply
named (by convention the first is its key: ``{"symbol": "NDA-FI.HE", "name": ...,
"market": "FI"}`` answers ``"NDA-FI.HE"``, also to "FI"). A reply that only says to let the
question go ("cancel", "cancela", "never mind", "esquece") is told by :func:`says_cancel`, so
a person asked a question with candidates is never held in it (the edge cancels that run).
Pure: no I/O, no state.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ontoflow.actors.intent._text import STOPWORDS, tokens
from ontoflow.protocols.intent import fold

__all__ = ["choose", "says_cancel"]

#: Position words, folded, in Portuguese and English (1-based; -1 is the last).
_ORDINALS: dict[str, int] = {
    **{w: 1 for w in ("primeiro", "primeira", "first", "1st", "1o", "1a", "um", "uma", "one")},
    **{w: 2 for w in ("segundo", "segunda", "second", "2nd", "2o", "2a", "dois", "duas", "two")},
    **{w: 3 for w in ("terceiro", "terceira", "third", "3rd", "3o", "3a", "tres", "three")},
    **{w: 4 for w in ("quarto", "quarta", "fourth", "4th", "4o", "4a", "quatro", "four")},
    **{w: 5 for w in ("quinto", "quinta", "fifth", "5th", "5o", "5a", "cinco", "five")},
    **{w: -1 for w in ("ultimo", "ultima", "last")},
}

#: Words that come with a position and say nothing else ("a opção 2", "the second one").
_FILLER = frozenset({"opcao", "option", "numero", "number", "no", "nr", "one", "choice", "escolha", "quero", "prefiro",
                     "pick", "choose", "take", "i'll", "ill"})


#: Replies that let a question go, folded (Portuguese and English), as words or two-word phrases.
_CANCEL = frozenset({"cancel", "cancela", "cancelar", "cancele", "cancelo", "abort", "aborta", "abortar", "stop", "pare",
                     "parar", "nevermind", "never mind", "esquece", "esqueca", "forget it", "deixa pra la"})

#: Words that come with a cancel and say nothing else ("cancel it please", "pode cancelar").
_CANCEL_FILLER = frozenset({"ok", "okay", "entao", "so", "then", "thanks", "obrigado", "obrigada", "run", "question",
                            "pergunta", "tudo", "everything", "sim", "yes"})

#: A number with a sign, or a decimal one: a reply that reads as a position only without it.
_SIGNED_NUMBER = re.compile(r"[-+\u2212]\s*\d+(?:[.,]\d+)?|\d+[.,]\d+")


def _values(candidate: Any) -> list[Any]:
    return list(candidate.values()) if isinstance(candidate, Mapping) else [candidate]


def _answer(candidate: Any) -> Any:
    """The exact answer for ``candidate``: itself, or a map's first value."""
    if not isinstance(candidate, Mapping):
        return candidate
    values = list(candidate.values())
    return values[0] if values else candidate


def _position(words: list[str], count: int) -> int | None:
    """The 0-based position ``words`` name among ``count`` candidates, or None."""
    meant = [w for w in words if w not in STOPWORDS and w not in _FILLER]
    if len(meant) != 1:
        return None
    word = meant[0]
    # A few decimal digits: int() raised ValueError on a reply of 5,000 (its digit limit), and
    # would on a digit that is no decimal one (isdigit() passes "³" where folding left one).
    n = int(word) if word.isdecimal() and len(word) <= 6 else _ORDINALS.get(word)
    if n is None or n == 0 or n > count:
        return None
    return count - 1 if n == -1 else n - 1


def choose(reply: str, candidates: Sequence[Any]) -> Any | None:
    """The exact answer ``reply`` names among ``candidates``, or None when it names none (or
    several, or there are no candidates: then the reply goes as it is).

    Args:
        reply: what the person wrote.
        candidates: the question's candidates (values, or maps of values).
    """
    text = reply.strip()
    if not text or not candidates:
        return None
    exact = [c for c in candidates if any(v == text for v in _values(c))]
    if len(exact) == 1:
        return _answer(exact[0])
    folded = " ".join(fold(text).split())
    same = [c for c in candidates if any(isinstance(v, str) and " ".join(fold(v).split()) == folded for v in _values(c))]
    if len(same) == 1:
        return _answer(same[0])
    if _SIGNED_NUMBER.fullmatch(folded):
        return None  # "-1" is no position (the tokens would drop its sign and read "1")
    words = [w for w, _, _ in tokens(folded.replace("#", " ").replace("º", "o").replace("ª", "a"))]
    at = _position(words, len(candidates))
    if at is not None:
        return _answer(candidates[at])
    # A word only one candidate holds ("Helsinki", "FI"): every meaningful word of the reply
    # must be one of that candidate's words.
    meant = {w for w in words if w not in STOPWORDS and w not in _FILLER}
    if not meant:
        return None
    holding = []
    for candidate in candidates:
        held = {w for v in _values(candidate) if isinstance(v, str) for w, _, _ in tokens(fold(v))}
        held |= {p for w in held for p in w.replace(".", "-").split("-")}
        if meant <= held:
            holding.append(candidate)
    return _answer(holding[0]) if len(holding) == 1 else None


def says_cancel(reply: str) -> bool:
    """Whether ``reply`` only says to let a question go ("cancel", "Cancela!", "never mind",
    "pode cancelar"), in Portuguese or English; a reply that says anything more is not one."""
    words = [w for w, _, _ in tokens(fold(reply))]
    meant = " ".join(w for w in words if w not in STOPWORDS and w not in _CANCEL_FILLER)
    whole = " ".join(words)
    return bool(meant) and (meant in _CANCEL or whole in _CANCEL)
