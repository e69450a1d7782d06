"""What the README promises a capability's test can catch, through the public face ``ontoflow``.

The README says ``run_manifest`` raises ``ManifestError`` for a document that does not compile
and ``AnswerRefused`` for an answer that is none of the candidates; a test written from it does
``from ontoflow import ...`` and ``pytest.raises`` them, as the README's example imports the rest.
"""

from __future__ import annotations

import pytest

import ontoflow


def test_the_errors_run_manifest_raises_come_from_the_public_face() -> None:
    from ontoflow import AnswerRefused, ManifestError
    from ontoflow.actors.orchestrator import AnswerRefused as engine_answer_refused
    from ontoflow.protocols.errors import ManifestError as protocol_manifest_error

    assert ManifestError is protocol_manifest_error
    assert AnswerRefused is engine_answer_refused
    assert {"AnswerRefused", "ManifestError"} <= set(ontoflow.__all__)


def test_a_document_that_does_not_compile_is_caught_as_the_readme_names_it() -> None:
    broken = {"start": "main", "nodes": {"main": {"entry_block": "nowhere", "blocks": {}}}}
    with pytest.raises(ontoflow.ManifestError):
        ontoflow.run_manifest(broken, [])
