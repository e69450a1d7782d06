"""The deterministic matcher: the embedded default intent adapter, built from the catalogue alone.

Its index holds, per goal, *phrases* (the goal's and its capabilities' ``intent_hints``
keywords, its enum values and their synonyms) and *example words* (the content words of its
example sentences; a value the example marks in ``[brackets]`` is left out). A sentence is
folded (case, accents), cut into words, each word reduced by a light stem (a final ``s``)
and, when it is in no phrase, corrected to the nearest known word by rapidfuzz (a typo such
as "cotaçao" or "expotr" still counts, for less).

Scoring: each phrase found adds ``strength x quality / n`` to its goal's score, where
strength is 0.95 for a keyword (0.97 for a phrase of several words), 0.6 for an example
word, quality is 1 for an exact word and the fuzzy ratio for a corrected one, and ``n`` is
how many goals share the phrase (a word every goal has says nothing). The confidence of the
best goal is ``1 - exp(-3.2 x margin)``, the margin being its score minus the runner-up's:
one distinctive keyword alone gives 0.952, a keyword and an example word 0.993, two goals
with the same evidence 0. So 0.94 (the default gate) means "a distinctive keyword at
least, and no rival with as much".

Entities are then read for that goal only: enum and boolean entities from their synonyms,
``patterns`` where the schema gives them, numbers and ISO dates by shape, and a ``string``
entity from the *rest*: the user's own words once the sentence's little words, the goal's
vocabulary and what other entities took are removed (a ``many`` entity splits it on "e",
"and" and commas).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rapidfuzz import fuzz, process

from ontoflow.actors.intent._adapter import IntentAdapter
from ontoflow.actors.intent._catalogue import Catalogue
from ontoflow.actors.intent._text import CONJUNCTIONS, STOPWORDS, Token, is_follow_up, tokens
from ontoflow.protocols.domain import GoalSpec
from ontoflow.protocols.patterns import compile_pattern
from ontoflow.protocols.intent import Alternative, IntentOutput, Turn, fold

__all__ = ["Matcher"]

KEYWORD, PHRASE, EXAMPLE = 0.95, 0.97, 0.6
SLOPE = 3.2
FUZZY_CUTOFF = 82.0
#: The confidence of a follow-up ("e da Petrobras?") read against the previous turn's goal.
FOLLOW_UP_CONFIDENCE = 0.96
_BRACKETED = re.compile(r"\[[^\]]*\]")
_ISO_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
_NUMBER = re.compile(r"^\d+(?:[.,]\d+)?$")
_SEPARATOR = re.compile(r"[,;]")
_FUZZY_CACHE_MAX = 8192
#: Whole answers kept per matcher (so per catalogue: a new catalogue is a new matcher). The
#: same sentence in the same context is common at an edge (a client retrying, a greeting, a
#: health check): it is answered from here, an ``IntentOutput`` being immutable.
_ANSWER_CACHE_MAX = 4096


def _stem(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def _stems(text: str) -> tuple[str, ...]:
    return tuple(_stem(t[0]) for t in tokens(fold(text)))


@dataclass(frozen=True, slots=True)
class _Phrase:
    words: tuple[str, ...]
    goal: int
    strength: float  # before sharing; 0 for words that are not goal evidence (booleans)
    entity: str | None = None
    value: Any = None
    weight: float = 0.0  # strength / how many goals share the words: what a hit adds


@dataclass(frozen=True, slots=True)
class _GoalEntities:
    """A goal's entities, sorted by how the matcher reads them (computed once)."""

    choices: tuple[str, ...]  # enum and boolean entities: read from their synonyms
    patterns: tuple[tuple[str, str, tuple[Any, ...]], ...]  # (name, type, compiled by RE2)
    numbers: tuple[str, ...]
    dates: tuple[str, ...]
    free: tuple[str, ...]  # string entities without patterns, required first


@dataclass(slots=True)
class _Hit:
    start: int
    end: int
    phrase: _Phrase
    quality: float


@dataclass(slots=True)
class _Index:
    goals: list[tuple[str, GoalSpec]] = field(default_factory=list)
    by_first: dict[str, list[_Phrase]] = field(default_factory=dict)
    shared: dict[tuple[str, ...], int] = field(default_factory=dict)
    vocab: list[str] = field(default_factory=list)
    goal_words: list[frozenset[str]] = field(default_factory=list)
    entities: list[_GoalEntities] = field(default_factory=list)


def _goal_entities(goal: GoalSpec) -> _GoalEntities:
    schema = goal.entities_schema
    free = [n for n, e in schema.items() if e.type == "string" and not e.patterns]
    free.sort(key=lambda n: not schema[n].required)
    return _GoalEntities(
        choices=tuple(n for n, e in schema.items() if e.type in ("enum", "boolean")),
        # RE2 (linear in the sentence): a domain's pattern may come from a peer, the sentence from a client.
        patterns=tuple((n, e.type, tuple(compile_pattern(p, unicode=True) for p in e.patterns)) for n, e in schema.items() if e.patterns and e.type not in ("enum", "boolean")),
        numbers=tuple(n for n, e in schema.items() if e.type == "number" and not e.patterns),
        dates=tuple(n for n, e in schema.items() if e.type == "date" and not e.patterns),
        free=tuple(free),
    )


def _build(catalogue: Catalogue) -> _Index:
    index = _Index()
    phrases: list[_Phrase] = []
    for manifest, goal in catalogue.goals():
        g = len(index.goals)
        index.goals.append((manifest.domain, goal))
        hints = catalogue.hints(goal)
        own: list[_Phrase] = []
        for keyword in [goal.id.replace("_", " ").lower(), *hints.keywords]:
            words = _stems(keyword)
            if words:
                own.append(_Phrase(words, g, PHRASE if len(words) > 1 else KEYWORD))
        for name, spec in goal.entities_schema.items():
            if spec.type == "enum":
                for value in spec.values:
                    for text in [value.replace("_", " "), *spec.synonyms.get(value, [])]:
                        words = _stems(text)
                        if words:
                            own.append(_Phrase(words, g, PHRASE if len(words) > 1 else KEYWORD, name, value))
            elif spec.type == "boolean":
                for key, texts in spec.synonyms.items():
                    for text in texts:
                        words = _stems(text)
                        if words:
                            own.append(_Phrase(words, g, 0.0, name, key == "true"))
        vocab = {w for p in own for w in p.words}
        example_words = {
            w for ex in hints.examples for w in _stems(_BRACKETED.sub(" ", ex))
            if w not in STOPWORDS and not _NUMBER.match(w)
        }
        for w in sorted(example_words - vocab):
            own.append(_Phrase((w,), g, EXAMPLE))
        phrases.extend(dict.fromkeys(own))
        index.goal_words.append(frozenset(vocab | example_words))
        index.entities.append(_goal_entities(goal))
    goals_of: dict[tuple[str, ...], set[int]] = {}
    for p in phrases:
        if p.strength > 0:
            goals_of.setdefault(p.words, set()).add(p.goal)
    index.shared = {words: len(gs) for words, gs in goals_of.items()}
    for p in phrases:
        weighted = _Phrase(p.words, p.goal, p.strength, p.entity, p.value, p.strength / index.shared.get(p.words, 1))
        index.by_first.setdefault(p.words[0], []).append(weighted)
    index.vocab = sorted({w for p in phrases for w in p.words if len(w) >= 4})
    return index


class Matcher(IntentAdapter):
    """The deterministic intent adapter (see the module docstring for how it scores).

    Args:
        catalogue: the domains and capabilities to match against; the index is built once.
    """

    name = "matcher"

    def __init__(self, catalogue: Catalogue) -> None:
        self.catalogue = catalogue
        self._index = _build(catalogue)
        self._vocab_set = frozenset(self._index.vocab)
        self._fuzzy_cache: dict[str, tuple[str, float] | None] = {}
        # Each word's stem and correction, once per word seen (bounded).
        self._word_cache: dict[str, tuple[str, float]] = {}
        # (sentence, what of the previous turn the answer depends on) -> the answer (bounded).
        self._answers: dict[tuple[Any, ...], IntentOutput] = {}

    async def classify(self, text: str, *, previous: Turn | None = None) -> IntentOutput:
        """See :meth:`IntentAdapter.classify`; this one never waits."""
        return self.match(text, previous=previous)

    # -- matching ------------------------------------------------------------------------------

    def _correct(self, word: str) -> tuple[str, float]:
        """``word`` itself (quality 1) or the nearest known word and its ratio."""
        if word in self._index.by_first or word in self._vocab_set or len(word) < 4 or word in STOPWORDS or word[0].isdigit():
            return word, 1.0
        if word in self._fuzzy_cache:
            found = self._fuzzy_cache[word]
        else:
            best = process.extractOne(word, self._index.vocab, scorer=fuzz.ratio, score_cutoff=FUZZY_CUTOFF)
            found = (best[0], best[1] / 100.0) if best else None
            if len(self._fuzzy_cache) >= _FUZZY_CACHE_MAX:
                self._fuzzy_cache.clear()
            self._fuzzy_cache[word] = found
        return found if found is not None else (word, 1.0)

    def _hits(self, words: Sequence[str], qualities: Sequence[float]) -> list[_Hit]:
        hits: list[_Hit] = []
        n = len(words)
        by_first = self._index.by_first
        for i, w in enumerate(words):
            for p in by_first.get(w, ()):
                k = len(p.words)
                if k == 1:
                    hits.append(_Hit(i, i + 1, p, qualities[i]))
                elif i + k <= n and tuple(words[i : i + k]) == p.words:
                    hits.append(_Hit(i, i + k, p, min(qualities[i : i + k])))
        return hits

    def match(self, text: str, *, previous: Turn | None = None) -> IntentOutput:
        """Classify ``text``: the best goal, its entities, a confidence and the runners-up.

        Args:
            text: the user's sentence.
            previous: the session's previous turn; a sentence that opens like a follow-up
                ("e da Petrobras?") or carries no goal evidence at all is read against it.
        """
        # What of the previous turn a follow-up reads: its goal and what it asked for.
        key = (text,) if previous is None else (text, previous.domain, previous.goal, *previous.pending)
        answer = self._answers.get(key)
        if answer is None:
            answer = self._match(text, previous)
            if len(self._answers) >= _ANSWER_CACHE_MAX:
                del self._answers[next(iter(self._answers))]  # the oldest first
            self._answers[key] = answer
        return answer

    def _match(self, text: str, previous: Turn | None) -> IntentOutput:
        folded = fold(text)
        toks = tokens(folded)
        cache = self._word_cache
        words: list[str] = []
        qualities: list[float] = []
        for t in toks:
            found = cache.get(t[0])
            if found is None:
                found = self._correct(_stem(t[0]))
                if len(cache) >= _FUZZY_CACHE_MAX:
                    cache.clear()
                cache[t[0]] = found
            words.append(found[0])
            qualities.append(found[1])
        hits = self._hits(words, qualities)
        scores: dict[int, float] = {}
        seen: set[tuple[int, tuple[str, ...]]] = set()
        covered: set[tuple[int, int]] = set()
        # Longest phrases first, so a word inside "maiores altas" is not counted again as "altas".
        ordered = sorted(hits, key=_longest_first) if any(h.end - h.start > 1 for h in hits) else hits
        for h in ordered:
            p = h.phrase
            if p.weight <= 0:
                continue
            g = p.goal
            key = (g, p.words)
            if key in seen:
                continue
            if h.end - h.start == 1:
                if (g, h.start) in covered:
                    continue
                covered.add((g, h.start))
            else:
                span = [(g, i) for i in range(h.start, h.end)]
                if not covered.isdisjoint(span):
                    continue
                covered.update(span)
            seen.add(key)
            scores[g] = scores.get(g, 0.0) + p.weight * h.quality
        ranked = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
        if previous is not None and (not ranked or previous.pending or is_follow_up(text)):
            found = self._follow_up(text, folded, toks, words, hits, previous)
            if found is not None:
                return found
        if not ranked:
            return IntentOutput(primary_domain="", goal="", confidence=0.0, original_query=text)
        best, s1 = ranked[0]
        s2 = ranked[1][1] if len(ranked) > 1 else 0.0
        confidence = round(1.0 - math.exp(-SLOPE * (s1 - s2)), 4)
        domain, goal = self._index.goals[best]
        total = sum(s for _, s in ranked)
        # A runner-up carries its share of the evidence: how much of what was said pointed at it.
        alternatives = [
            Alternative(domain=self._index.goals[g][0], goal=self._index.goals[g][1].id, confidence=round(s / total, 4))
            for g, s in ranked[1:4]
        ]
        entities = self._entities(best, goal, text, folded, toks, words, hits)
        return IntentOutput(
            primary_domain=domain, goal=goal.id, confidence=confidence, entities=entities,
            original_query=text, alternatives=alternatives,
        )

    def _follow_up(
        self, text: str, folded: str, toks: list[Token], words: list[str], hits: list[_Hit], previous: Turn
    ) -> IntentOutput | None:
        g = next((i for i, (d, goal) in enumerate(self._index.goals) if d == previous.domain and goal.id == previous.goal), None)
        if g is None:
            return None
        goal = self._index.goals[g][1]
        entities = self._entities(g, goal, text, folded, toks, words, hits)
        if not entities:
            return None
        # An opening such as "e da ..." or the answer to a question just asked: as sure as a keyword.
        confidence = FOLLOW_UP_CONFIDENCE if is_follow_up(text) or any(e in entities for e in previous.pending) else 0.9
        return IntentOutput(primary_domain=previous.domain, goal=goal.id, confidence=confidence, entities=entities, original_query=text)

    # -- entities ------------------------------------------------------------------------------

    def _entities(
        self, g: int, goal: GoalSpec, text: str, folded: str, toks: list[Token], words: list[str], hits: list[_Hit]
    ) -> dict[str, Any]:
        entities: dict[str, Any] = {}
        consumed: set[int] = set()
        for h in hits:
            if h.phrase.goal == g:
                consumed.update(range(h.start, h.end))
        plan = self._index.entities[g]
        for name in plan.choices:
            own = [h for h in hits if h.phrase.goal == g and h.phrase.entity == name]
            if own:
                longest = max(own, key=lambda h: (h.end - h.start, -h.start))
                rivals = {h.phrase.value for h in own if h.end - h.start == longest.end - longest.start}
                if len(rivals) == 1:  # two values said equally strongly: leave it to the default
                    entities[name] = longest.phrase.value
        for name, kind, patterns in plan.patterns:
            for pattern in patterns:
                m = pattern.search(folded)
                if m is not None and m.group("value") and m.group("value").strip():
                    start, end = m.span(pattern.groupindex["value"])  # RE2's span takes a group's number only
                    raw = text[start:end].strip()
                    value = _as_number(raw) if kind == "number" else raw
                    if value is not None:
                        entities[name] = value
                        consumed.update(i for i, t in enumerate(toks) if t[1] >= start and t[2] <= end)
                        break
        for name in plan.numbers:
            for i, t in enumerate(toks):
                if i not in consumed and _NUMBER.match(t[0]):
                    entities[name] = _as_number(t[0])
                    consumed.add(i)
                    break
        for name in plan.dates:
            m = _ISO_DATE.search(text)
            if m is not None:
                entities[name] = m.group()
                consumed.update(i for i, t in enumerate(toks) if t[1] >= m.start() and t[2] <= m.end())
        # The rest of the sentence goes to the first string entity still empty (required first).
        free = [n for n in plan.free if n not in entities]
        if free:
            rest = self._rest(g, text, toks, words, consumed)
            if rest:
                spec = goal.entities_schema[free[0]]
                entities[free[0]] = (rest if len(rest) > 1 else rest[0]) if spec.many else text[rest_span(rest, text)]
        return entities

    def _rest(self, g: int, text: str, toks: list[Token], words: list[str], consumed: set[int]) -> list[str]:
        """The user's own words left over, one string per list item (split on "e", "and", ",")."""
        vocab = self._index.goal_words[g]
        segments: list[list[Token]] = [[]]
        previous_end = 0
        separators = "," in text or ";" in text
        for i, t in enumerate(toks):
            if t[0] in CONJUNCTIONS or (separators and _SEPARATOR.search(text, previous_end, t[1])):
                segments.append([])
            previous_end = t[2]
            if t[0] in CONJUNCTIONS or i in consumed or t[0] in STOPWORDS or words[i] in STOPWORDS or words[i] in vocab:
                continue
            segments[-1].append(t)
        return [text[seg[0][1] : seg[-1][2]] for seg in segments if seg]


def _longest_first(h: _Hit) -> tuple[int, int]:
    return (h.start - h.end, h.start)


def rest_span(items: list[str], text: str) -> slice:
    """The span of ``text`` from the first item to the last (a single value keeps inner words)."""
    start = text.find(items[0])
    end = text.rfind(items[-1]) + len(items[-1])
    return slice(start, end)


def _as_number(raw: str) -> int | float | None:
    cleaned = raw.replace(",", ".")
    try:
        return int(cleaned)
    except ValueError:
        try:
            return float(cleaned)
        except ValueError:
            return None
