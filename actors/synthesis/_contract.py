"""The one OML v0.1.0 contract block, and the regeneration prompt built on it (seed 003).

Seed 003 reuses a single contract block "both initially and post-discovery": the first
synthesis prompt and the one guided regeneration carry the same text, made here from the
schema guard's own rules (``protocols.oml``), so the prompt and the guard cannot disagree.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ontoflow.protocols.errors import Problem
from ontoflow.protocols.oml import LEGACY_KEYS, OML_MODES, OML_VERSION

__all__ = ["contract_block", "regeneration_prompt"]


def contract_block(components: Iterable[str]) -> str:
    """The OML contract: required keys, forbidden legacy keys and what replaces each, the step
    shape, and the components that exist (sorted, so the text is stable)."""
    legacy = "\n".join(f"  - `{key}`: {hint}" for key, hint in LEGACY_KEYS.items())
    listed = "\n".join(f"  - {c}" for c in sorted(set(components)))
    return (
        f"OML v{OML_VERSION} CONTRACT\n"
        f'Required top-level keys: oml_version: "{OML_VERSION}", name (kebab-case), steps (a list).\n'
        f"Forbidden legacy keys, never write them:\n{legacy}\n"
        "Step shape:\n"
        "  - id: unique, kebab-case\n"
        "    component: one of the components below\n"
        f"    mode: one of {', '.join(OML_MODES)}\n"
        "    config: a map (component-specific; required)\n"
        "    needs: a list of earlier step ids (optional)\n"
        'No secrets: a connection is written "@name" and resolved at run time.\n'
        f"Components:\n{listed}\n"
    )


def regeneration_prompt(problems: Sequence[Problem], components: Iterable[str]) -> str:
    """The one targeted regeneration prompt: each guard error with its path, then the contract."""
    errors = "\n".join(f"- {p.path or '(document)'}: {p.message}" for p in problems)
    return (
        "The pipeline you wrote does not pass the OML schema guard. Fix exactly these errors and "
        "answer with the whole corrected pipeline as YAML, nothing else:\n"
        f"{errors}\n\n{contract_block(components)}"
    )
