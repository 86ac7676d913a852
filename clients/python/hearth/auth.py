"""Who the client is: a signed token (JWT), the admin key, or nobody.

Contract:
- Exactly one source may be given to :func:`hearth.connect`: ``token`` (a string, or a callable returning
  one, or an awaitable of one, called on every connect and reconnect, as Firebase's auth integration asks
  for a fresh ID token), ``token_file``, ``admin_key`` or ``admin_key_file``. With none given, the
  environment is read once, when the client is made: ``HEARTH_TOKEN``, else ``HEARTH_ADMIN_KEY`` (setting
  both is an error). With nothing anywhere, the client is anonymous and sends no hello.
- Files are read on every connect and reconnect (a rotated token file is picked up), whole, less one
  trailing line break; an empty or missing file raises :class:`ValueError` / ``OSError``.
- The hello is ``{"op": "hello", "token": "<JWT>"}`` or ``{"op": "hello", "adminKey": "<key>"}`` (plus the
  request id); it is the first line of every connection.
"""

from __future__ import annotations

import inspect
import os
from typing import Awaitable, Callable, Mapping, Union

TokenSource = Union[str, Callable[[], Union[str, Awaitable[str]]]]
"""A token, or a callable that returns one (or an awaitable of one) each time the client connects."""


class Credentials:
    """The configured identity source; :meth:`hello_fields` produces the hello's fields for one connect."""

    def __init__(self, *, token: TokenSource | None = None, token_file: str | os.PathLike[str] | None = None,
                 admin_key: str | None = None, admin_key_file: str | os.PathLike[str] | None = None,
                 environ: Mapping[str, str] | None = None) -> None:
        given = [name for name, value in (("token", token), ("token_file", token_file), ("admin_key", admin_key),
                                          ("admin_key_file", admin_key_file)) if value is not None]
        if len(given) > 1:
            raise ValueError(f"give only one of {', '.join(given)}")
        self._token = token
        self._token_file = token_file
        self._admin_key = admin_key
        self._admin_key_file = admin_key_file
        self.source = given[0] if given else ""
        """Where the identity comes from: ``"token"``, ``"token_file"``, ..., ``"HEARTH_TOKEN"``, ``""``."""
        if not given:
            env = os.environ if environ is None else environ
            env_token = env.get("HEARTH_TOKEN") or None
            env_key = env.get("HEARTH_ADMIN_KEY") or None
            if env_token and env_key:
                raise ValueError("both HEARTH_TOKEN and HEARTH_ADMIN_KEY are set; unset one or pass a credential")
            if env_token:
                self._token, self.source = env_token, "HEARTH_TOKEN"
            elif env_key:
                self._admin_key, self.source = env_key, "HEARTH_ADMIN_KEY"

    @property
    def anonymous(self) -> bool:
        return not self.source

    @property
    def is_admin(self) -> bool:
        return self._admin_key is not None or self._admin_key_file is not None

    async def hello_fields(self) -> dict[str, str] | None:
        """``{"token": ...}`` or ``{"adminKey": ...}`` for the next hello, or ``None`` when anonymous."""
        if self._token is not None:
            value: object = self._token
            if callable(self._token):
                value = self._token()
                if inspect.isawaitable(value):
                    value = await value
            return {"token": _checked(value, self.source)}
        if self._token_file is not None:
            return {"token": _checked(_read(self._token_file), self.source)}
        if self._admin_key is not None:
            return {"adminKey": _checked(self._admin_key, self.source)}
        if self._admin_key_file is not None:
            return {"adminKey": _checked(_read(self._admin_key_file), self.source)}
        return None


def _read(path: str | os.PathLike[str]) -> str:
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if text.endswith("\n"):
        text = text[:-1]
        if text.endswith("\r"):
            text = text[:-1]
    return text


def _checked(value: object, source: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{source} gave {type(value).__name__}, expected a str")
    if not value:
        raise ValueError(f"{source} is empty")
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in value):
        raise ValueError(f"{source} holds a control character (a second line?)")
    return value
