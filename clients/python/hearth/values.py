"""Conversion between Python values and Hearth's JSON value forms (docs/protocol.md, "Values").

Python -> wire (:func:`encode`):

=============================  ================================================================
``None``, ``bool``, ``str``    as is
``int``                        as is; outside the signed 64-bit range raises ``ValueError``
``float``                      a plain JSON number; integral floats as ``{"$double": 3.0}`` so they
                               stay doubles; NaN and +-infinity as ``{"$double": "NaN"}`` etc.
``datetime.datetime``          ``{"$timestamp": "YYYY-MM-DDTHH:MM:SS.ffffffZ"}`` in UTC; naive
                               datetimes raise ``ValueError``
``bytes``/``bytearray``        ``{"$bytes": <standard base64>}``
:class:`Reference`             ``{"$ref": path}``
:class:`GeoPoint`              ``{"$geopoint": [lat, lng]}``
``list``/``tuple``, ``dict``   arrays and maps, recursively (map keys must be ``str`` not starting
                               with ``$``, else ``TypeError``/``ValueError``)
sentinels and transforms       :data:`SERVER_TIMESTAMP` -> ``{"$serverTimestamp": true}``,
                               :data:`DELETE_FIELD`, :data:`DOCUMENT_ID`, :class:`Increment`,
                               :class:`Maximum`, :class:`Minimum`, :class:`ArrayUnion`,
                               :class:`ArrayRemove`
=============================  ================================================================

Anything else raises ``TypeError``. Wire -> Python (:func:`decode`) is the inverse: every typed form comes
back as the Python type above (timestamps as aware UTC datetimes, doubles as ``float``, integers as ``int``);
an unknown ``$`` form raises :class:`~hearth.errors.ProtocolError`.
"""

from __future__ import annotations

import base64
import binascii
import datetime as _dt
import math
import re
from dataclasses import dataclass
from typing import Any

from .errors import ProtocolError

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1

_UTC = _dt.timezone.utc


@dataclass(frozen=True)
class Reference:
    """A reference to a document, ``{"$ref": "customers/c1"}`` on the wire."""

    path: str

    @property
    def id(self) -> str:
        """The last path segment (the document ID)."""
        return self.path.rsplit("/", 1)[-1]


@dataclass(frozen=True)
class GeoPoint:
    """A geographic point, ``{"$geopoint": [latitude, longitude]}`` on the wire (the server checks ranges)."""

    latitude: float
    longitude: float


class _Sentinel:
    """A write-only marker value; encodes to a fixed ``{"$name": true}`` object."""

    __slots__ = ("_name", "_key")

    def __init__(self, name: str, key: str) -> None:
        self._name = name
        self._key = key

    def to_wire(self) -> dict[str, Any]:
        return {self._key: True}

    def __repr__(self) -> str:
        return f"hearth.{self._name}"


SERVER_TIMESTAMP = _Sentinel("SERVER_TIMESTAMP", "$serverTimestamp")
"""Replaced by the commit time (the same instant for every server timestamp of one commit)."""
DELETE_FIELD = _Sentinel("DELETE_FIELD", "$delete")
"""Removes the field (``update`` and ``set`` with merge only)."""
DOCUMENT_ID = _Sentinel("DOCUMENT_ID", "$documentId")
"""Replaced by the document's own ID (useful with ``add``)."""


def _check_number(kind: str, n: Any) -> None:
    if isinstance(n, bool) or not isinstance(n, (int, float)):
        raise TypeError(f"{kind} needs an int or float, not {type(n).__name__}")


@dataclass(frozen=True)
class Increment:
    """Adds ``amount`` to the field (``{"$increment": n}``); int + int saturates at the int64 limits."""

    amount: int | float

    def __post_init__(self) -> None:
        _check_number("Increment", self.amount)

    def to_wire(self) -> dict[str, Any]:
        return {"$increment": encode(self.amount)}


@dataclass(frozen=True)
class Maximum:
    """Sets the field to the larger of itself and ``value`` (``{"$maximum": n}``)."""

    value: int | float

    def __post_init__(self) -> None:
        _check_number("Maximum", self.value)

    def to_wire(self) -> dict[str, Any]:
        return {"$maximum": encode(self.value)}


@dataclass(frozen=True)
class Minimum:
    """Sets the field to the smaller of itself and ``value`` (``{"$minimum": n}``)."""

    value: int | float

    def __post_init__(self) -> None:
        _check_number("Minimum", self.value)

    def to_wire(self) -> dict[str, Any]:
        return {"$minimum": encode(self.value)}


@dataclass(frozen=True)
class ArrayUnion:
    """Appends the elements not already in the array field (``{"$arrayUnion": [...]}``)."""

    elements: list[Any]

    def to_wire(self) -> dict[str, Any]:
        return {"$arrayUnion": [encode(e) for e in self.elements]}


@dataclass(frozen=True)
class ArrayRemove:
    """Removes every element equal to one of ``elements`` (``{"$arrayRemove": [...]}``)."""

    elements: list[Any]

    def to_wire(self) -> dict[str, Any]:
        return {"$arrayRemove": [encode(e) for e in self.elements]}


_TRANSFORMS = (_Sentinel, Increment, Maximum, Minimum, ArrayUnion, ArrayRemove)


def format_timestamp(value: _dt.datetime) -> str:
    """Formats an aware datetime as RFC 3339 in UTC with microseconds; naive datetimes raise ValueError."""
    if not isinstance(value, _dt.datetime):
        raise TypeError(f"expected datetime.datetime, not {type(value).__name__}")
    if value.tzinfo is None or value.tzinfo.utcoffset(value) is None:
        raise ValueError(f"naive datetime {value!r} has no time zone; use an aware datetime (e.g. tzinfo=timezone.utc)")
    u = value.astimezone(_UTC)
    return (f"{u.year:04d}-{u.month:02d}-{u.day:02d}T{u.hour:02d}:{u.minute:02d}:{u.second:02d}"
            f".{u.microsecond:06d}Z")


_TS_RE = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$")


def parse_timestamp(text: str) -> _dt.datetime:
    """Parses RFC 3339 text into an aware UTC datetime (fractions beyond microseconds are truncated)."""
    m = _TS_RE.match(text) if isinstance(text, str) else None
    if m is None:
        raise ProtocolError(f"not an RFC 3339 timestamp: {text!r}")
    year, month, day, hour, minute, second = (int(m.group(i)) for i in range(1, 7))
    micro = int((m.group(7) or "0")[:6].ljust(6, "0"))
    if m.group(8):
        tz = _UTC
    else:
        offset = _dt.timedelta(hours=int(m.group(10)), minutes=int(m.group(11)))
        tz = _dt.timezone(offset if m.group(9) == "+" else -offset)
    try:
        return _dt.datetime(year, month, day, hour, minute, second, micro, tzinfo=tz).astimezone(_UTC)
    except (ValueError, OverflowError) as e:
        raise ProtocolError(f"timestamp out of range: {text!r} ({e})") from None


def encode(value: Any) -> Any:
    """Converts a Python value (see the module docstring) to its JSON-ready wire form."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        if not INT64_MIN <= value <= INT64_MAX:
            raise ValueError(f"integer {value} does not fit in a signed 64-bit integer")
        return value
    if isinstance(value, float):
        if math.isnan(value):
            return {"$double": "NaN"}
        if math.isinf(value):
            return {"$double": "Infinity" if value > 0 else "-Infinity"}
        if value.is_integer():
            return {"$double": value}
        return value
    if isinstance(value, _dt.datetime):
        return {"$timestamp": format_timestamp(value)}
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"$bytes": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, Reference):
        return {"$ref": value.path}
    if isinstance(value, GeoPoint):
        _check_number("GeoPoint latitude", value.latitude)
        _check_number("GeoPoint longitude", value.longitude)
        return {"$geopoint": [float(value.latitude), float(value.longitude)]}
    if isinstance(value, _TRANSFORMS):
        return value.to_wire()
    if isinstance(value, (list, tuple)):
        return [encode(v) for v in value]
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise TypeError(f"map keys must be str, not {type(k).__name__} ({k!r})")
            if k.startswith("$"):
                raise ValueError(f"map key {k!r} may not start with '$' (that prefix names typed values)")
            out[k] = encode(v)
        return out
    raise TypeError(f"cannot encode {type(value).__name__} as a Hearth value: {value!r}")


_DOUBLE_NAMES = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def _decode_typed(key: str, arg: Any) -> Any:
    if key == "$timestamp":
        return parse_timestamp(arg)
    if key == "$bytes" and isinstance(arg, str):
        try:
            return base64.b64decode(arg, validate=True)
        except binascii.Error as e:
            raise ProtocolError(f"bad $bytes base64 {arg!r}: {e}") from None
    if key == "$ref" and isinstance(arg, str):
        return Reference(arg)
    if key == "$geopoint" and isinstance(arg, list) and len(arg) == 2:
        return GeoPoint(float(arg[0]), float(arg[1]))
    if key == "$double":
        if isinstance(arg, str) and arg in _DOUBLE_NAMES:
            return _DOUBLE_NAMES[arg]
        if isinstance(arg, (int, float)) and not isinstance(arg, bool):
            return float(arg)
    raise ProtocolError(f"unknown or malformed typed value {{{key!r}: {arg!r}}}")


def decode(value: Any) -> Any:
    """Converts a wire value (as parsed by ``json.loads``) back to Python (see the module docstring)."""
    if isinstance(value, dict):
        if len(value) == 1:
            (key, arg), = value.items()
            if key.startswith("$"):
                return _decode_typed(key, arg)
        return {k: decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decode(v) for v in value]
    return value
