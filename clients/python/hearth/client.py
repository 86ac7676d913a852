"""The Hearth client: one connection (re-established on loss when ``reconnect=True``), typed convenience
methods over :meth:`Client.request`, and realtime listeners.

Contract:
- :meth:`Client.request` is the raw protocol: ``request("get", path="a/b")`` sends
  ``{"op": "get", "path": "a/b", "id": n}`` with ``n`` from an auto-incrementing counter (any ``id`` given
  is replaced), waits for the response with that id and returns it as a dict (wire forms, not decoded) when
  ``ok``; raises :class:`HearthError` when ``ok`` is false. Fields must be JSON-ready (use
  :func:`hearth.encode` for values). Calls may run concurrently: they pipeline on the one connection.
- Convenience methods encode Python values and decode results (:mod:`hearth.values`, :mod:`hearth.results`).
- Requests waiting when the connection is lost fail with :class:`HearthConnectionError` (a
  ``ConnectionError``); they are never re-sent, since a write may or may not have been applied. With
  ``reconnect=True`` the client re-connects with exponential backoff (``reconnect_delay`` doubling up to
  ``max_reconnect_delay``), requests made meanwhile wait for the new connection, and listeners resume;
  without it, later requests fail at once. After :meth:`close` every request fails.
- Authentication (see :mod:`hearth.auth`): unless the client is anonymous, every connection, the first and
  each reconnect, sends ``{"op": "hello", "token": ...}`` (or ``"adminKey"``) and waits for its answer
  before any other line goes out on it, so queued requests and resuming listeners always follow the hello.
  A refused first hello makes :func:`connect` raise :class:`UnauthenticatedError`; a refused hello on a
  reconnect is kept in ``auth_error`` and retried with backoff (the token source is asked again each
  time). :meth:`Client.authenticate` re-authenticates the live connection (token refresh); listeners stay.
"""

from __future__ import annotations

import asyncio
import itertools
import random
import ssl as _ssl
from typing import Any, Callable, Iterable

from .auth import Credentials, TokenSource
from .connection import Connection
from .errors import HearthConnectionError
from .listeners import DocumentListener, Listener, QueryListener
from .queries import encode_aggregations, query_fields
from .results import CommitResult, Document, QueryResult, WriteResult
from .values import decode, encode
from .writes import Batch, Precondition, encode_writes, write_fields

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 7411


class Client:
    """A connection to hearthd; obtain one with :func:`hearth.connect`."""

    def __init__(self, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, *, reconnect: bool = False,
                 reconnect_delay: float = 0.05, max_reconnect_delay: float = 2.0,
                 max_line_bytes: int = 1 << 28, credentials: Credentials | None = None,
                 ssl: _ssl.SSLContext | None = None, server_hostname: str | None = None,
                 addresses: Iterable[str | tuple[str, int]] | None = None) -> None:
        self.addresses: list[tuple[str, int]] = parse_addresses(addresses) if addresses is not None else [(host, port)]
        """The nodes this client may connect to, tried in turn (several nodes of one database)."""
        self._current = self.addresses[0]
        self._next_address = 0
        self.seen_seq = 0
        """The highest seq this client has seen (answers, snapshots, heartbeats): with several addresses, a
        new connection first waits until its node has published it (``hello`` with ``minSeq``), so the client
        never reads older state than it saw."""
        self.ssl = ssl
        """The TLS context (``None``: plain text); re-connections use it too."""
        self.server_hostname = server_hostname
        self.reconnect = reconnect
        self.reconnect_delay = reconnect_delay
        self.max_reconnect_delay = max_reconnect_delay
        self._max_line_bytes = max_line_bytes
        self._ids = itertools.count(1)
        self._conn: Connection | None = None
        self._connected = asyncio.Event()
        self._closed = False
        self._reconnect_task: asyncio.Task[None] | None = None
        self._listeners: set[Listener] = set()
        self.reconnects = 0
        """How many times the connection has been re-established."""
        self._credentials = credentials if credentials is not None else Credentials()
        self.auth: dict[str, Any] | None = None
        """The server's ``auth`` answer to the last hello: ``{"uid", "admin", "expiresAt"}``, or ``None``."""
        self._state: tuple[str, str | None] = ("disconnected", "not connected yet")
        self._state_listeners: dict[int, Callable[[str, str | None], None]] = {}
        self._state_ids = itertools.count(1)
        self.auth_error: Exception | None = None
        """Why the last reconnect could not authenticate (an :class:`UnauthenticatedError`, or the token
        source's exception), or ``None``."""

    # -- connection management --------------------------------------------------------------------------

    @property
    def host(self) -> str:
        """The address of the current (or last) connection; setting ``host`` or ``port`` points later
        connections at that one address."""
        return self._current[0]

    @host.setter
    def host(self, value: str) -> None:
        self._point_at(value, self._current[1])

    @property
    def port(self) -> int:
        return self._current[1]

    @port.setter
    def port(self, value: int) -> None:
        self._point_at(self._current[0], value)

    def _point_at(self, host: str, port: int) -> None:
        self.addresses = [(host, port)]
        self._current = (host, port)
        self._next_address = 0

    async def _open(self) -> "Client":
        self._attach(await self._connect())
        return self

    async def _connect(self) -> Connection:
        """A new connection with this client's TLS settings, to the next of its addresses that accepts one
        (each tried once, in turn, starting after the last one used), authenticated (unless anonymous) and
        caught up with the seq this client has seen before anything else is sent on it. Raises the last
        address's error when none accepts."""
        failure: BaseException | None = None
        for _ in range(len(self.addresses)):
            host, port = self.addresses[self._next_address]
            self._next_address = (self._next_address + 1) % len(self.addresses)
            try:
                conn = await Connection.open(host, port, self._ids, max_line_bytes=self._max_line_bytes,
                                             ssl=self.ssl, server_hostname=self.server_hostname)
            except OSError as e:
                failure = e
                continue
            try:
                fields: dict[str, Any] | None = await self._credentials.hello_fields()
                if self.seen_seq > 0 and len(self.addresses) > 1:
                    # Another node may be behind what this client saw (one node never goes back).
                    fields = {**(fields or {}), "minSeq": self.seen_seq}
                if fields is not None:
                    answer = await conn.request({"op": "hello", **fields})
                    if "auth" in answer:
                        self.auth = answer.get("auth")
                    self._note_seq(answer)
            except BaseException:
                await conn.close()
                raise
            self._current = (host, port)
            return conn
        assert failure is not None
        raise failure

    def _note_seq(self, answer: dict[str, Any]) -> None:
        seq = answer.get("seq")
        if isinstance(seq, int) and not isinstance(seq, bool) and seq > self.seen_seq:
            self.seen_seq = seq

    # -- connection state ------------------------------------------------------------------------------

    @property
    def connection_state(self) -> tuple[str, str | None]:
        """``("connected", None)`` while a connection is up (and its hello was accepted), else
        ``("disconnected", reason)``: not connected yet, the connection was lost, a reconnect attempt failed
        (its error), or the client was closed."""
        return self._state

    def add_connection_state_listener(self, callback: Callable[[str, str | None], None]) -> Callable[[], None]:
        """Calls ``callback(state, reason)`` with the current state (on the next loop turn), then on every
        change of :attr:`connection_state`; returns a function that removes it. A listener on a server that
        cannot be reached (``reconnect=True`` after a drop) keeps waiting and resumes when it is back; this is
        how an application learns about it meanwhile. A failed attempt with the same reason as the previous
        one is not reported again. Callbacks run on the event loop and must not block."""
        key = next(self._state_ids)
        self._state_listeners[key] = callback
        state = self._state
        asyncio.get_running_loop().call_soon(lambda: callback(*state) if key in self._state_listeners else None)

        def remove() -> None:
            self._state_listeners.pop(key, None)
        return remove

    def _set_state(self, state: str, reason: str | None = None) -> None:
        if (state, reason) == self._state:
            return
        self._state = (state, reason)
        for callback in list(self._state_listeners.values()):
            callback(state, reason)

    def _attach(self, conn: Connection) -> None:
        self._conn = conn
        self._connected.set()
        self._set_state("connected")
        conn.closed.add_done_callback(lambda _f: self._on_lost(conn))

    def _on_lost(self, conn: Connection) -> None:
        if self._conn is not conn:
            return
        self._conn = None
        if self._closed:
            return
        self._set_state("disconnected", "connection lost")
        self._connected.clear()
        if self.reconnect and (self._reconnect_task is None or self._reconnect_task.done()):
            self._reconnect_task = asyncio.get_running_loop().create_task(self._reconnect_loop(),
                                                                          name="hearth-reconnect")

    async def _reconnect_loop(self) -> None:
        delay = self.reconnect_delay
        while not self._closed:
            await asyncio.sleep(delay * random.uniform(0.75, 1.25))
            try:
                conn = await self._connect()
            except OSError as e:
                where = ", ".join(f"{h}:{p}" for h, p in self.addresses)
                self._set_state("disconnected", f"cannot connect to {where}: {e}")
                delay = min(delay * 2, self.max_reconnect_delay)
                continue
            except Exception as e:  # the hello was refused, or the token source failed: ask again later
                self._set_state("disconnected", f"hello refused: {e}")
                self.auth_error = e
                delay = min(delay * 2, self.max_reconnect_delay)
                continue
            self.auth_error = None
            if self._closed:
                await conn.close()
                return
            self.reconnects += 1
            self._attach(conn)
            return

    def _reconnecting(self) -> bool:
        return self.reconnect and not self._closed

    async def _wait_connection(self) -> Connection:
        while True:
            if self._closed:
                raise HearthConnectionError("client is closed")
            if self._conn is not None:
                if not self._conn.is_closed:
                    return self._conn
                self._on_lost(self._conn)  # its close callback may not have run yet
            if not self.reconnect:
                raise HearthConnectionError("not connected: the connection was lost")
            await self._connected.wait()

    @property
    def is_closed(self) -> bool:
        return self._closed

    @property
    def connected(self) -> bool:
        """True while a connection is up."""
        return self._conn is not None and not self._conn.is_closed

    def drop_connection(self) -> None:
        """Aborts the current connection as if the network failed (pending requests fail; with
        ``reconnect=True`` the client re-connects and listeners resume). Meant for tests and drills."""
        if self._conn is not None:
            self._conn.abort()

    async def close(self) -> None:
        """Closes the connection and ends every listener (their iteration stops normally). Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._set_state("disconnected", "closed")
        self._connected.set()
        if self._reconnect_task is not None:
            self._reconnect_task.cancel()
            await asyncio.gather(self._reconnect_task, return_exceptions=True)
        if self._conn is not None:
            await self._conn.close()
        tasks = [lst._task for lst in self._listeners if lst._task is not None]
        for lst in list(self._listeners):
            lst._close_requested.set()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def __aenter__(self) -> "Client":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    # -- raw protocol -------------------------------------------------------------------------------------

    async def request(self, op: str, **fields: Any) -> dict[str, Any]:
        """Sends ``{"op": op, "id": n, **fields}`` and returns the ok response (see the module docstring)."""
        conn = await self._wait_connection()
        answer = await conn.request({"op": op, **fields})
        self._note_seq(answer)
        return answer

    # -- reads --------------------------------------------------------------------------------------------

    async def hello(self, *, heartbeat_ms: int | None = None) -> dict[str, Any]:
        """Sets connection options (``heartbeat_ms``: heartbeats while idle, 0 turns them off); returns the
        server's ``version``, ``seq`` and the database's ``history`` ID (``None`` from an older server). The
        option lasts for this connection only. The client's credentials go along, so the connection keeps
        its identity."""
        fields: dict[str, Any] = await self._credentials.hello_fields() or {}
        if heartbeat_ms is not None:
            fields["heartbeatMs"] = heartbeat_ms
        r = await self.request("hello", **fields)
        if "auth" in r:
            self.auth = r["auth"]
        return {"version": r.get("version"), "seq": r.get("seq"), "history": r.get("history")}

    async def authenticate(self, token: TokenSource | None = None) -> dict[str, Any] | None:
        """Re-authenticates the live connection with a hello (token refresh, before the old token expires);
        listeners stay subscribed. With ``token`` (a string or a callable, as for :func:`connect`), that
        becomes the client's credential for later reconnects too, once the server accepts it; without,
        the configured source is asked again (a token file re-read, a callable called). Returns the
        server's ``auth`` (``{"uid", "admin", "expiresAt"}``); raises :class:`UnauthenticatedError` when
        the server refuses, and ``ValueError`` when the client has no credentials at all."""
        credentials = Credentials(token=token) if token is not None else self._credentials
        fields = await credentials.hello_fields()
        if fields is None:
            raise ValueError("no credentials to authenticate with: pass a token")
        r = await self.request("hello", **fields)
        self._credentials = credentials
        self.auth = r.get("auth")
        return self.auth

    async def ping(self) -> int:
        """The last durable seq."""
        return int((await self.request("ping"))["seq"])

    async def get(self, path: str) -> Document | None:
        """The document at ``path``, or ``None`` when it does not exist."""
        return Document.from_wire((await self.request("get", path=path)).get("doc"))

    async def get_all(self, paths: Iterable[str]) -> list[Document | None]:
        """Documents in the order asked (at most 1,000), ``None`` for missing ones."""
        r = await self.request("getAll", paths=list(paths))
        return [Document.from_wire(d) for d in r.get("docs", [])]

    # -- writes -------------------------------------------------------------------------------------------

    async def _write(self, op: str, fields: dict[str, Any]) -> WriteResult:
        return WriteResult.from_wire(await self.request(op, **fields), id_key="docId")

    async def create(self, path: str, data: dict[str, Any]) -> WriteResult:
        """Creates the document; ``ALREADY_EXISTS`` if it exists."""
        return await self._write("create", write_fields(path, data))

    async def set(self, path: str, data: dict[str, Any], *, merge: bool = False, merge_fields: Iterable[str] | None = None,
                  precondition: Precondition | dict[str, Any] | None = None) -> WriteResult:
        """Replaces the document, or with ``merge=True`` / ``merge_fields=[...]`` merges into it."""
        return await self._write("set", write_fields(path, data, merge=merge, merge_fields=merge_fields,
                                                     precondition=precondition))

    async def update(self, path: str, data: dict[str, Any], *,
                     precondition: Precondition | dict[str, Any] | None = None) -> WriteResult:
        """Changes fields; top-level keys are dotted field paths. ``NOT_FOUND`` if absent."""
        return await self._write("update", write_fields(path, data, precondition=precondition))

    async def delete(self, path: str, *, precondition: Precondition | dict[str, Any] | None = None) -> WriteResult:
        """Deletes the document (succeeds when it is absent, unless a precondition says otherwise)."""
        return await self._write("delete", write_fields(path, precondition=precondition, has_data=False))

    async def add(self, collection: str, data: dict[str, Any]) -> WriteResult:
        """Creates a document with a new 20-character ID in ``collection``; the result's ``id`` is it."""
        return await self._write("add", {"collection": collection, "data": encode(data)})

    def batch(self) -> Batch:
        """A new empty :class:`Batch` for :meth:`commit`."""
        return Batch()

    async def commit(self, writes: Batch | Iterable[dict[str, Any]]) -> CommitResult:
        """Applies all writes atomically (all or none, one seq); a failure names the write's index."""
        return CommitResult.from_wire(await self.request("commit", writes=encode_writes(writes)))

    # -- queries ------------------------------------------------------------------------------------------

    async def query(self, collection: str | None = None, **query: Any) -> QueryResult:
        """Runs a query (keyword arguments of :func:`hearth.queries.query_fields`)."""
        r = await self.request("query", **query_fields(collection, **query))
        return QueryResult([doc for d in r.get("docs", []) if (doc := Document.from_wire(d)) is not None], r.get("seq"))

    async def count(self, collection: str | None = None, **query: Any) -> int:
        """The number of documents the query returns."""
        return int((await self.request("count", **query_fields(collection, **query)))["count"])

    async def aggregate(self, aggregations: dict[str, Any], collection: str | None = None, **query: Any) -> dict[str, Any]:
        """Runs aggregations (alias -> :class:`Count` / :class:`Sum` / :class:`Avg`) over the query; returns
        alias -> decoded value."""
        r = await self.request("aggregate", query=query_fields(collection, **query),
                               aggregations=encode_aggregations(aggregations))
        result: dict[str, Any] = decode(r.get("result", {}))
        return result

    async def explain(self, collection: str | None = None, **query: Any) -> dict[str, Any]:
        """The query's plan (wire form): index per branch, ranges, entries examined, documents returned."""
        plan: dict[str, Any] = (await self.request("explain", **query_fields(collection, **query)))["plan"]
        return plan

    async def create_index(self, collection: str, fields: list[Any], *, scope: str = "collection") -> dict[str, Any]:
        """Declares a composite index (fields: ``[["a","asc"], ["b","desc"]]``); returns its description."""
        r = await self.request("index", action="create", collection=collection, scope=scope,
                               fields=[list(f) for f in fields])
        index: dict[str, Any] = r["index"]
        return index

    async def list_indexes(self) -> list[dict[str, Any]]:
        indexes: list[dict[str, Any]] = (await self.request("index", action="list"))["indexes"]
        return indexes

    async def drop_index(self, index_id: int) -> None:
        await self.request("index", action="drop", indexId=index_id)

    # -- listeners ----------------------------------------------------------------------------------------

    def _track(self, listener: Listener) -> Listener:
        self._listeners.add(listener)
        return listener

    def listen_query(self, collection: str | None = None, *, heartbeat_ms: int | None = None,
                     **query: Any) -> QueryListener:
        """A listener over a query (the keyword arguments of :meth:`query` but ``select`` and ``offset``, which
        the daemon refuses for listeners); iterate it with ``async for`` to receive :class:`QuerySnapshot`
        objects. It subscribes on first use (or ``await .start()``)."""
        listener = QueryListener(self, query_fields(collection, **query), heartbeat_ms)
        return self._track(listener)  # type: ignore[return-value]

    def listen_document(self, path: str, *, heartbeat_ms: int | None = None) -> DocumentListener:
        """A listener on one document, yielding :class:`DocumentSnapshot` objects."""
        return self._track(DocumentListener(self, path, heartbeat_ms))  # type: ignore[return-value]


class _Connector:
    """What :func:`connect` returns: ``await`` it for a :class:`Client`, or use ``async with`` to close the
    client on exit."""

    def __init__(self, client_factory: Any) -> None:
        self._factory = client_factory
        self._client: Client | None = None

    def __await__(self) -> Any:
        return self._factory()._open().__await__()

    async def __aenter__(self) -> Client:
        self._client = await self._factory()._open()
        return self._client

    async def __aexit__(self, *exc: Any) -> None:
        if self._client is not None:
            await self._client.close()


def connect(host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, *, reconnect: bool = False,
            reconnect_delay: float = 0.05, max_reconnect_delay: float = 2.0,
            max_line_bytes: int = 1 << 28, token: TokenSource | None = None, token_file: str | None = None,
            admin_key: str | None = None, admin_key_file: str | None = None, ssl: _ssl.SSLContext | None = None,
            server_hostname: str | None = None, addresses: Iterable[str | tuple[str, int]] | None = None) -> _Connector:
    """Connects to hearthd: ``client = await hearth.connect(port=7411)`` or
    ``async with hearth.connect(...) as client:``. The first connection must succeed (``OSError`` otherwise,
    :class:`UnauthenticatedError` when the hello is refused); with ``reconnect=True`` later losses are
    repaired with backoff and listeners resume.

    Identity (at most one; default: ``HEARTH_TOKEN``, else ``HEARTH_ADMIN_KEY``, else anonymous): ``token``
    (a JWT, or a callable returning one, sync or async, asked on every connect), ``token_file`` (re-read on
    every connect), ``admin_key``, ``admin_key_file``. Conflicting sources raise ``ValueError`` here.

    TLS: pass ``ssl``, an :class:`ssl.SSLContext`, as :func:`asyncio.open_connection` takes it, e.g.
    ``ssl.create_default_context(cafile="ca.pem")`` (add ``load_cert_chain("client.pem", "client.key")`` for a
    daemon that requires client certificates). The daemon's certificate must name ``host``, or
    ``server_hostname`` when given.

    Several nodes of one database (``hearthd --postgres``): pass ``addresses`` (``["10.0.0.1:7411",
    "10.0.0.2:7411"]`` or ``(host, port)`` pairs) instead of ``host`` and ``port``. The client connects to the
    first that accepts, and after a loss (``reconnect=True``) to the next one in turn; the new node first
    catches up with the seq the client has seen (``hello`` with ``minSeq``), and listeners resume there."""
    credentials = Credentials(token=token, token_file=token_file, admin_key=admin_key, admin_key_file=admin_key_file)
    if addresses is not None:
        parse_addresses(addresses)   # a malformed address fails here, not on the first connect
    return _Connector(lambda: Client(host, port, reconnect=reconnect, reconnect_delay=reconnect_delay,
                                     max_reconnect_delay=max_reconnect_delay, max_line_bytes=max_line_bytes,
                                     credentials=credentials, ssl=ssl, server_hostname=server_hostname,
                                     addresses=addresses))


def parse_addresses(addresses: Iterable[str | tuple[str, int]]) -> list[tuple[str, int]]:
    """``"host:port"`` strings (``"[::1]:7411"`` for IPv6) or ``(host, port)`` pairs, at least one."""
    out: list[tuple[str, int]] = []
    for a in addresses:
        if isinstance(a, tuple):
            host, port = a
        else:
            host, sep, text = str(a).rpartition(":")
            if not sep or not host or not text.isdigit():
                raise ValueError(f"address {a!r} is not host:port")
            port = int(text)
            if host.startswith("[") and host.endswith("]"):
                host = host[1:-1]
        if not 0 < port < 65536:
            raise ValueError(f"address {a!r}: port {port} is out of range")
        out.append((host, port))
    if not out:
        raise ValueError("addresses is empty")
    return out
