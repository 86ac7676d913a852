"""Exceptions raised by the Hearth client.

Contract:
- A request answered with ``{"ok": false, "error": {"code", "message"}}`` raises :class:`HearthError`
  carrying the server's ``code`` (one of the codes in docs/protocol.md, e.g. ``"NOT_FOUND"``) and
  ``message`` verbatim. A listener ended by a pushed ``{"type": "error"}`` line raises the same class.
- A lost or closed connection raises :class:`HearthConnectionError`, a subclass of the built-in
  :class:`ConnectionError`, so ``except ConnectionError`` catches it.
- ``UNAUTHENTICATED`` (a refused hello: expired token, bad signature...; or a request on a connection whose
  identity lapsed) raises :class:`UnauthenticatedError`, a :class:`HearthError`.
- A server line the client cannot make sense of (not JSON, a listener change that does not fit the
  client's state) raises :class:`ProtocolError`, a :class:`HearthError` with code ``"PROTOCOL"``.
"""

from __future__ import annotations


class HearthError(Exception):
    """A request or listener failed on the server: ``code`` (e.g. ``"ALREADY_EXISTS"``) and ``message``."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message

    @classmethod
    def from_wire(cls, error: object) -> "HearthError":
        """Builds the error from a response's ``error`` object, tolerating a missing or odd one."""
        if isinstance(error, dict):
            code, message = str(error.get("code", "UNKNOWN")), str(error.get("message", ""))
            if code == "UNAUTHENTICATED":
                return UnauthenticatedError(message)
            return cls(code, message)
        return cls("UNKNOWN", repr(error))


class UnauthenticatedError(HearthError):
    """The server refused the connection's identity (code ``UNAUTHENTICATED``); ``message`` says why, e.g.
    ``"expired: token expired at 1767225600, now 1767229200 (clock skew 60 s)"``."""

    def __init__(self, message: str) -> None:
        super().__init__("UNAUTHENTICATED", message)


class ProtocolError(HearthError):
    """The server sent something this client cannot interpret; the message says what."""

    def __init__(self, message: str) -> None:
        super().__init__("PROTOCOL", message)


class HearthConnectionError(ConnectionError):
    """The connection to hearthd was lost or closed before the request was answered."""
