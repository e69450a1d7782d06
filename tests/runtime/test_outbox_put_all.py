"""``Outbox.put_all``: a worker host's answers of a group in one call, leaving exactly as the
same messages ``put`` one by one would (the same sink calls, with the same messages)."""

from __future__ import annotations

from typing import Any

import pytest

from ontoflow.runtime.actor import Outbox


class _Sink:
    def __init__(self) -> None:
        self.calls: list[list[tuple[bytes, Any]]] = []

    def send_many(self, items: list[tuple[bytes, Any]]) -> None:
        self.calls.append(list(items))


class _Gate:
    def commit(self) -> None:
        pass


def _sent(gated: bool, held: bool, chunk: int, before: int, group: int, one_by_one: bool) -> list[list[tuple[bytes, Any]]]:
    outbox = Outbox(gate=_Gate() if gated else None, chunk=chunk)
    sink = _Sink()
    outbox.attach(sink)
    items = [(b"", n) for n in range(before, before + group)]
    with outbox.holding():
        for n in range(before):
            outbox.put(b"", n)
    if held:
        with outbox.holding():
            if one_by_one:
                for identity, message in items:
                    outbox.put(identity, message)
            else:
                outbox.put_all(items)
    elif one_by_one:
        for identity, message in items:
            outbox.put(identity, message)
    else:
        outbox.put_all(items)
    outbox.flush()
    return sink.calls


@pytest.mark.parametrize("gated", [False, True])
@pytest.mark.parametrize("held", [True, False])
@pytest.mark.parametrize(("chunk", "before", "group"), [(4, 0, 3), (4, 0, 4), (4, 1, 3), (4, 3, 9), (4, 2, 0), (32, 5, 32), (1, 0, 3)])
def test_put_all_leaves_as_puts_one_by_one_would(gated: bool, held: bool, chunk: int, before: int, group: int) -> None:
    together = _sent(gated, held, chunk, before, group, one_by_one=False)
    assert together == _sent(gated, held, chunk, before, group, one_by_one=True)
    assert [m for call in together for _, m in call] == list(range(before + group))


def test_a_held_group_past_the_chunk_leaves_at_each_chunk_while_held() -> None:
    outbox = Outbox(chunk=3)
    sink = _Sink()
    outbox.attach(sink)
    with outbox.holding():
        outbox.put(b"", 0)
        outbox.put_all([(b"", n) for n in range(1, 8)])
        assert [[m for _, m in call] for call in sink.calls] == [[0, 1, 2], [3, 4, 5]]
    outbox.flush()
    assert [[m for _, m in call] for call in sink.calls] == [[0, 1, 2], [3, 4, 5], [6, 7]]
