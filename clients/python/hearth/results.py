"""Typed results of reads and writes, decoded from the server's responses.

Every time in these objects is an aware UTC ``datetime``; every field value is decoded with
:func:`hearth.values.decode`.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from typing import Any

from .errors import ProtocolError
from .values import decode, parse_timestamp


def _time(wire: dict[str, Any], key: str) -> _dt.datetime | None:
    text = wire.get(key)
    return None if text is None else parse_timestamp(text)


@dataclass
class Document:
    """A stored document: ``path`` (``"customers/c1"``), ``id`` (``"c1"``), decoded ``data`` and commit times.

    Equality compares every field, so two snapshots of the same unchanged document are equal.
    """

    path: str
    id: str
    data: dict[str, Any]
    create_time: _dt.datetime | None = None
    update_time: _dt.datetime | None = None

    @classmethod
    def from_wire(cls, wire: Any) -> "Document | None":
        """Decodes a response's document object; ``null`` gives ``None``."""
        if wire is None:
            return None
        if not isinstance(wire, dict) or "path" not in wire:
            raise ProtocolError(f"not a document: {wire!r}")
        path = wire["path"]
        return cls(path=path, id=wire.get("id", path.rsplit("/", 1)[-1]), data=decode(wire.get("data", {})),
                   create_time=_time(wire, "createTime"), update_time=_time(wire, "updateTime"))

    def get(self, field_path: str, default: Any = None) -> Any:
        """The value at a dotted field path (``"address.city"``), or ``default`` when absent.

        Backticks quote a segment holding dots or other characters (``"`first.name`"``, ``"`a.b`.c"``; a
        backslash escapes a backtick or a backslash inside; ``~ * / [ ]`` only inside them), as in the protocol's
        field paths. A malformed path raises ``ValueError``.
        """
        node: Any = self.data
        for part in split_field_path(field_path):
            if not isinstance(node, dict) or part not in node:
                return default
            node = node[part]
        return node


def split_field_path(text: str) -> list[str]:
    """The segments of a dotted field path, with backtick-quoted segments unquoted (the server's rule:
    ``a.b`` is two segments, ``"`a.b`"`` one, ``"`a\\`b`"`` is ``a`b``). Raises ``ValueError`` naming what is
    wrong: an empty segment, an unclosed backtick, text around a quoted segment."""
    segments: list[str] = []
    current: list[str] = []
    quoted = was_quoted = False
    chars = iter(text)
    for c in chars:
        if quoted:
            if c == "\\":
                nxt = next(chars, None)
                if nxt is None:
                    raise ValueError(f"field path {text!r} ends inside an escape")
                current.append(nxt)
            elif c == "`":
                quoted = False
            else:
                current.append(c)
        elif c == "`":
            if current or was_quoted:
                raise ValueError(f"field path {text!r} has a backtick inside a segment")
            quoted = was_quoted = True
        elif c == ".":
            if not current and not was_quoted:
                raise ValueError(f"field path {text!r} has an empty segment")
            segments.append("".join(current))
            current, was_quoted = [], False
        else:
            if was_quoted:
                raise ValueError(f"field path {text!r} has text after a closing backtick")
            if c in "~*/[]":
                raise ValueError(f"field path {text!r} has {c!r} outside backticks: the characters ~ * / [ ] must be quoted")
            current.append(c)
    if quoted:
        raise ValueError(f"field path {text!r} has an unclosed backtick")
    if not current and not was_quoted:
        raise ValueError(f"field path {text!r} has an empty segment")
    segments.append("".join(current))
    if any(not seg for seg in segments):
        raise ValueError(f"field path {text!r} has an empty segment")
    return segments


@dataclass
class WriteResult:
    """The outcome of one write: where it went, its update time, and its transform results (decoded)."""

    path: str
    id: str
    update_time: _dt.datetime | None
    seq: int | None = None
    transform_results: list[Any] = field(default_factory=list)

    @classmethod
    def from_wire(cls, wire: dict[str, Any], *, id_key: str = "id") -> "WriteResult":
        """Decodes a single-write response (``id_key="docId"``) or one entry of a commit's ``results``."""
        return cls(path=wire.get("path", ""), id=wire.get(id_key, ""), update_time=_time(wire, "updateTime"),
                   seq=wire.get("seq"), transform_results=decode(wire.get("transformResults", [])))


@dataclass
class CommitResult:
    """The outcome of an atomic ``commit``: one ``seq`` and commit time for all of its writes."""

    seq: int
    commit_time: _dt.datetime | None
    results: list[WriteResult]

    @classmethod
    def from_wire(cls, wire: dict[str, Any]) -> "CommitResult":
        seq = wire.get("seq")
        results = [WriteResult.from_wire(r) for r in wire.get("results", [])]
        for r in results:
            r.seq = seq
        return cls(seq=int(seq) if isinstance(seq, int) else 0, commit_time=_time(wire, "commitTime"), results=results)


class QueryResult(list[Any]):
    """The documents a query returned (a ``list`` of :class:`Document`), plus ``seq``: the result is exact
    as of that commit."""

    def __init__(self, docs: list[Document], seq: int | None) -> None:
        super().__init__(docs)
        self.seq = seq

    def __repr__(self) -> str:
        return f"QueryResult({list.__repr__(self)}, seq={self.seq})"
