"""Python asyncio client for Hearth (``hearthd``), a realtime document database with Firestore's data model.

Quick use::

    import hearth
    async with hearth.connect(port=7411) as db:
        await db.set("customers/c1", {"fullName": "Ada Lovelace"})
        doc = await db.get("customers/c1")
        async for snap in db.listen_query("customers", order_by="fullName"):
            ...

See README.md for the full API; :mod:`hearth.values` lists the value forms.
"""

from .changes import DocumentChange, apply_changes, diff
from .client import Client, connect
from .errors import HearthConnectionError, HearthError, ProtocolError, UnauthenticatedError
from .listeners import DocumentListener, DocumentSnapshot, QueryListener, QuerySnapshot
from .queries import Avg, Count, Sum
from .results import CommitResult, Document, QueryResult, WriteResult
from .values import (DELETE_FIELD, DOCUMENT_ID, SERVER_TIMESTAMP, ArrayRemove, ArrayUnion, GeoPoint, Increment,
                     Maximum, Minimum, Reference, decode, encode)
from .writes import Batch, Precondition

__version__ = "0.1.0"

__all__ = [
    "connect", "Client", "HearthError", "HearthConnectionError", "ProtocolError", "UnauthenticatedError",
    "Document", "WriteResult", "CommitResult", "QueryResult",
    "Reference", "GeoPoint", "SERVER_TIMESTAMP", "DELETE_FIELD", "DOCUMENT_ID",
    "Increment", "Maximum", "Minimum", "ArrayUnion", "ArrayRemove", "encode", "decode",
    "Batch", "Precondition", "Count", "Sum", "Avg",
    "QueryListener", "DocumentListener", "QuerySnapshot", "DocumentSnapshot", "DocumentChange",
    "apply_changes", "diff",
]
