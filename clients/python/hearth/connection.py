"""One TCP connection to hearthd: newline-delimited JSON framing, request/response matching, push routing.

Contract:
- :meth:`Connection.request` assigns the next id from the shared counter, writes one line and returns the
  response dict when ``ok`` is true; ``ok: false`` raises :class:`HearthError`. Any number of requests may
  be in flight at once (pipelining); responses are matched by their echoed ``id`` (a response without an
  id, such as the answer to an over-long line, goes to the oldest request still waiting, since the server
  answers in request order).
- ``on_ok`` callbacks run inside the read loop, before the next line is read: a ``listen`` response
  registers its subscription before any line pushed for it can be routed.
- Pushed lines (``"type"`` and no ``"ok"``) with a ``"sub"`` go to the listener registered for it;
  pushes for an unknown sub are dropped (they may trail an ``unlisten``), except that while a ``listen``
  is unanswered they are held and replayed if that sub gets registered. ``heartbeat`` lines go to every
  listener registered on this connection. An ``error`` push without a ``sub`` is about the connection
  (e.g. a subscriber too slow to drain its output): it becomes the reason the connection ends with.
- When the connection ends (EOF, socket error, :meth:`close`, or an unparseable line), every waiting
  request fails with :class:`HearthConnectionError`, and ``closed`` (a future) completes.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import ssl as _ssl
from collections import OrderedDict
from typing import Any, Callable, Protocol

from .errors import HearthConnectionError, HearthError, ProtocolError


class PushTarget(Protocol):
    """What a listener exposes to the connection that routes its pushed lines."""

    def on_push(self, message: dict[str, Any]) -> None: ...

    def on_heartbeat(self, seq: int) -> None: ...


def dumps(message: Any) -> bytes:
    """One request line: compact UTF-8 JSON plus ``\\n`` (NaN/Infinity are refused, not sent)."""
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode() + b"\n"


class _Pending:
    __slots__ = ("future", "on_ok", "is_listen")

    def __init__(self, future: asyncio.Future[Any], on_ok: Callable[[dict[str, Any]], None] | None, is_listen: bool) -> None:
        self.future = future
        self.on_ok = on_ok
        self.is_listen = is_listen


class Connection:
    """A live connection; create it with :meth:`open`."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 ids: "itertools.count[int]") -> None:
        self._reader = reader
        self._writer = writer
        self._ids = ids
        self._pending: OrderedDict[Any, _Pending] = OrderedDict()
        self._subs: dict[str | int, PushTarget] = {}
        self._held: list[dict[str, Any]] = []
        self._open_listens = 0
        self.server_error: HearthError | None = None
        """The connection-level error the server pushed before closing, if any."""
        self.unrouted_pushes = 0
        """Pushed lines dropped because no listener was registered for their sub (a diagnostic)."""
        self.closed: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._task = asyncio.create_task(self._read_loop(), name="hearth-read")

    @classmethod
    async def open(cls, host: str, port: int, ids: "itertools.count[int]", *,
                   max_line_bytes: int = 1 << 28, ssl: _ssl.SSLContext | None = None,
                   server_hostname: str | None = None) -> "Connection":
        """Connects; raises ``OSError`` (e.g. ``ConnectionRefusedError``) when the daemon is not there. With
        ``ssl`` the connection speaks TLS (as :func:`asyncio.open_connection` does; the certificate must name
        ``server_hostname``, default ``host``): a failed certificate check raises
        :class:`ssl.SSLCertVerificationError`, a daemon that does not speak TLS on this port
        :class:`HearthConnectionError` saying so."""
        try:
            reader, writer = await asyncio.open_connection(
                host, port, limit=max_line_bytes, ssl=ssl,
                server_hostname=(server_hostname or host) if ssl is not None else None)
        except _ssl.SSLCertVerificationError:
            raise
        except _ssl.SSLError as e:
            if e.reason == "WRONG_VERSION_NUMBER":
                raise HearthConnectionError(
                    f"TLS handshake with {host}:{port} failed: the daemon answered in plain text "
                    f"(TLS is not on for this port) ({e})") from e
            raise HearthConnectionError(f"TLS handshake with {host}:{port} failed: {e}") from e
        return cls(reader, writer, ids)

    @property
    def is_closed(self) -> bool:
        return self.closed.done()

    async def request(self, message: dict[str, Any], on_ok: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
        """Sends ``message`` (its ``id`` is replaced by a fresh one) and awaits the ok response."""
        if self.is_closed:
            raise HearthConnectionError("connection is closed")
        rid = next(self._ids)
        line = dumps({**message, "id": rid})
        future = asyncio.get_running_loop().create_future()
        is_listen = message.get("op") == "listen"
        self._pending[rid] = _Pending(future, on_ok, is_listen)
        if is_listen:
            self._open_listens += 1
        try:
            self._writer.write(line)
            await self._writer.drain()
        except (ConnectionError, OSError) as e:
            self._shutdown(HearthConnectionError(f"connection lost while sending: {e}"))
        response: dict[str, Any] = await future
        return response

    def register_sub(self, sub: str | int, target: PushTarget) -> None:
        """Routes pushes for ``sub`` to ``target`` from now on (and replays any held for it)."""
        self._subs[sub] = target
        held = [m for m in self._held if m.get("sub") == sub]
        if held:
            self._held = [m for m in self._held if m.get("sub") != sub]
            for m in held:
                target.on_push(m)

    def unregister_sub(self, sub: str | int) -> None:
        """Stops routing ``sub``; later pushes for it are dropped."""
        self._subs.pop(sub, None)

    async def close(self) -> None:
        """Closes the socket; waiting requests fail with HearthConnectionError."""
        self._shutdown(HearthConnectionError("connection closed by the client"))
        try:
            await self._writer.wait_closed()
        except (ConnectionError, OSError):
            pass
        if self._task is not asyncio.current_task():
            await asyncio.gather(self._task, return_exceptions=True)

    def abort(self) -> None:
        """Drops the connection at once, without a clean close (for tests of connection loss)."""
        transport = self._writer.transport
        self._shutdown(HearthConnectionError("connection dropped by the client"))
        transport.abort()

    # -- reading ---------------------------------------------------------------------------------------

    async def _read_loop(self) -> None:
        error: HearthConnectionError = HearthConnectionError("connection closed by the server")
        try:
            while True:
                line = await self._reader.readline()
                if not line:
                    break
                if not line.endswith(b"\n"):
                    break  # EOF in the middle of a line: the connection died
                line = line.strip()
                if not line:
                    continue
                try:
                    message = json.loads(line)
                except ValueError as e:
                    raise ProtocolError(f"server sent a line that is not JSON ({e}): {line[:200]!r}") from None
                if not isinstance(message, dict):
                    raise ProtocolError(f"server sent a line that is not an object: {line[:200]!r}")
                self._dispatch(message)
        except asyncio.CancelledError:
            error = HearthConnectionError("connection closed by the client")
        except (ConnectionError, OSError, asyncio.LimitOverrunError, ValueError) as e:
            error = HearthConnectionError(f"connection lost: {e}")
        except ProtocolError as e:
            error = HearthConnectionError(f"connection dropped after a protocol error: {e.message}")
        if self.server_error is not None:
            error = HearthConnectionError(f"connection closed by the server: {self.server_error}")
            error.__cause__ = self.server_error
        self._shutdown(error)

    def _dispatch(self, message: dict[str, Any]) -> None:
        if "ok" in message:
            self._on_response(message)
        elif "type" in message:
            self._on_push(message)
        else:
            raise ProtocolError(f"line with neither 'ok' nor 'type': {str(message)[:200]}")

    def _on_response(self, message: dict[str, Any]) -> None:
        rid = message.get("id")
        entry = self._pending.pop(rid, None) if rid is not None else None
        if entry is None:
            if rid is not None or not self._pending:
                return  # an answer nobody waits for (e.g. to a request from before a cancel)
            _, entry = self._pending.popitem(last=False)
        if entry.is_listen:
            self._open_listens -= 1
        if message.get("ok") is True:
            if entry.on_ok is not None:
                entry.on_ok(message)
            if not entry.future.done():
                entry.future.set_result(message)
        elif not entry.future.done():
            entry.future.set_exception(HearthError.from_wire(message.get("error")))
        if self._open_listens == 0:
            self._held.clear()

    def _on_push(self, message: dict[str, Any]) -> None:
        if message.get("type") == "error" and message.get("sub") is None:
            self.server_error = HearthError.from_wire(message.get("error"))
            return
        if message.get("type") == "heartbeat":
            seq = message.get("seq")
            if isinstance(seq, int):
                for target in list(self._subs.values()):
                    target.on_heartbeat(seq)
            return
        sub = message.get("sub")
        found = self._subs.get(sub) if isinstance(sub, (str, int)) else None
        if found is not None:
            target = found
            target.on_push(message)
        elif self._open_listens > 0:
            self._held.append(message)
        else:
            self.unrouted_pushes += 1

    def _shutdown(self, error: HearthConnectionError) -> None:
        if self.closed.done():
            return
        self._subs.clear()
        self._held.clear()
        pending, self._pending = self._pending, OrderedDict()
        for entry in pending.values():
            if not entry.future.done():
                entry.future.set_exception(error)
        try:
            self._writer.close()
        except RuntimeError:
            pass  # the event loop is already closed
        if self._task is not asyncio.current_task():
            self._task.cancel()
        self.closed.set_result(error)
