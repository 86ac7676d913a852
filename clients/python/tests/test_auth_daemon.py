"""Authentication and rules end to end: the Python client against a real hearthd started with --rules, an
HS256 secret and an admin key (tokens minted with the standard library's hmac, independent of hearthd)."""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
import unittest

import hearth

from .support import Daemon
from .tokens import user_token

RULES = """rules_version = '2';
service cloud.firestore {
  match /databases/{database}/documents {
    match /users/{uid} {
      allow read, write: if request.auth != null && request.auth.uid == uid;
    }
    match /notes/{id} {
      allow read: if request.auth != null && resource.data.owner == request.auth.uid;
      allow create: if request.auth != null && request.resource.data.owner == request.auth.uid;
    }
  }
}
"""


class AuthDaemonTest(unittest.IsolatedAsyncioTestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.dir = tempfile.mkdtemp(prefix="hearth-py-auth-")
        cls.secret = secrets.token_hex(24).encode()
        cls.admin_key = secrets.token_hex(24)
        for name, text in [("secret", cls.secret.decode()), ("admin.key", cls.admin_key), ("firestore.rules", RULES)]:
            with open(os.path.join(cls.dir, name), "w") as f:
                f.write(text)
        cls.daemon = Daemon("--rules", os.path.join(cls.dir, "firestore.rules"),
                            "--auth-secret-file", os.path.join(cls.dir, "secret"),
                            "--admin-key-file", os.path.join(cls.dir, "admin.key")).start()

    @classmethod
    def tearDownClass(cls) -> None:
        cls.daemon.stop()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def token(self, uid: str, **kw) -> str:
        return user_token(self.secret, uid, **kw)

    async def test_a_token_says_who_the_client_is_and_the_rules_judge_it(self) -> None:
        async with hearth.connect(port=self.daemon.port, token=self.token("alice")) as db:
            self.assertEqual(db.auth["uid"], "alice")
            await db.set("users/alice", {"name": "Alice"})
            self.assertEqual((await db.get("users/alice")).data, {"name": "Alice"})
            with self.assertRaises(hearth.HearthError) as denied:
                await db.get("users/bob")
            self.assertEqual(denied.exception.code, "PERMISSION_DENIED")
            await db.create("notes/n1", {"owner": "alice", "text": "hi"})
            docs = await db.query("notes", where=[("owner", "==", "alice")])
            self.assertEqual([d.id for d in docs], ["n1"])
            with self.assertRaises(hearth.HearthError) as unconstrained:
                await db.query("notes")
            self.assertIn("owner", unconstrained.exception.message)

    async def test_refused_tokens_raise_unauthenticated(self) -> None:
        with self.assertRaises(hearth.UnauthenticatedError) as expired:
            async with hearth.connect(port=self.daemon.port, token=self.token("alice", lifetime=-3600)):
                pass
        self.assertIn("expired", expired.exception.message)
        with self.assertRaises(hearth.UnauthenticatedError):
            async with hearth.connect(port=self.daemon.port, token=user_token(b"x" * 40, "alice")):
                pass

    async def test_the_admin_key_bypasses_rules(self) -> None:
        async with hearth.connect(port=self.daemon.port, admin_key=self.admin_key) as db:
            self.assertTrue(db.auth["admin"])
            await db.set("users/carol", {"n": 1})
            self.assertIsNotNone(await db.get("users/carol"))

    async def test_refreshing_to_another_user_ends_listeners_they_may_not_see(self) -> None:
        async with hearth.connect(port=self.daemon.port, token=self.token("dave")) as db:
            await db.set("users/dave", {"n": 1})
            listener = db.listen_document("users/dave")
            first = await listener.next()
            self.assertEqual(first.doc.data, {"n": 1})
            await db.authenticate(self.token("dave"))             # the same user, refreshed: the listener stays
            await db.set("users/dave", {"n": 2})
            self.assertEqual((await listener.next()).doc.data, {"n": 2})
            await db.authenticate(self.token("eve"))              # another user: it ends
            with self.assertRaises(hearth.HearthError) as ended:
                await listener.next()
            self.assertEqual(ended.exception.code, "PERMISSION_DENIED")
            self.assertEqual(db.auth["uid"], "eve")


if __name__ == "__main__":
    unittest.main()
