"""Exceptions raised by the Hearth client.

Contract:
- A request answered with ``{"ok": false, "error": {"code", "message"}}`` raises :class:`HearthError`
  carrying the server's ``code`` (one of the codes in docs/protocol.md, e.g. ``"NOT_FOUND"``) and
  ``message`` verbatim. A listener ended by a pushed ``{"type": "error"}`` line raises the same class.
- A lost or closed connection raises :class:`HearthConnectionError`, a subclass of the built-in
  :class:`ConnectionError`, so ``except ConnectionError`` catches it.
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
            return cls(str(error.get("code", "UNKNOWN")), str(error.get("message", "")))
        return cls("UNKNOWN", repr(error))


class ProtocolError(HearthError):
    """The server sent something this client cannot interpret; the message says what."""

    def __init__(self, message: str) -> None:
        super().__init__("PROTOCOL", message)


class HearthConnectionError(ConnectionError):
    """The connection to hearthd was lost or closed before the request was answered."""
