"""HS256 tokens minted with the standard library's hmac and hashlib: an implementation independent of
hearthd's (OpenSSL), for tests on both sides.

    python3 tests/tokens.py SECRET_HEX '{"sub":"alice","exp":1767225600}'   # prints the token
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import sys
import time


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def mint_hs256(secret: bytes, claims: dict, header: dict | None = None) -> str:
    """A compact JWS: base64url(header).base64url(claims).base64url(HMAC-SHA256(secret, signing input))."""
    head = {"alg": "HS256", "typ": "JWT", **(header or {})}
    signing_input = b64url(json.dumps(head, separators=(",", ":")).encode()) + "." + \
        b64url(json.dumps(claims, separators=(",", ":")).encode())
    signature = hmac.new(secret, signing_input.encode("ascii"), hashlib.sha256).digest()
    return signing_input + "." + b64url(signature)


def user_token(secret: bytes, uid: str, *, lifetime: int = 3600, now: int | None = None, **claims: object) -> str:
    """A token for ``uid`` valid for ``lifetime`` seconds from ``now`` (default: the current time)."""
    issued = int(time.time()) if now is None else now
    return mint_hs256(secret, {"sub": uid, "iat": issued, "exp": issued + lifetime, **claims})


if __name__ == "__main__":
    print(mint_hs256(bytes.fromhex(sys.argv[1]), json.loads(sys.argv[2])))
