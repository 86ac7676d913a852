"""Building query requests (docs/queries.md): Python keyword arguments -> the wire's query fields.

Filters (``where``) are ``(field_path, op, value)`` triples (one, or a list meaning AND) or nested
``{"and": [...]}`` / ``{"or": [...]}`` dicts; values and cursor values are encoded with
:func:`hearth.values.encode`. ``order_by`` is a field path, or a list of field paths and
``(field_path, "asc"|"desc")`` pairs. Arguments left ``None`` are not sent.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .values import encode

_OPS = {"==", "!=", "<", "<=", ">", ">=", "array-contains", "array-contains-any", "in", "not-in"}


def _encode_filter(f: Any) -> Any:
    if isinstance(f, dict):
        if len(f) != 1 or next(iter(f)) not in ("and", "or"):
            raise ValueError(f"a composite filter is {{'and': [...]}} or {{'or': [...]}}, not {f!r}")
        (kind, parts), = f.items()
        if not isinstance(parts, (list, tuple)):
            raise TypeError(f"{kind!r} needs a list of filters")
        return {kind: [_encode_filter(p) for p in parts]}
    if isinstance(f, (list, tuple)) and len(f) == 3 and isinstance(f[0], str) and isinstance(f[1], str):
        if f[1] not in _OPS:
            raise ValueError(f"unknown filter operator {f[1]!r} (one of {sorted(_OPS)})")
        return [f[0], f[1], encode(f[2])]
    raise TypeError(f"a filter is (field_path, op, value) or {{'and'|'or': [...]}}, not {f!r}")


def encode_where(where: Any) -> Any:
    """The wire ``where``: a single triple becomes a one-element list; a list is an AND of filters."""
    if isinstance(where, dict):
        return _encode_filter(where)
    if isinstance(where, (list, tuple)):
        if len(where) == 3 and isinstance(where[0], str):
            return [_encode_filter(where)]
        return [_encode_filter(f) for f in where]
    raise TypeError(f"where must be a filter or a list of filters, not {type(where).__name__}")


def encode_order_by(order_by: Any) -> list[Any]:
    """The wire ``orderBy``: a list of ``"field"`` and ``["field", "asc"|"desc"]``."""
    if isinstance(order_by, str):
        return [order_by]
    out: list[Any] = []
    for o in order_by:
        if isinstance(o, str):
            out.append(o)
        elif isinstance(o, (list, tuple)) and len(o) == 2 and o[1] in ("asc", "desc"):
            out.append([o[0], o[1]])
        else:
            raise ValueError(f"an order is 'field' or ('field', 'asc'|'desc'), not {o!r}")
    return out


def _cursor(values: Any) -> list[Any]:
    if not isinstance(values, (list, tuple)):
        raise TypeError("a cursor is a list of order values (a prefix of the query's normalized order)")
    return [encode(v) for v in values]


def query_fields(collection: str | None = None, *, collection_group: str | None = None,
                 parent: str | None = None, where: Any = None, order_by: Any = None, limit: int | None = None,
                 limit_to_last: int | None = None, offset: int | None = None, start_at: Any = None,
                 start_after: Any = None, end_at: Any = None, end_before: Any = None,
                 select: list[str] | None = None) -> dict[str, Any]:
    """The wire fields of a query (for ``query``, ``count``, ``explain``, ``aggregate``'s ``query``
    and ``listen``'s ``query``). Exactly one of ``collection`` and ``collection_group`` is required."""
    if (collection is None) == (collection_group is None):
        raise ValueError("give exactly one of collection and collection_group")
    out: dict[str, Any] = {}
    if collection is not None:
        out["collection"] = collection
    if collection_group is not None:
        out["collectionGroup"] = collection_group
    if parent is not None:
        out["parent"] = parent
    if where is not None:
        out["where"] = encode_where(where)
    if order_by is not None:
        out["orderBy"] = encode_order_by(order_by)
    for key, value in (("limit", limit), ("limitToLast", limit_to_last), ("offset", offset)):
        if value is not None:
            out[key] = value
    for key, value in (("startAt", start_at), ("startAfter", start_after), ("endAt", end_at),
                       ("endBefore", end_before)):
        if value is not None:
            out[key] = _cursor(value)
    if select is not None:
        if isinstance(select, str):
            raise TypeError("select must be a list of field paths, not a str")
        out["select"] = list(select)
    return out


@dataclass(frozen=True)
class Count:
    """Aggregation: the number of documents (``{"count": {}}``)."""

    def to_wire(self) -> dict[str, Any]:
        return {"count": {}}


@dataclass(frozen=True)
class Sum:
    """Aggregation: the sum of a numeric field (an int while every input is an int and it fits)."""

    field: str

    def to_wire(self) -> dict[str, Any]:
        return {"sum": self.field}


@dataclass(frozen=True)
class Avg:
    """Aggregation: the mean of a numeric field (a float, ``None`` when nothing to average)."""

    field: str

    def to_wire(self) -> dict[str, Any]:
        return {"avg": self.field}


def encode_aggregations(aggregations: dict[str, Any]) -> dict[str, Any]:
    """The wire ``aggregations``: alias -> :class:`Count` / :class:`Sum` / :class:`Avg` or a wire dict."""
    out = {}
    for alias, agg in aggregations.items():
        out[alias] = agg.to_wire() if isinstance(agg, (Count, Sum, Avg)) else agg
    return out
