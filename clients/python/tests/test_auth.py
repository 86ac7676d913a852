"""Authentication in the client, against the scripted fake server: the exact hello line sent first on
every connection (token, token file, admin key, environment, token callable), none when anonymous, a
refused hello, the hello again after a reconnect (before the listeners resume), and token refresh with
``authenticate`` on the live connection (listeners stay). Tokens are minted with the standard library's
HMAC (tests/tokens.py)."""

import asyncio
import json
import os
import tempfile
import unittest
from unittest import mock

import hearth

from .fake_server import FakeServer
from .tokens import user_token

SECRET = b"python-test-secret-0123456789abcdef"
NOW = 1767225600
ALICE = user_token(SECRET, "alice", now=NOW)
ALICE_LATER = user_token(SECRET, "alice", now=NOW + 1800)
AUTH_ALICE = {"uid": "alice", "admin": False, "expiresAt": NOW + 3600}
ADMIN_KEY = 'admin-key-0123456789abcdef-with-"quote"-and-\\'
REFUSAL = {"code": "UNAUTHENTICATED", "message": "expired: token expired at 1767225600, now 1767229200 (clock skew 60 s)"}
HELLO_OK = {"version": "0.1.0", "seq": 0, "history": "0000000000000001"}


def hello_line(field: str, value: str, rid: int) -> bytes:
    return b'{"op":"hello","' + field.encode() + b'":' + json.dumps(value).encode() + b',"id":' + str(rid).encode() + b"}"


class AuthTest(unittest.IsolatedAsyncioTestCase):
    async def asyncSetUp(self) -> None:
        self.server = await FakeServer().start()
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)
        patcher = mock.patch.dict(os.environ, {}, clear=False)
        patcher.start()
        self.addCleanup(patcher.stop)
        os.environ.pop("HEARTH_TOKEN", None)
        os.environ.pop("HEARTH_ADMIN_KEY", None)

    async def asyncTearDown(self) -> None:
        await self.server.close()

    def file(self, name: str, text: str) -> str:
        path = os.path.join(self.dir.name, name)
        with open(path, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        return path

    async def connect_answering(self, auth: dict | None = None, **kw) -> tuple[hearth.Client, object, dict]:
        """Connects, answers the hello with ``auth``; returns the client, the link and the hello request."""
        pending = asyncio.ensure_future(hearth.connect(port=self.server.port, **kw))
        link, req = await self.server.next_request()
        self.assertEqual(req["op"], "hello")
        link.reply(req, **HELLO_OK, auth=auth or AUTH_ALICE)
        db = await asyncio.wait_for(pending, 5)
        self.addAsyncCleanup(db.close)
        return db, link, req

    async def test_the_exact_hello_goes_first_from_each_source(self) -> None:
        token_file = self.file("token", ALICE + "\n")
        key_file = self.file("admin.key", ADMIN_KEY + "\r\n")

        async def token_callable() -> str:
            return ALICE

        cases = [
            ({"token": ALICE}, {}, "token", ALICE),
            ({"token_file": token_file}, {}, "token", ALICE),
            ({"token": token_callable}, {}, "token", ALICE),
            ({"token": lambda: ALICE}, {}, "token", ALICE),
            ({}, {"HEARTH_TOKEN": ALICE}, "token", ALICE),
            ({"admin_key": ADMIN_KEY}, {}, "adminKey", ADMIN_KEY),
            ({"admin_key_file": key_file}, {}, "adminKey", ADMIN_KEY),
            ({}, {"HEARTH_ADMIN_KEY": ADMIN_KEY}, "adminKey", ADMIN_KEY),
            # An explicit argument wins over the environment.
            ({"token_file": token_file}, {"HEARTH_ADMIN_KEY": ADMIN_KEY}, "token", ALICE),
        ]
        for kw, env, field, value in cases:
            with self.subTest(kw=list(kw), env=list(env)), mock.patch.dict(os.environ, env):
                admin = field == "adminKey"
                db, link, _ = await self.connect_answering({"admin": True} if admin else AUTH_ALICE, **kw)
                self.assertEqual(link.lines[0], hello_line(field, value, 1))
                self.assertEqual(db.auth, {"admin": True} if admin else AUTH_ALICE)
                ping = asyncio.ensure_future(db.ping())
                _, req = await self.server.next_request("ping")
                link.reply(req, seq=3)
                self.assertEqual(await ping, 3)
                self.assertEqual(len(link.lines), 2)
                await db.close()

    async def test_anonymous_sends_no_hello(self) -> None:
        db = await hearth.connect(port=self.server.port)
        self.addAsyncCleanup(db.close)
        ping = asyncio.ensure_future(db.ping())
        link, req = await self.server.next_request()
        self.assertEqual(req["op"], "ping")
        self.assertEqual(link.lines, [b'{"op":"ping","id":1}'])
        link.reply(req, seq=0)
        await ping
        self.assertIsNone(db.auth)

    async def test_a_refused_hello_raises_unauthenticated(self) -> None:
        pending = asyncio.ensure_future(hearth.connect(port=self.server.port, token=ALICE))
        link, req = await self.server.next_request("hello")
        link.send({"id": req["id"], "ok": False, "error": REFUSAL})
        with self.assertRaises(hearth.UnauthenticatedError) as caught:
            await asyncio.wait_for(pending, 5)
        self.assertIsInstance(caught.exception, hearth.HearthError)
        self.assertEqual(caught.exception.code, "UNAUTHENTICATED")
        self.assertEqual(caught.exception.message, REFUSAL["message"])
        self.assertEqual(link.lines, [hello_line("token", ALICE, 1)])

    async def test_a_request_answered_unauthenticated_raises_the_same_class(self) -> None:
        db, link, _ = await self.connect_answering(token=ALICE)
        get = asyncio.ensure_future(db.get("a/b"))
        _, req = await self.server.next_request("get")
        link.send({"id": req["id"], "ok": False, "error": {"code": "UNAUTHENTICATED", "message": "expired: token expired at 1"}})
        with self.assertRaises(hearth.UnauthenticatedError):
            await get

    async def test_bad_arguments(self) -> None:
        with self.assertRaisesRegex(ValueError, "only one of token, admin_key"):
            hearth.connect(token=ALICE, admin_key=ADMIN_KEY)
        with mock.patch.dict(os.environ, {"HEARTH_TOKEN": ALICE, "HEARTH_ADMIN_KEY": ADMIN_KEY}):
            with self.assertRaisesRegex(ValueError, "both HEARTH_TOKEN and HEARTH_ADMIN_KEY"):
                hearth.connect()
        with self.assertRaisesRegex(ValueError, "token_file is empty"):
            await hearth.connect(port=self.server.port, token_file=self.file("empty", "\n"))
        with self.assertRaisesRegex(ValueError, "control character"):
            await hearth.connect(port=self.server.port, token_file=self.file("two", ALICE + "\n" + ALICE + "\n"))

    async def test_reconnect_sends_the_hello_before_the_listener_resumes(self) -> None:
        token_file = self.file("token", ALICE)
        db, link, _ = await self.connect_answering(token_file=token_file, reconnect=True, reconnect_delay=0.01)
        listener = db.listen_document("c/d")
        first = asyncio.ensure_future(listener.next())
        _, req = await self.server.next_request("listen")
        link.reply(req, sub="s1", history="0000000000000001")
        link.send({"sub": "s1", "type": "snapshot", "seq": 4, "initial": True, "doc": None})
        await asyncio.wait_for(first, 5)

        # The token file was rotated; the connection drops; the new one says hello with the new token
        # first, and only then re-listens.
        self.file("token", ALICE_LATER + "\n")
        link.drop()
        link2, req = await self.server.next_request()
        self.assertEqual(req["op"], "hello")
        self.assertEqual(link2.lines, [hello_line("token", ALICE_LATER, req["id"])])
        await asyncio.sleep(0.05)
        self.assertEqual(len(link2.lines), 1, "nothing is sent before the hello is answered")
        link2.reply(req, **HELLO_OK, auth={**AUTH_ALICE, "expiresAt": NOW + 5400})
        _, listen = await self.server.next_request("listen")
        self.assertEqual(listen["resumeAfter"], 4)
        self.assertEqual(json.loads(link2.lines[1])["op"], "listen")
        self.assertEqual(db.auth["expiresAt"], NOW + 5400)
        self.assertEqual(db.reconnects, 1)

    async def test_a_refused_reconnect_hello_is_retried_with_a_fresh_token(self) -> None:
        tokens = iter([ALICE, "stale.token.x", ALICE_LATER])
        db, link, _ = await self.connect_answering(token=lambda: next(tokens), reconnect=True, reconnect_delay=0.01)
        link.drop()
        link2, req = await self.server.next_request("hello")
        self.assertEqual(req["token"], "stale.token.x")
        link2.send({"id": req["id"], "ok": False, "error": REFUSAL})
        link3, req = await self.server.next_request("hello")
        self.assertIsNot(link3, link2)
        self.assertIsInstance(db.auth_error, hearth.UnauthenticatedError)
        self.assertEqual(req["token"], ALICE_LATER)
        link3.reply(req, **HELLO_OK, auth=AUTH_ALICE)
        ping = asyncio.ensure_future(db.ping())
        _, p = await self.server.next_request("ping")
        link3.reply(p, seq=1)
        await ping
        self.assertIsNone(db.auth_error)
        self.assertEqual(db.reconnects, 1)

    async def test_authenticate_refreshes_on_the_live_connection_and_keeps_listeners(self) -> None:
        db, link, _ = await self.connect_answering(token=ALICE, reconnect=True, reconnect_delay=0.01)
        listener = db.listen_document("c/d")
        first = asyncio.ensure_future(listener.next())
        _, req = await self.server.next_request("listen")
        link.reply(req, sub="s1", history="0000000000000001")
        link.send({"sub": "s1", "type": "snapshot", "seq": 4, "initial": True, "doc": None})
        await asyncio.wait_for(first, 5)

        refresh = asyncio.ensure_future(db.authenticate(ALICE_LATER))
        same_link, req = await self.server.next_request()
        self.assertIs(same_link, link)
        self.assertEqual(link.lines[-1], hello_line("token", ALICE_LATER, req["id"]))
        link.reply(req, **HELLO_OK, auth={**AUTH_ALICE, "expiresAt": NOW + 5400})
        self.assertEqual(await refresh, {**AUTH_ALICE, "expiresAt": NOW + 5400})

        # The listener is untouched: no unlisten, no new listen, and pushes still reach it.
        link.send({"sub": "s1", "type": "snapshot", "seq": 6,
                   "doc": {"path": "c/d", "id": "d", "data": {"v": 1}, "createTime": "2026-01-01T00:00:00.000000Z",
                           "updateTime": "2026-01-01T00:00:00.000000Z"}})
        snap = await asyncio.wait_for(listener.next(), 5)
        self.assertEqual(snap.doc.data, {"v": 1})
        self.assertEqual([json.loads(line)["op"] for line in link.lines], ["hello", "listen", "hello"])

        # A refused refresh raises and leaves the accepted token in place for reconnects.
        refused = asyncio.ensure_future(db.authenticate("bad.token.here"))
        _, req = await self.server.next_request("hello")
        link.send({"id": req["id"], "ok": False, "error": REFUSAL})
        with self.assertRaises(hearth.UnauthenticatedError):
            await refused
        link.drop()
        _, req = await self.server.next_request("hello")
        self.assertEqual(req["token"], ALICE_LATER)

    async def test_authenticate_without_credentials_is_an_error(self) -> None:
        db = await hearth.connect(port=self.server.port)
        self.addAsyncCleanup(db.close)
        with self.assertRaisesRegex(ValueError, "no credentials"):
            await db.authenticate()

    async def test_hello_with_options_keeps_the_identity(self) -> None:
        db, link, _ = await self.connect_answering(token=ALICE)
        hello = asyncio.ensure_future(db.hello(heartbeat_ms=500))
        _, req = await self.server.next_request("hello")
        self.assertEqual(link.lines[-1], b'{"op":"hello","token":"' + ALICE.encode() + b'","heartbeatMs":500,"id":2}')
        link.reply(req, **HELLO_OK, auth=AUTH_ALICE)
        self.assertEqual((await hello)["version"], "0.1.0")


if __name__ == "__main__":
    unittest.main()
