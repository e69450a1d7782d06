"""The one OML v0.1.0 contract block, and the regeneration prompt built on it (seed 003).

Seed 003 reuses a single contract block "both initially and post-discovery": the first
synthesis prompt and the one guided regeneration carry the same text, made here from the
schema guard's own rules (``protocols.oml``), so the prompt and the guard cannot disagree.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from ontoflow.protocols.capability import CapabilityMetadata
from ontoflow.protocols.errors import Problem
from ontoflow.protocols.oml import LEGACY_KEYS, OML_MODES, OML_VERSION

__all__ = ["contract_block", "regeneration_prompt"]


Components = Iterable[str] | Mapping[str, CapabilityMetadata]


def _listed(components: Components) -> str:
    """One line per component, sorted; given their metadata, with the modes each works in and
    the config keys it takes (what the guard holds a pipeline to), less what flows from ``needs``."""
    if not isinstance(components, Mapping):
        return "\n".join(f"  - {c}" for c in sorted(set(components)))
    wired = {out for meta in components.values() for out in meta.outputs}
    lines = []
    for cid in sorted(components):
        meta = components[cid]
        modes = meta.flow.get("modes") or list(OML_MODES)
        settings = [k.rsplit(".", 1)[-1] for k in meta.input_keys if k not in wired]
        lines.append(f"  - {cid} (mode: {', '.join(modes)}; config keys: {', '.join(settings) or 'none'})")
    return "\n".join(lines)


def contract_block(components: Components) -> str:
    """The OML contract: required keys, forbidden legacy keys and what replaces each, the step
    shape, and the components that exist (sorted, so the text is stable): their ids, or given
    their metadata, each with its modes and config keys."""
    legacy = "\n".join(f"  - `{key}`: {hint}" for key, hint in LEGACY_KEYS.items())
    listed = _listed(components)
    return (
        f"OML v{OML_VERSION} CONTRACT\n"
        f'Required top-level keys: oml_version: "{OML_VERSION}", name (kebab-case), steps (a list).\n'
        f"Forbidden legacy keys, never write them:\n{legacy}\n"
        "Step shape:\n"
        "  - id: unique, kebab-case\n"
        "    component: one of the components below\n"
        f"    mode: one of {', '.join(OML_MODES)}\n"
        "    config: a map of the component's config keys (required; {} when none is set)\n"
        "    needs: a list of earlier step ids (optional)\n"
        'No secrets: a connection is written "@name" and resolved at run time.\n'
        f"Components:\n{listed}\n"
    )


def regeneration_prompt(problems: Sequence[Problem], components: Components) -> str:
    """The one targeted regeneration prompt: each guard error with its path, then the contract."""
    errors = "\n".join(f"- {p.path or '(document)'}: {p.message}" for p in problems)
    return (
        "The pipeline you wrote does not pass the OML schema guard. Fix exactly these errors and "
        "answer with the whole corrected pipeline as YAML, nothing else:\n"
        f"{errors}\n\n{contract_block(components)}"
    )
