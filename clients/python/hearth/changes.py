"""Ordered query results and their changes, as Firestore's ``docChanges`` (pure functions, no I/O).

A change list is ordered removed, then added, then modified, and its indices are computed one change at
a time: applying the changes in order to the previous result list gives the new one —
``removed`` deletes at ``old_index``, ``added`` inserts at ``new_index``, ``modified`` deletes at
``old_index`` and then inserts the new version at ``new_index``. Indices that do not apply are ``-1``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .errors import ProtocolError
from .results import Document

ADDED, REMOVED, MODIFIED = "added", "removed", "modified"


@dataclass
class DocumentChange:
    """One change of a query's result: ``type`` is ``"added"``, ``"removed"`` or ``"modified"``; ``doc`` is
    the new version (the last version for ``"removed"``)."""

    type: str
    doc: Document
    old_index: int = -1
    new_index: int = -1

    @classmethod
    def from_wire(cls, wire: Any) -> "DocumentChange":
        if not isinstance(wire, dict) or wire.get("type") not in (ADDED, REMOVED, MODIFIED):
            raise ProtocolError(f"not a document change: {wire!r}")
        doc = Document.from_wire(wire.get("doc"))
        if doc is None:
            raise ProtocolError(f"document change without a document: {wire!r}")
        return cls(wire["type"], doc, int(wire.get("oldIndex", -1)), int(wire.get("newIndex", -1)))


def _at(docs: list[Document], index: int, path: str, change: DocumentChange) -> int:
    if not (0 <= index < len(docs)) or docs[index].path != path:
        found = docs[index].path if 0 <= index < len(docs) else "nothing"
        raise ProtocolError(f"{change.type} change of {path} at oldIndex {index} finds {found} "
                            f"in a list of {len(docs)}")
    return index


def _insert(docs: list[Document], index: int, doc: Document, change: DocumentChange) -> None:
    if not 0 <= index <= len(docs):
        raise ProtocolError(f"{change.type} change of {doc.path} at newIndex {index} "
                            f"outside a list of {len(docs)}")
    docs.insert(index, doc)


def apply_changes(docs: list[Document], changes: list[DocumentChange]) -> list[Document]:
    """Returns a new list: ``docs`` with ``changes`` applied in order. Raises ProtocolError when an index
    does not fit (a removed/modified index naming another document, an added document already present)."""
    out = list(docs)
    for c in changes:
        if c.type == REMOVED:
            del out[_at(out, c.old_index, c.doc.path, c)]
        elif c.type == ADDED:
            if any(d.path == c.doc.path for d in out):
                raise ProtocolError(f"added change of {c.doc.path}, which is already in the result")
            _insert(out, c.new_index, c.doc, c)
        else:
            del out[_at(out, c.old_index, c.doc.path, c)]
            _insert(out, c.new_index, c.doc, c)
    return out


def _same_version(a: Document, b: Document) -> bool:
    if a.update_time is not None and b.update_time is not None:
        return a.update_time == b.update_time and a.create_time == b.create_time
    return a == b


def diff(old: list[Document], new: list[Document]) -> list[DocumentChange]:
    """The changes that turn ``old`` into ``new`` (both ordered results, unique paths), in docChanges order
    and with one-at-a-time indices, so that ``apply_changes(old, diff(old, new))`` lists ``new``."""
    old_by_path = {d.path: d for d in old}
    new_by_path = {d.path: d for d in new}
    modified = {p for p, d in new_by_path.items() if p in old_by_path and not _same_version(old_by_path[p], d)}
    changes: list[DocumentChange] = []
    work = [d.path for d in old]

    for d in old:
        if d.path not in new_by_path:
            i = work.index(d.path)
            del work[i]
            changes.append(DocumentChange(REMOVED, d, i, -1))

    # Added documents go right after their nearest preceding document (in the new order) that is not
    # modified; the modified ones then move, in new order, to right after their predecessor.
    def after_predecessor(k: int, skip_modified: bool) -> int:
        for j in range(k - 1, -1, -1):
            p = new[j].path
            if skip_modified and p in modified:
                continue
            return work.index(p) + 1
        return 0

    for k, d in enumerate(new):
        if d.path not in old_by_path:
            i = after_predecessor(k, True)
            work.insert(i, d.path)
            changes.append(DocumentChange(ADDED, d, -1, i))
    for k, d in enumerate(new):
        if d.path in modified:
            i = work.index(d.path)
            del work[i]
            j = after_predecessor(k, False)
            work.insert(j, d.path)
            changes.append(DocumentChange(MODIFIED, d, i, j))

    if work != [d.path for d in new]:
        # Unchanged documents changed their relative order (not possible for a deterministic query
        # order); fall back to replacing everything, which is still a correct change list.
        return ([DocumentChange(REMOVED, d, 0, -1) for d in old]
                + [DocumentChange(ADDED, d, -1, i) for i, d in enumerate(new)])
    return changes
