"""Building write requests: preconditions, single writes and atomic batches (docs/protocol.md, "Writes").

Contract: every function here returns JSON-ready wire objects; document data is encoded with
:func:`hearth.values.encode`, so it may hold any supported Python value, sentinel or transform.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from typing import Any, Iterable

from .values import encode, format_timestamp


@dataclass(frozen=True)
class Precondition:
    """A write precondition: ``exists`` (True/False) or ``update_time`` (the document's exact updateTime,
    an aware datetime or RFC 3339 text). Exactly one should be given."""

    exists: bool | None = None
    update_time: _dt.datetime | str | None = None

    def to_wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.exists is not None:
            out["exists"] = bool(self.exists)
        if self.update_time is not None:
            t = self.update_time
            out["updateTime"] = t if isinstance(t, str) else format_timestamp(t)
        return out


def encode_precondition(p: Precondition | dict[str, Any] | None) -> dict[str, Any] | None:
    """Accepts a :class:`Precondition`, a dict with ``exists`` / ``update_time`` (or wire ``updateTime``),
    or ``None``; returns the wire object or ``None``."""
    if p is None:
        return None
    if isinstance(p, Precondition):
        return p.to_wire()
    if isinstance(p, dict):
        unknown = set(p) - {"exists", "update_time", "updateTime"}
        if unknown:
            raise ValueError(f"unknown precondition keys {sorted(unknown)}")
        return Precondition(exists=p.get("exists"),
                            update_time=p.get("update_time", p.get("updateTime"))).to_wire()
    raise TypeError(f"precondition must be a Precondition or dict, not {type(p).__name__}")


def write_fields(path: str, data: Any = None, *, merge: bool = False,
                 merge_fields: Iterable[str] | None = None, precondition: Precondition | dict[str, Any] | None = None,
                 has_data: bool = True) -> dict[str, Any]:
    """The wire fields of one write (without ``op``): ``path``, encoded ``data`` when ``has_data``,
    ``merge``/``mergeFields`` when asked, and ``precondition`` when given."""
    out: dict[str, Any] = {"path": path}
    if has_data:
        if not isinstance(data, dict):
            raise TypeError(f"document data must be a dict, not {type(data).__name__}")
        out["data"] = encode(data)
    if merge:
        out["merge"] = True
    if merge_fields is not None:
        if isinstance(merge_fields, str):
            raise TypeError("merge_fields must be a list of field paths, not a str")
        out["mergeFields"] = list(merge_fields)
    pre = encode_precondition(precondition)
    if pre is not None:
        out["precondition"] = pre
    return out


class Batch:
    """An atomic list of writes for :meth:`hearth.Client.commit` (at most 10,000; all apply or none).

    Methods append and return the batch, so calls chain: ``Batch().create(p, d).update(q, e)``.
    """

    def __init__(self) -> None:
        self.writes: list[dict[str, Any]] = []

    def create(self, path: str, data: dict[str, Any]) -> "Batch":
        self.writes.append({"op": "create", **write_fields(path, data)})
        return self

    def set(self, path: str, data: dict[str, Any], *, merge: bool = False, merge_fields: Iterable[str] | None = None,
            precondition: Precondition | dict[str, Any] | None = None) -> "Batch":
        self.writes.append({"op": "set", **write_fields(path, data, merge=merge, merge_fields=merge_fields,
                                                        precondition=precondition)})
        return self

    def update(self, path: str, data: dict[str, Any], *, precondition: Precondition | dict[str, Any] | None = None) -> "Batch":
        self.writes.append({"op": "update", **write_fields(path, data, precondition=precondition)})
        return self

    def delete(self, path: str, *, precondition: Precondition | dict[str, Any] | None = None) -> "Batch":
        self.writes.append({"op": "delete", **write_fields(path, precondition=precondition, has_data=False)})
        return self

    def verify(self, path: str, precondition: Precondition | dict[str, Any]) -> "Batch":
        """Checks ``precondition`` without writing (optimistic transactions)."""
        self.writes.append({"op": "verify", **write_fields(path, precondition=precondition, has_data=False)})
        return self

    def __len__(self) -> int:
        return len(self.writes)


_ENTRY_KEYS = {"op", "path", "data", "merge", "merge_fields", "mergeFields", "precondition"}


def encode_writes(writes: Batch | Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The wire ``writes`` of a commit, from a :class:`Batch` or from dicts shaped like
    ``{"op": "set", "path": ..., "data": {...python values...}, "merge": True, "precondition": {...}}``."""
    if isinstance(writes, Batch):
        return list(writes.writes)
    out = []
    for i, w in enumerate(writes):
        if not isinstance(w, dict) or "op" not in w or "path" not in w:
            raise TypeError(f"writes[{i}] must be a dict with 'op' and 'path'")
        unknown = set(w) - _ENTRY_KEYS
        if unknown:
            raise ValueError(f"writes[{i}]: unknown keys {sorted(unknown)}")
        has_data = w["op"] not in ("delete", "verify")
        out.append({"op": w["op"], **write_fields(
            w["path"], w.get("data"), merge=bool(w.get("merge")),
            merge_fields=w.get("merge_fields", w.get("mergeFields")),
            precondition=w.get("precondition"), has_data=has_data)})
    return out
