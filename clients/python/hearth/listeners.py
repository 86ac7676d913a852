"""Realtime listeners: ``listen`` subscriptions with client-side state, resume and clean shutdown.

Contract (see docs/protocol.md for the wire side):
- A listener yields snapshots in ``seq`` order. The first is ``initial``; each later one carries the
  changes since the previous snapshot *this listener yielded*, so applying ``changes`` in order (Firestore
  docChanges semantics, see :mod:`hearth.changes`) to the previous ``docs`` gives the new ``docs``.
- The listener remembers the last ``seq`` it has applied (advanced by heartbeats too) and the database
  ``history`` that seq belongs to (named by the listen response). When the client was connected with
  ``reconnect=True`` and the connection drops, the listener re-subscribes on the new connection with
  ``resumeAfter`` = that seq and ``history`` (when known) and folds the first snapshot (net changes since
  then, or a full ``reset`` result that it diffs against its state) into one ordinary snapshot — or yields
  nothing when nothing changed — so the consumer sees no gap and no duplicate. The server resets when the
  change log no longer reaches back, and when the seq is not one of its history (another database, or one
  restored from a copy). ``reset`` is true on a snapshot whose changes the client computed from a full
  result the server re-sent (for a document listener: whose document replaced the previous one).
- Snapshots wait in the listener until consumed. When the consumer falls behind, waiting snapshots merge
  into one (the latest ``docs`` and ``seq``, with the changes since the last snapshot yielded), so a slow
  consumer costs one result's worth of memory, never a backlog; ``pending`` counts waiting snapshots.
- Without ``reconnect`` a lost connection ends iteration with :class:`HearthConnectionError`. A pushed
  ``error`` ends it with :class:`HearthError`; closing the client ends it normally.
- Leaving ``async for`` (break, return, exception), ``await listener.close()`` or ``async with`` exit
  sends ``unlisten``. (After a ``break`` the iteration generator is closed when it is garbage collected —
  at once in CPython — which schedules the unlisten; call ``close()`` to wait for it.)
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, AsyncIterator

from .changes import ADDED, DocumentChange, apply_changes, diff
from .errors import HearthConnectionError, HearthError, ProtocolError
from .results import Document

if TYPE_CHECKING:
    from .client import Client
    from .connection import Connection


@dataclass
class QuerySnapshot:
    """A query's full ordered result (``docs``) as of ``seq``, with the ``changes`` since the previous
    snapshot of the same listener (all ``added`` when ``initial``)."""

    docs: list[Document]
    changes: list[DocumentChange]
    seq: int
    initial: bool
    reset: bool = False

    @property
    def size(self) -> int:
        return len(self.docs)


@dataclass
class DocumentSnapshot:
    """One document as of ``seq``: ``doc`` is ``None`` when it does not exist. ``reset`` is true when the
    server could not resume the listener and re-sent the document (e.g. the database was replaced)."""

    doc: Document | None
    seq: int
    initial: bool = False
    reset: bool = False

    @property
    def exists(self) -> bool:
        return self.doc is not None


_END = object()


@dataclass
class _Failure:
    error: BaseException


@dataclass
class _State:
    """What the listener knows, as of ``last_seq`` (``None`` before the first snapshot)."""

    last_seq: int | None = None
    history: str | None = None      # the database history last_seq belongs to (None: the server named none)
    sub_history: str | None = None  # the history the current subscription's listen response named
    synced: bool = False            # the current subscription's first snapshot has been applied
    resuming: bool = False          # the current subscription was sent with resumeAfter
    emitted: bool = False           # a snapshot has been yielded to the consumer
    extra: dict[str, Any] = field(default_factory=dict)


class Listener:
    """Base of :class:`QueryListener` and :class:`DocumentListener`; see the module docstring."""

    def __init__(self, client: "Client", spec: dict[str, Any], heartbeat_ms: int | None) -> None:
        self._client = client
        self._spec = spec
        self._heartbeat_ms = heartbeat_ms
        self._items: deque[Any] = deque()            # waiting snapshots, then at most one terminal item
        self._wakeup = asyncio.Event()
        self._state = _State()
        self._sub: str | int | None = None
        self._conn: "Connection | None" = None
        self._task: asyncio.Task[None] | None = None
        self._close_requested = asyncio.Event()
        self._ended = asyncio.Event()          # ended by a pushed error or a protocol error
        self._end_is_local = False             # ended by the client (needs an unlisten)
        self._finished = False                 # a terminal item was queued
        self._exhausted = False                # the consumer has seen the terminal item
        self._subscribed: asyncio.Future[Any] = asyncio.get_running_loop().create_future()

    # -- consumer side ---------------------------------------------------------------------------------

    @property
    def sub(self) -> str | int | None:
        """The server's subscription id on the current connection (``None`` while not subscribed)."""
        return self._sub

    @property
    def last_seq(self) -> int | None:
        """The seq up to which this listener's state is complete (its resume point)."""
        return self._state.last_seq

    @property
    def history(self) -> str | None:
        """The history ID (16 hex digits) of the database ``last_seq`` belongs to, sent with it on resume;
        ``None`` before the first snapshot or when the server names none (an older hearthd)."""
        return self._state.history

    @property
    def synced(self) -> bool:
        """True while subscribed on a live connection with the subscription's first snapshot applied."""
        return self._sub is not None and self._state.synced

    @property
    def closed(self) -> bool:
        """True once the listener has stopped (closed, ended by an error, or its client closed)."""
        return self._task is not None and self._task.done()

    def _ensure_started(self) -> None:
        if self._task is None and not self._close_requested.is_set():
            self._task = asyncio.create_task(self._run(), name="hearth-listener")

    async def start(self) -> "Listener":
        """Subscribes (once) and waits for the server to acknowledge; raises if the listen fails."""
        self._ensure_started()
        await asyncio.shield(self._subscribed)
        return self

    async def next(self) -> Any:
        """The next snapshot; raises ``StopAsyncIteration`` at the end, or the error that ended it."""
        if self._exhausted or self._close_requested.is_set():
            raise StopAsyncIteration
        self._ensure_started()
        while not self._items:
            self._wakeup.clear()
            await self._wakeup.wait()
        item = self._items.popleft()
        if item is _END or isinstance(item, _Failure):
            self._exhausted = True
            if isinstance(item, _Failure):
                raise item.error
            raise StopAsyncIteration
        self._yielded(item)
        return item

    @property
    def pending(self) -> int:
        """How many snapshots are waiting to be consumed (0 or 1 while the consumer keeps up)."""
        return sum(1 for i in self._items if i is not _END and not isinstance(i, _Failure))

    def __anext__(self) -> Any:
        return self.next()

    def __aiter__(self) -> AsyncIterator[Any]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[Any]:
        try:
            while True:
                try:
                    snapshot = await self.next()
                except StopAsyncIteration:
                    return
                yield snapshot
        finally:
            try:
                await self.close()
            except HearthError:
                pass

    async def close(self) -> None:
        """Stops the listener, sending ``unlisten`` when subscribed. Idempotent."""
        self._close_requested.set()
        if self._task is None:
            self._client._listeners.discard(self)
            self._finish(_END)
            if not self._subscribed.done():
                self._subscribed.set_exception(HearthConnectionError("listener closed before it started"))
                self._subscribed.exception()
            return
        if self._task is not asyncio.current_task():
            await asyncio.gather(self._task, return_exceptions=True)

    aclose = close

    async def __aenter__(self) -> "Listener":
        return await self.start()

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    # -- subscription loop -----------------------------------------------------------------------------

    def _finish(self, item: Any) -> None:
        if not self._finished:
            self._finished = True
            self._items.append(item if item is _END else _Failure(item))
            self._wakeup.set()

    def _fail(self, error: BaseException, *, local: bool) -> None:
        self._end_is_local = local
        self._finish(error)
        self._ended.set()

    async def _wait_connection(self) -> "Connection | None":
        """The client's live connection, or ``None`` once closing was requested."""
        waiter = asyncio.ensure_future(self._client._wait_connection())
        closing = asyncio.ensure_future(self._close_requested.wait())
        try:
            await asyncio.wait({waiter, closing}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            closing.cancel()
            if not waiter.done():
                waiter.cancel()
        if self._close_requested.is_set():
            if waiter.done() and not waiter.cancelled():
                waiter.exception()  # mark retrieved
            return None
        return waiter.result()

    async def _run(self) -> None:
        try:
            await self._subscription_loop()
        except HearthConnectionError as e:
            self._finish(_END if self._client.is_closed or self._close_requested.is_set() else e)
        except BaseException as e:  # noqa: BLE001 - handed to the consumer, never lost
            self._finish(e)
            if isinstance(e, asyncio.CancelledError):
                raise
        finally:
            self._sub = None
            self._client._listeners.discard(self)
            self._finish(_END)
            if not self._subscribed.done():
                self._subscribed.set_exception(HearthConnectionError("listener ended before it subscribed"))
            if self._subscribed.done() and not self._subscribed.cancelled():
                self._subscribed.exception()  # mark retrieved

    async def _subscription_loop(self) -> None:
        while True:
            conn = await self._wait_connection()
            if conn is None:
                return
            message: dict[str, Any] = {"op": "listen", **self._spec}
            st = self._state
            st.resuming = st.last_seq is not None
            st.synced = False
            st.sub_history = None
            if st.resuming:
                message["resumeAfter"] = st.last_seq
                if st.history is not None:
                    message["history"] = st.history
            if self._heartbeat_ms is not None:
                message["heartbeatMs"] = self._heartbeat_ms
            try:
                await conn.request(message, on_ok=lambda r: self._on_listening(conn, r))
            except HearthConnectionError as e:
                if self._client._reconnecting():
                    continue
                if not self._subscribed.done():
                    self._subscribed.set_exception(e)
                raise
            except HearthError as e:
                if not self._subscribed.done():
                    self._subscribed.set_exception(e)
                self._fail(e, local=False)
                return
            if not self._subscribed.done():
                self._subscribed.set_result(None)

            watchers = [asyncio.ensure_future(conn.closed), asyncio.ensure_future(self._close_requested.wait()),
                        asyncio.ensure_future(self._ended.wait())]
            try:
                await asyncio.wait(watchers, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for w in watchers[1:]:
                    w.cancel()
            if self._close_requested.is_set() or (self._ended.is_set() and self._end_is_local):
                await self._unlisten(conn)
                return
            if self._ended.is_set():
                if self._sub is not None:
                    conn.unregister_sub(self._sub)
                return
            # The connection dropped.
            self._sub = None
            self._state.synced = False
            if self._client.is_closed:
                return
            if not self._client._reconnecting():
                raise conn.closed.result()

    def _on_listening(self, conn: "Connection", response: dict[str, Any]) -> None:
        sub = response.get("sub")
        if not isinstance(sub, (str, int)) or isinstance(sub, bool):
            self._fail(ProtocolError(f"listen response without a sub: {response!r}"), local=False)
            return
        self._sub = sub
        self._conn = conn
        # The history of this subscription's seqs; it becomes the listener's with the first snapshot applied
        # (a drop before that keeps the previous seq and history together).
        history = response.get("history")
        self._state.sub_history = history if isinstance(history, str) else None
        conn.register_sub(sub, self)

    async def _unlisten(self, conn: "Connection") -> None:
        sub, self._sub = self._sub, None
        if sub is None or conn.is_closed:
            return
        conn.unregister_sub(sub)
        try:
            await conn.request({"op": "unlisten", "sub": sub})
        except HearthConnectionError:
            pass

    # -- pushed lines (called synchronously by the connection's read loop) ----------------------------

    def on_push(self, message: dict[str, Any]) -> None:
        if self._finished or self._close_requested.is_set():
            return
        kind = message.get("type")
        try:
            if kind == "snapshot":
                self._on_snapshot(message)
            elif kind == "error":
                self._fail(HearthError.from_wire(message.get("error")), local=False)
        except ProtocolError as e:
            self._fail(e, local=True)
        except (KeyError, TypeError, ValueError) as e:
            self._fail(ProtocolError(f"malformed snapshot ({e!r}): {str(message)[:300]}"), local=True)

    def on_heartbeat(self, seq: int) -> None:
        st = self._state
        if st.synced and st.last_seq is not None and seq > st.last_seq:
            st.last_seq = seq

    def _take_seq(self, message: dict[str, Any]) -> int:
        seq = message.get("seq")
        if not isinstance(seq, int) or isinstance(seq, bool):
            raise ProtocolError(f"snapshot without an integer seq: {str(message)[:300]}")
        return seq

    def _applied(self, seq: int) -> None:
        """Notes that the state is now exact at ``seq`` of the current subscription's history."""
        st = self._state
        st.last_seq = seq
        if seq > self._client.seen_seq:
            self._client.seen_seq = seq
        st.history = st.sub_history
        st.synced = True
        st.resuming = False

    def _emit(self, snapshot: Any) -> None:
        self._state.emitted = True
        if self._items and not self._finished:
            snapshot = self._merge(self._items.pop(), snapshot)
            if snapshot is None:
                return
        self._items.append(snapshot)
        self._wakeup.set()

    def _merge(self, waiting: Any, newer: Any) -> Any:
        """One snapshot standing for ``waiting`` followed by ``newer`` (``None`` when they cancel out)."""
        raise NotImplementedError

    def _yielded(self, snapshot: Any) -> None:
        """Notes the snapshot handed to the consumer (the base of later merged changes)."""

    def _on_snapshot(self, message: dict[str, Any]) -> None:
        raise NotImplementedError


class QueryListener(Listener):
    """Listens to a query; yields :class:`QuerySnapshot` objects (see the module docstring)."""

    def __init__(self, client: "Client", query: dict[str, Any], heartbeat_ms: int | None) -> None:
        super().__init__(client, {"query": query}, heartbeat_ms)
        self._docs: list[Document] = []
        self._consumer_docs: list[Document] = []   # docs of the last snapshot yielded

    @property
    def docs(self) -> list[Document]:
        """The current ordered result as last applied (a copy)."""
        return list(self._docs)

    def _on_snapshot(self, message: dict[str, Any]) -> None:
        st = self._state
        seq = self._take_seq(message)
        changes = [DocumentChange.from_wire(c) for c in message.get("changes", [])]
        reset = bool(message.get("reset"))
        first_of_subscription = not st.synced
        resumed = first_of_subscription and st.resuming
        if reset or (first_of_subscription and not resumed):
            if any(c.type != ADDED for c in changes):
                raise ProtocolError("a full result (initial or reset) may only hold added changes")
            new_docs = apply_changes([], changes)
            if st.emitted:
                changes = diff(self._docs, new_docs)
        else:
            new_docs = apply_changes(self._docs, changes)
        size = message.get("size")
        if size is not None and size != len(new_docs):
            raise ProtocolError(f"snapshot seq {seq} says size {size}, but its changes give {len(new_docs)}")
        self._docs = new_docs
        self._applied(seq)
        if resumed and not changes:
            return
        self._emit(QuerySnapshot(docs=list(new_docs), changes=changes, seq=seq, initial=not st.emitted,
                                 reset=reset and st.emitted))

    def _merge(self, waiting: QuerySnapshot, newer: QuerySnapshot) -> QuerySnapshot | None:
        base = [] if waiting.initial else self._consumer_docs
        changes = diff(base, newer.docs)
        if not changes and not waiting.initial:
            return None
        return QuerySnapshot(docs=newer.docs, changes=changes, seq=newer.seq, initial=waiting.initial,
                             reset=(waiting.reset or newer.reset) and not waiting.initial)

    def _yielded(self, snapshot: QuerySnapshot) -> None:
        self._consumer_docs = snapshot.docs


class DocumentListener(Listener):
    """Listens to one document; yields :class:`DocumentSnapshot` objects."""

    def __init__(self, client: "Client", path: str, heartbeat_ms: int | None) -> None:
        super().__init__(client, {"path": path}, heartbeat_ms)
        self._doc: Document | None = None
        self._consumer_doc: Document | None = None   # doc of the last snapshot yielded

    def _on_snapshot(self, message: dict[str, Any]) -> None:
        st = self._state
        seq = self._take_seq(message)
        if "doc" not in message:
            raise ProtocolError(f"document snapshot without 'doc': {str(message)[:300]}")
        doc = Document.from_wire(message["doc"])
        reset = bool(message.get("reset"))
        resumed = not st.synced and st.resuming
        unchanged = _same_doc(doc, self._doc)
        self._doc = doc
        self._applied(seq)
        if resumed and unchanged:
            return
        self._emit(DocumentSnapshot(doc=doc, seq=seq, initial=not st.emitted, reset=reset and st.emitted))

    def _merge(self, waiting: DocumentSnapshot, newer: DocumentSnapshot) -> DocumentSnapshot | None:
        if not waiting.initial and _same_doc(newer.doc, self._consumer_doc):
            return None
        return DocumentSnapshot(doc=newer.doc, seq=newer.seq, initial=waiting.initial,
                                reset=(waiting.reset or newer.reset) and not waiting.initial)

    def _yielded(self, snapshot: DocumentSnapshot) -> None:
        self._consumer_doc = snapshot.doc


def _same_doc(a: Document | None, b: Document | None) -> bool:
    """Whether two versions are the same (both absent, or equal create and update times)."""
    if a is None or b is None:
        return a is b
    return a.update_time == b.update_time and a.create_time == b.create_time and a.path == b.path
