"""Inputs: parsing ``KEY=VALUE`` pairs and checking them with kept, compiled validators."""

from __future__ import annotations

import http.server
import threading

import pytest

from ontoflow.protocols.capability import CapabilityMetadata
from ontoflow.runtime import inputs as inputs_module
from ontoflow.runtime.errors import ConfigError
from ontoflow.runtime.cli._shared import parse_inputs
from ontoflow.runtime.inputs import CatalogInputCheck, InputValidators, check_inputs, input_validators


def _meta(cap_id: str, **props: dict) -> CapabilityMetadata:
    return CapabilityMetadata(id=cap_id, input_schema={"type": "object", "properties": props})


LABEL = {"type": "string", "maxLength": 8}
SIZE = {"type": "integer", "minimum": 0}


def test_exports_are_sorted_and_defined() -> None:
    names = inputs_module.__all__
    assert names == sorted(names)
    assert all(hasattr(inputs_module, name) for name in names)


def test_parse_inputs_takes_json_values_and_strings() -> None:
    assert parse_inputs(["a.b=1", "a.c=true", "a.d=pt_BR", "a.e=[1, 2]"]) == {
        "a.b": 1, "a.c": True, "a.d": "pt_BR", "a.e": [1, 2]}


@pytest.mark.parametrize(("pair", "needle"), [("novalue", "#1: expected KEY=VALUE"), ("9bad=x", "'9bad'")])
def test_parse_inputs_names_the_bad_pair(pair: str, needle: str) -> None:
    with pytest.raises(ConfigError, match=needle):
        parse_inputs([pair])


def test_a_validator_is_compiled_once_and_reused() -> None:
    validators = InputValidators()
    catalog = {"c.one": _meta("c.one", **{"k.label": LABEL, "k.size": SIZE})}
    for size in range(5):
        validators.check({"k.label": "ab", "k.size": size}, catalog)
    stats = validators.statistics()
    assert (stats.compiled, stats.reused, stats.size) == (2, 8, 2)
    first = validators.validator("c.one", "k.size", SIZE)
    assert validators.validator("c.one", "k.size", dict(reversed(SIZE.items()))) is first  # key order is no change


def test_a_changed_schema_gets_a_new_validator() -> None:
    validators = InputValidators()
    old = {"c.one": _meta("c.one", **{"k.size": {"type": "integer", "maximum": 10}})}
    validators.check({"k.size": 7}, old)
    stale = validators.validator("c.one", "k.size", {"type": "integer", "maximum": 10})
    new = {"c.one": _meta("c.one", **{"k.size": {"type": "integer", "maximum": 5}})}
    with pytest.raises(ConfigError, match=r"input 'k.size' must be smaller than or equal to 5 \(as declared by c.one\)"):
        validators.check({"k.size": 7}, new)
    assert validators.validator("c.one", "k.size", {"type": "integer", "maximum": 5}) is not stale
    assert validators.statistics().compiled == 2


def test_one_and_true_are_different_schemas() -> None:
    validators = InputValidators()
    as_int = validators.validator("c", "k", {"const": 1})
    as_bool = validators.validator("c", "k", {"const": True})
    assert as_int is not as_bool
    with pytest.raises(Exception, match="must be same as const definition"):
        as_bool(1)


def test_the_cache_is_bounded_least_recently_used_first() -> None:
    validators = InputValidators(maxsize=2)
    a = validators.validator("c", "a", SIZE)
    validators.validator("c", "b", SIZE)
    assert validators.validator("c", "a", SIZE) is a  # a is now the most recent
    validators.validator("c", "c", SIZE)  # evicts b
    assert validators.statistics().size == 2
    assert validators.validator("c", "a", SIZE) is a
    before = validators.statistics().compiled
    validators.validator("c", "b", SIZE)
    assert validators.statistics().compiled == before + 1


def test_maxsize_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="maxsize must be >= 1, got 0"):
        InputValidators(maxsize=0)


def test_the_error_names_key_rule_and_capability_never_the_value() -> None:
    catalog = {"c.one": _meta("c.one", **{"k.label": LABEL})}
    with pytest.raises(ConfigError) as caught:
        InputValidators().check({"k.label": "s3cr3t-and-too-long"}, catalog)
    message = str(caught.value)
    assert message == "input 'k.label' must be shorter than or equal to 8 characters (as declared by c.one)"
    assert "s3cr3t" not in message


def test_every_capability_declaring_the_key_is_checked() -> None:
    catalog = {"c.loose": _meta("c.loose", **{"k": {"type": "integer"}}),
               "c.tight": _meta("c.tight", **{"k": {"type": "integer", "minimum": 10}})}
    with pytest.raises(ConfigError, match=r"as declared by c.tight"):
        InputValidators().check({"k": 3}, catalog)
    InputValidators().check({"k": 30, "undeclared.key": "anything"}, catalog)


def test_a_schema_that_does_not_compile_is_not_checked_and_not_recompiled() -> None:
    validators = InputValidators()
    catalog = {"c": _meta("c", k={"type": "no-such-type"})}
    validators.check({"k": 1}, catalog)
    validators.check({"k": 1}, catalog)
    assert (validators.statistics().compiled, validators.statistics().reused) == (1, 1)


def test_a_remote_ref_is_never_fetched() -> None:
    requests: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # would answer a schema that refuses the value
            requests.append(self.path)
            body = b'{"type": "integer", "minimum": 100}'
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    with http.server.HTTPServer(("127.0.0.1", 0), Handler) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            url = f"http://127.0.0.1:{server.server_address[1]}/schema.json"
            InputValidators().check({"r": 2}, {"c": _meta("c", r={"$ref": url})})
        finally:
            server.shutdown()
            thread.join()
    assert requests == []


def test_check_inputs_keeps_validators_for_the_process() -> None:
    catalog = {"c.proc": _meta("c.proc", **{"k.proc": {"type": "string", "minLength": 3}})}
    before = input_validators().statistics()
    check_inputs({"k.proc": "abc"}, catalog)
    check_inputs({"k.proc": "abcd"}, catalog)
    after = input_validators().statistics()
    assert after.reused >= before.reused + 1
    with pytest.raises(ConfigError, match="input 'k.proc' must be longer than or equal to 3 characters"):
        check_inputs({"k.proc": "ab"}, catalog)


def test_a_catalog_check_refuses_what_check_inputs_refuses_with_the_same_error() -> None:
    catalog = {"c.loose": _meta("c.loose", **{"k.size": {"type": "integer"}, "k.label": LABEL}),
               "c.tight": _meta("c.tight", **{"k.size": {"type": "integer", "minimum": 10}})}
    validators = InputValidators()
    check = CatalogInputCheck(catalog, validators)
    for inputs in ({"k.size": 3}, {"k.label": "far too long a label"}, {"k.size": 3, "k.label": "far too long"},
                   {"k.size": "x"}):
        with pytest.raises(ConfigError) as expected:
            validators.check(inputs, catalog)
        with pytest.raises(ConfigError) as caught:
            check.check(inputs)
        assert str(caught.value) == str(expected.value)
    check.check({"k.size": 30, "k.label": "ok", "undeclared.key": "anything"})


def test_a_catalog_check_resolves_each_key_once_through_the_kept_validators() -> None:
    validators = InputValidators()
    check = CatalogInputCheck({"c": _meta("c", **{"k.size": SIZE, "k.label": LABEL})}, validators)
    for _ in range(3):
        check.check({"k.size": 1, "k.label": "a"})
    assert validators.statistics().compiled == 2
