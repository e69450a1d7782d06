"""The finance domain's handlers: ordinary capabilities over a quotes file shipped beside them.

Nothing here talks to a network: ``quotes.json`` (made-up prices) is the market. The domain
manifest (``domain.yaml``) maps goals to these capabilities; the planner reads their metadata:

* ``finance.get_stock_price`` declares ``flow.pre`` (``resolve_symbol`` through
  ``finance.search_symbol``), so every quote first resolves the user's words to a ticker;
  ``decomposition`` (several companies in one sentence become one step each); and
  ``composition`` (a ``notifier`` follow-up when the user asked to be notified);
* ``finance.search_symbol`` asks which ticker when a name is ambiguous (Nordea trades in
  Stockholm and in Helsinki): it ends with the reserved event ``clarification`` and a
  ``DomainOutput`` with the candidates, so the run *suspends* (journaled, with a resume
  token) until an answer comes; the answer is dispatched back to it as ``finance.symbol_text``
  (``metadata.answer_param``), a ticker it then resolves exactly;
* ``finance.notify`` fills the ``notifier`` role: it appends the message to a local outbox.

Every handler answers with a ``DomainOutput`` under ``ontoflow.domain.output``.
"""

from __future__ import annotations

import functools
import json
import os
import unicodedata
from pathlib import Path
from typing import Any, ClassVar

import msgspec
from rapidfuzz import fuzz, process

from ontoflow import Capability, CapabilityMetadata, Result, StepContext
from ontoflow.protocols import ArrayParam, Composition, Decomposition

DATA = Path(__file__).with_name("quotes.json")
OUT = "ontoflow.domain.output"
SYMBOL_TEXT, SYMBOL, MARKET_TEXT, MESSAGE = "finance.symbol_text", "finance.symbol", "finance.market_text", "finance.message"
#: Where finance.notify appends its messages (relative to the working folder unless absolute).
OUTBOX_ENV = "ONTOFLOW_FINANCE_OUTBOX"
DEFAULT_OUTBOX = "out/finance/notifications.jsonl"
TOP_N = 3


class Market(msgspec.Struct, frozen=True):
    """A market: the names users call it by, its exchange and time zone."""

    names: list[str]
    exchange: str
    timezone: str


class Quote(msgspec.Struct, frozen=True):
    """One stock's last price and the day's change."""

    symbol: str
    name: str
    market: str
    price: float
    currency: str
    change_pct: float


class QuoteBook(msgspec.Struct, frozen=True):
    """The whole quotes file."""

    as_of: str
    markets: dict[str, Market]
    aliases: dict[str, list[str]]
    quotes: list[Quote]
    note: str = ""


@functools.cache
def book() -> QuoteBook:
    """The quotes file, read once per process."""
    return msgspec.json.decode(DATA.read_bytes(), type=QuoteBook)


def fold(text: str) -> str:
    """Lower case, no accents, single spaces."""
    decomposed = unicodedata.normalize("NFKD", text)
    return " ".join("".join(c for c in decomposed if not unicodedata.combining(c)).lower().split())


def _answer(status: str, explanation: str, result: dict[str, Any] | None = None, **metadata: Any) -> dict[str, Any]:
    return {"status": status, "result": result or {}, "explanation": explanation, "confidence": 1.0, "metadata": metadata}


def _schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required}


def resolve(text: str) -> list[Quote]:
    """Every quote ``text`` may mean: a ticker, an alias, a name, or a near alias (typos)."""
    data = book()
    by_symbol = {q.symbol: q for q in data.quotes}
    wanted = fold(text)
    exact = [q for q in data.quotes if q.symbol.lower() == wanted]
    if exact:
        return exact
    if wanted in data.aliases:
        return [by_symbol[s] for s in data.aliases[wanted]]
    named = [q for q in data.quotes if f" {wanted} " in f" {fold(q.name)} "]
    if named:
        return named
    near = process.extractOne(wanted, list(data.aliases), scorer=fuzz.ratio, score_cutoff=85)
    return [by_symbol[s] for s in data.aliases[near[0]]] if near else []


class SearchSymbol(Capability):
    """Resolve the user's words for a company to one ticker (seed 004's symbol resolver).

    Events: ``success`` (``finance.symbol``), ``not_found`` (a failure answer), and the
    reserved ``clarification`` when the words name several tickers: the run suspends on the
    question and the answer (one of the candidates' tickers) comes back as the step's
    ``finance.symbol_text``.
    """

    metadata: ClassVar[CapabilityMetadata] = CapabilityMetadata(
        id="finance.search_symbol",
        description="Find the ticker for a company name, alias or ticker.",
        events=["success", "not_found"],
        input_schema=_schema({SYMBOL_TEXT: {"type": "string", "minLength": 1}}, [SYMBOL_TEXT]),
        outputs=[SYMBOL, OUT],
        timeout_ms=5_000,
        idempotent=True,
    )

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> Result:
        """Resolve ``finance.symbol_text``."""
        text = inputs[SYMBOL_TEXT]
        found = resolve(text)
        if len(found) == 1:
            return Result(outputs={SYMBOL: found[0].symbol})
        if not found:
            return Result(event="not_found", outputs={OUT: _answer("failure", f"I found no ticker for '{text}'.", resolution="symbol_not_found")})
        candidates = [{"symbol": q.symbol, "name": q.name, "market": q.market} for q in found]
        listing = ", ".join(c["symbol"] for c in candidates)
        return Result(
            event="clarification",
            outputs={OUT: _answer("clarification", f"I found more than one ticker for '{text}': {listing}. Which one?",
                                  {"candidates": candidates}, resolution="ambiguous_symbol", answer_param=SYMBOL_TEXT)},
        )


class GetStockPrice(Capability):
    """The price of one ticker, with its market context."""

    metadata: ClassVar[CapabilityMetadata] = CapabilityMetadata(
        id="finance.get_stock_price",
        description="The last price of a stock.",
        input_schema=_schema({SYMBOL: {"type": "string", "minLength": 1}, SYMBOL_TEXT: {"type": "string"}}, [SYMBOL]),
        outputs=[OUT],
        timeout_ms=5_000,
        idempotent=True,
        intent_hints={
            "keywords": ["preço", "cotação", "valor", "price", "quote", "ação", "stock price", "share price", "trading at"],
            "examples": ["qual o preço da [PETR4]?", "quanto está a [Vale] hoje?", "how much is [Equinor] worth?"],
        },
        decomposition=Decomposition(array_params=[ArrayParam(param_name=SYMBOL_TEXT, single_param_name=SYMBOL_TEXT, max_concurrency=4)]),
        composition=Composition(
            followup_roles=["notifier"],
            enabled_if={"path": "parameters.notify", "equals": True},
            param_map={MESSAGE: {"from_outputs": [OUT + ".explanation"]}},
        ),
        flow={"pre": [{"type": "resolve_symbol", "param": SYMBOL, "search_capability": "finance.search_symbol"}]},
    )

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> Result:
        """Look the ticker up in the quotes file."""
        data = book()
        quote = next((q for q in data.quotes if q.symbol == inputs[SYMBOL]), None)
        if quote is None:
            return Result(outputs={OUT: _answer("failure", f"No quote for {inputs[SYMBOL]}.")})
        market = data.markets[quote.market]
        said = inputs.get(SYMBOL_TEXT) or quote.name
        result = {
            "symbol": quote.symbol, "price": quote.price, "currency": quote.currency, "change_pct": quote.change_pct,
            "_market_context": {"market": quote.market, "exchange": market.exchange, "timezone": market.timezone},
        }
        explanation = f"{said} ({quote.symbol}): {quote.price:.2f} {quote.currency} ({quote.change_pct:+.1f}% on {data.as_of})"
        return Result(outputs={OUT: _answer("success", explanation, result)})


def _movers(market_text: str | None, sign: int) -> dict[str, Any]:
    data = book()
    quotes = list(data.quotes)
    where = "all markets"
    if market_text:
        wanted = fold(market_text)
        code = next((c for c, m in data.markets.items() if wanted == c.lower() or wanted in m.names), None)
        if code is None:
            candidates = [{"market": c, "exchange": m.exchange} for c, m in sorted(data.markets.items())]
            return _answer("clarification", f"I do not know the market '{market_text}'. Which one?", {"candidates": candidates},
                           resolution="unknown_market")
        quotes = [q for q in quotes if q.market == code]
        where = data.markets[code].exchange
    ranked = sorted(quotes, key=lambda q: (-sign * q.change_pct, q.symbol))
    top = [q for q in ranked if sign * q.change_pct > 0][:TOP_N]
    title = "Top gainers" if sign > 0 else "Top losers"
    listing = ", ".join(f"{q.symbol} {q.change_pct:+.1f}%" for q in top) or "none"
    result = {"movers": [{"symbol": q.symbol, "name": q.name, "change_pct": q.change_pct} for q in top], "market": where}
    return _answer("success", f"{title} ({where}, {data.as_of}): {listing}", result)


def _movers_schema() -> dict[str, Any]:
    return _schema({MARKET_TEXT: {"type": "string"}}, [])


class GetTopGainers(Capability):
    """The stocks that rose most, in one market or all of them."""

    metadata: ClassVar[CapabilityMetadata] = CapabilityMetadata(
        id="finance.get_top_gainers",
        description="The biggest gainers of the day.",
        input_schema=_movers_schema(),
        outputs=[OUT],
        timeout_ms=5_000,
        idempotent=True,
        intent_hints={"keywords": ["maiores altas", "gainers"], "examples": ["quais ações mais subiram hoje?"]},
    )

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> Result:
        """Rank by change, highest first."""
        return Result(outputs={OUT: _movers(inputs.get(MARKET_TEXT), +1)})


class GetTopLosers(Capability):
    """The stocks that fell most, in one market or all of them."""

    metadata: ClassVar[CapabilityMetadata] = CapabilityMetadata(
        id="finance.get_top_losers",
        description="The biggest losers of the day.",
        input_schema=_movers_schema(),
        outputs=[OUT],
        timeout_ms=5_000,
        idempotent=True,
        intent_hints={"keywords": ["maiores baixas", "losers"], "examples": ["quais ações mais caíram hoje?"]},
    )

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> Result:
        """Rank by change, lowest first."""
        return Result(outputs={OUT: _movers(inputs.get(MARKET_TEXT), -1)})


class Notify(Capability):
    """The ``notifier`` role: append a message to a local outbox (a JSON line per message)."""

    metadata: ClassVar[CapabilityMetadata] = CapabilityMetadata(
        id="finance.notify",
        description="Send a notification (offline: a line in a local outbox file).",
        input_schema=_schema({MESSAGE: {"type": "string", "minLength": 1}}, [MESSAGE]),
        outputs=[OUT],
        roles=["notifier"],
        timeout_ms=5_000,
        idempotent=False,
    )

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> Result:
        """Append the message to the outbox."""
        outbox = Path(os.environ.get(OUTBOX_ENV) or DEFAULT_OUTBOX)
        outbox.parent.mkdir(parents=True, exist_ok=True)
        with outbox.open("a", encoding="utf-8") as f:
            f.write(json.dumps({"run_id": context.system.run_id, "message": inputs[MESSAGE]}, ensure_ascii=False) + "\n")
        return Result(outputs={OUT: _answer("success", f"Notification sent to {outbox.name}.", {"outbox": str(outbox)})})


CAPABILITIES = [SearchSymbol, GetStockPrice, GetTopGainers, GetTopLosers, Notify]
