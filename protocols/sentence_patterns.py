"""A domain's entity patterns read sentences in any script: ``\\w``, ``\\d`` and ``\\s`` as Python's ``re``.

RE2's ``\\w``, ``\\d`` and ``\\s`` are ASCII (Perl's classes; RE2 has no flag that widens them),
and a domain's entity ``patterns`` are searched in a person's sentence (case and accents
folded, ``protocols.intent.fold``). Folding makes ``relatório`` ASCII, but not ``rør``,
``Straße``, ``выход`` or ``東京``: ``(?P<value>[\\w./~-]+/?)`` took ``./`` out of "into the folder
./выход", and the files were written to the wrong folder without a word. A domain's author
writes Python, whose ``re`` reads these classes as Unicode, so they are read so here:

* ``\\w`` is a letter, a mark, a number or ``_`` (``[\\p{L}\\p{M}\\p{N}_]``; Python's ``\\w`` plus
  the marks a Devanagari or decomposed word carries), ``\\W`` anything else;
* ``\\d`` is a decimal digit of any script (``\\p{Nd}``: Python's ``\\d``), ``\\D`` anything else;
* ``\\s`` is what ``str.isspace`` holds (the no-break space and U+3000 too), ``\\S`` anything else.

``\\b`` and ``\\B`` stay ASCII: RE2 has no lookaround to build a Unicode boundary from (write
``(?:^|[^\\w])`` where a word may begin with a letter outside ASCII). A negated class inside a
bracket (``[\\W_]``, ``[^\\S]``) has no Unicode spelling in a bracket, so such a pattern is
refused, saying how to write it. ``\\Q...\\E`` stays literal. A Unicode ``\\w`` costs about
1,450 RE2 instructions against 13 (what a domain's patterns may compile to is bounded:
``protocols.domain``).
"""

from __future__ import annotations

__all__ = ["unicode_classes"]

_WORD = r"\p{L}_\p{M}\p{N}"  # a class escape at each end: [\w-z] stays no range
_DIGIT = r"\p{Nd}"
_SPACE = r"\s\x{1c}-\x{1f}\x{85}\v\p{Z}"  # str.isspace: RE2's \s lacks \v and all of these

#: A class escape's members (inside a bracket) and whether it is the negated one.
_CLASSES = {"w": (_WORD, False), "W": (_WORD, True), "d": (_DIGIT, False), "D": (_DIGIT, True),
            "s": (_SPACE, False), "S": (_SPACE, True)}


def unicode_classes(pattern: str) -> str:
    """``pattern`` with its ``\\w``, ``\\d``, ``\\s`` (and negations) spelt as Unicode classes.

    Raises:
        ValueError: for ``\\W``, ``\\D`` or ``\\S`` inside a bracket (no Unicode spelling there);
            the text names the escape, never the pattern.
    """
    out: list[str] = []
    i, n = 0, len(pattern)
    in_class = False
    while i < n:
        ch = pattern[i]
        if ch == "\\" and i + 1 < n:
            nxt = pattern[i + 1]
            if nxt == "Q":  # literal text up to \E: copied as it is
                end = pattern.find("\\E", i + 2)
                end = n if end < 0 else end + 2
                out.append(pattern[i:end])
                i = end
                continue
            if nxt in _CLASSES:
                members, negated = _CLASSES[nxt]
                if in_class and negated:
                    raise ValueError(f"\\{nxt} inside [...] has no Unicode form: write [^...] with the positive "
                                     f"class (\\{nxt.lower()}) instead")
                out.append(members if in_class else f"[{'^' if negated else ''}{members}]")
            else:
                out.append(pattern[i:i + 2])
            i += 2
            continue
        if in_class:
            if ch == "[" and pattern.startswith("[:", i):  # a POSIX class, [:alpha:]: its ] is its own
                end = pattern.find(":]", i + 2)
                end = n if end < 0 else end + 2
                out.append(pattern[i:end])
                i = end
                continue
            if ch == "]":
                in_class = False
        elif ch == "[":
            in_class = True
            out.append(ch)
            i += 1
            if i < n and pattern[i] == "^":
                out.append("^")
                i += 1
            if i < n and pattern[i] == "]":  # a leading ] is a member, not the end
                out.append("]")
                i += 1
            continue
        out.append(ch)
        i += 1
    return "".join(out)
