"""How fast the deterministic matcher classifies: utterances per second on one core.

A catalogue of 50 goals in 5 domains is generated (made-up words, so no goal is easier than
another by accident of the language): each goal has keywords of one and two words, example
sentences, an enum entity with synonyms and a text entity. The utterances mix a goal's words
with the little words of both languages, an entity value, sometimes a typo, and one in ten
matches nothing. The matcher is built once; the clock runs only around the classification.

    python -m bench.intent_bench [--utterances 20000] [--json]

The process pins itself to one core when the platform allows it.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from typing import Any

import msgspec

from ontoflow.actors.intent import Catalogue, Matcher
from ontoflow.protocols import CapabilityMetadata, domain_from_data

__all__ = ["generate_catalogue", "generate_utterances", "measure_matcher"]

_SYLLABLES = ["ka", "lo", "mi", "ne", "ru", "ta", "vi", "zo", "pe", "su", "dra", "ble", "cri", "fon", "gar", "mun", "tes", "vor"]
_FILLERS_PT = ["qual", "o", "a", "da", "do", "por", "favor", "me", "de", "hoje", "quero", "ver"]
_FILLERS_EN = ["what", "is", "the", "of", "please", "show", "me", "for", "today", "i", "want", "to"]


def _word(rng: random.Random, used: set[str]) -> str:
    while True:
        w = "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4)))
        if w not in used:
            used.add(w)
            return w


def generate_catalogue(domains: int = 5, goals_per_domain: int = 10, seed: int = 7) -> tuple[Catalogue, dict[str, Any]]:
    """A catalogue of ``domains x goals_per_domain`` goals, and the words each goal was given."""
    rng = random.Random(seed)
    used: set[str] = set()
    manifests = []
    capabilities: dict[str, CapabilityMetadata] = {}
    words: dict[str, Any] = {}
    for d in range(domains):
        domain = f"dom{d}"
        goals = []
        for g in range(goals_per_domain):
            cap = f"{domain}.cap{g}"
            capabilities[cap] = CapabilityMetadata(id=cap, input_schema={"type": "object", "properties": {f"{domain}.name_text": {"type": "string"}}})
            keywords = [_word(rng, used) for _ in range(3)] + [f"{_word(rng, used)} {_word(rng, used)}"]
            values = {f"V{v}": [_word(rng, used), _word(rng, used)] for v in range(3)}
            examples = [" ".join([rng.choice(_FILLERS_PT), _word(rng, used), rng.choice(_FILLERS_PT), "[Name]", _word(rng, used)]) for _ in range(2)]
            goal_id = f"G{d}_{g}"
            goals.append({
                "id": goal_id, "description": f"goal {g} of {domain}", "capability": cap,
                "intent_hints": {"keywords": keywords, "examples": examples},
                "entities_schema": {
                    "kind": {"type": "enum", "values": list(values), "synonyms": values, "default": "V0"},
                    "name_text": {"type": "string", "param": f"{domain}.name_text", "description": "a name"},
                },
            })
            words[f"{domain}.{goal_id}"] = {"keywords": keywords, "synonyms": [s for v in values.values() for s in v]}
        manifests.append(domain_from_data({"domain": domain, "capabilities": [f"{domain}.cap{g}" for g in range(goals_per_domain)], "goals": goals}))
    return Catalogue(manifests, capabilities), words


def _typo(word: str, rng: random.Random) -> str:
    if len(word) < 5:
        return word
    i = rng.randrange(1, len(word) - 1)
    return word[:i] + word[i + 1] + word[i] + word[i + 2 :]


def generate_utterances(words: dict[str, Any], n: int, seed: int = 11) -> list[tuple[str, str]]:
    """``n`` (sentence, expected ``domain.GOAL`` or "") pairs."""
    rng = random.Random(seed)
    names = ["Nordea", "Petrobras", "Vale", "Equinor", "Banco do Brasil", "Lisboa", "Oslo", "Acme", "Globex", "Initech"]
    goals = sorted(words)
    out: list[tuple[str, str]] = []
    for _ in range(n):
        fillers = _FILLERS_PT if rng.random() < 0.5 else _FILLERS_EN
        if rng.random() < 0.1:
            out.append((" ".join(rng.choice(fillers) for _ in range(5)) + " " + rng.choice(names), ""))
            continue
        goal = rng.choice(goals)
        w = words[goal]
        parts = [rng.choice(fillers), rng.choice(w["keywords"]), rng.choice(fillers), rng.choice(names)]
        if rng.random() < 0.5:
            parts.append(rng.choice(w["synonyms"]))
        if rng.random() < 0.2:
            parts[1] = _typo(parts[1], rng)
        out.append((" ".join(parts) + rng.choice(["", "?", "!"]), goal))
    return out


def measure_matcher(utterances: int = 20_000) -> dict[str, Any]:
    """Classify ``utterances`` generated sentences once; return the rate and a sanity figure."""
    catalogue, words = generate_catalogue()
    matcher = Matcher(catalogue)
    cases = generate_utterances(words, utterances)
    texts = [t for t, _ in cases]
    matcher.match(texts[0])  # warm the code paths (not the fuzzy cache: it fills as it goes)
    # CPU time is the figure (the machine may be shared); wall time is reported beside it.
    start, cpu_start = time.perf_counter(), time.process_time()
    results = [matcher.match(t) for t in texts]
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    right = sum(1 for r, (_, want) in zip(results, cases, strict=True) if (f"{r.primary_domain}.{r.goal}" if r.goal else "") == want)
    return {
        "bench": "intent_matcher",
        "goals": sum(len(m.goals) for m in catalogue.domains.values()),
        "domains": len(catalogue.domains),
        "utterances": utterances,
        "cpu_seconds": round(cpu, 4),
        "wall_seconds": round(elapsed, 4),
        "utterances_per_cpu_s": round(utterances / cpu),
        "utterances_per_wall_s": round(utterances / elapsed),
        "goal_accuracy_on_generated": round(right / utterances, 4),
        "pinned_to_one_core": _pin(),
    }


def _pin() -> bool:
    if not hasattr(os, "sched_setaffinity"):
        return False
    try:
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    except OSError:
        return False
    return True


def main(argv: list[str] | None = None) -> int:
    """Run the bench once and print its figures."""
    parser = argparse.ArgumentParser(prog="python -m bench.intent_bench")
    parser.add_argument("--utterances", type=int, default=20_000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    _pin()
    figures = measure_matcher(args.utterances)
    if args.json:
        sys.stdout.write(msgspec.json.encode(figures).decode() + "\n")
    else:
        print(f"matcher: {figures['utterances_per_cpu_s']:,} utterances per CPU second on one core "
              f"({figures['utterances']:,} in {figures['cpu_seconds']} s of CPU, {figures['wall_seconds']} s of wall clock: "
              f"{figures['utterances_per_wall_s']:,}/s; {figures['goals']} goals in {figures['domains']} domains; "
              f"goal accuracy on the generated set {figures['goal_accuracy_on_generated']:.1%})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
