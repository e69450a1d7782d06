"""Words, for the matcher: tokens with their offsets, and the little words of Portuguese and English.

Everything works on :func:`ontoflow.protocols.intent.fold`-ed text (lower case, no accents),
whose offsets are those of the original, so an entity's value is cut from the user's own text.
The word lists are language, not domain knowledge: the words a sentence is built with
("qual", "the", "da"), the words that join a list ("e", "and"), and the openings of a
follow-up ("e da ...?", "what about ...?").
"""

from __future__ import annotations

import re

from ontoflow.protocols.intent import fold

__all__ = ["CONJUNCTIONS", "FOLLOW_UP_OPENINGS", "STOPWORDS", "Token", "is_follow_up", "tokens"]

#: A word is letters, marks and digits of any script: folding makes Portuguese ASCII, but not
#: ``Ørsted``, ``Łódź``, ``Газпром`` or ``東京``, which ASCII-only words cut to ``rsted`` or lost.
_WORD = re.compile(r"[^\W_]+(?:[._'-][^\W_]+)*")

#: Words that carry no goal and no entity, in either language (folded).
STOPWORDS = frozenset(
    """
    a o as os um uma uns umas de da do das dos d em na no nas nos num numa para pra pro por pelo pela
    pelos pelas com sem sobre ao aos qual quais quanto quanta quantos quantas que quem como onde quando
    e ou mas me mim meu minha meus minhas te se seu sua seus suas lhe nos voce voces eu ele ela eles elas
    isso isto esse essa este esta aquele aquela la ai aqui
    e eh sao foi ser estar esta estao ta tem ter tenho temos ha vai ir
    favor porfavor poderia pode podes possa quero queria gostaria preciso precisamos diga diz mostre mostra
    mostrar me de-me dar hoje agora atual atualmente ja tambem so apenas todos todas tudo
    the a an of to in on at for from by with about into is are was were be been being am do does did
    what which who whom how when where why please could would can will should shall may might
    i me my we our you your it its this that these those there here
    tell show give get let lets let's want wanna need like today now current currently also just all
    """.split()
)

#: Words that join the items of a list ("Nordea e Petrobras", "Nordea and Equinor").
CONJUNCTIONS = frozenset({"e", "and", "ou", "or", "&"})

#: How a follow-up that leans on the previous turn begins (folded, with a trailing space).
FOLLOW_UP_OPENINGS = (
    "e ", "e o ", "e a ", "e os ", "e as ", "e do ", "e da ", "e de ", "e quanto ", "e sobre ", "e em ", "e no ", "e na ",
    "e para ", "and ", "and the ", "and for ", "and in ", "what about ", "how about ", "and what about ", "now ", "agora ",
    "same for ", "o mesmo para ", "a mesma coisa para ",
)


#: A word of the folded text and where it sits: ``(text, start, end)``, offsets into the original.
Token = tuple[str, int, int]


def tokens(folded: str) -> list[Token]:
    """The words of ``folded`` text, with their offsets."""
    return [(m.group(), *m.span()) for m in _WORD.finditer(folded)]


def is_follow_up(text: str) -> bool:
    """Whether ``text`` opens like a follow-up to the previous turn ("e da Petrobras?")."""
    head = " ".join(fold(text).replace("?", " ").split()) + " "
    return head.startswith(FOLLOW_UP_OPENINGS)
