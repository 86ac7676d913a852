"""The client's listener machinery against a scripted fake server (no hearthd needed): routing by sub,
change application, heartbeats, resume with net changes / no changes / reset, errors, unlisten."""

import asyncio
import unittest

import hearth

from .fake_server import FakeServer

TIME = "2026-11-29T12:00:00.000000Z"


def wdoc(name: str, version: int = 0) -> dict:
    return {"path": f"c/{name}", "id": name, "data": {"v": version}, "createTime": TIME,
            "updateTime": f"2026-11-29T12:00:{version:02d}.000000Z"}


def added(name: str, i: int, version: int = 0) -> dict:
    return {"type": "added", "doc": wdoc(name, version), "oldIndex": -1, "newIndex": i}


class ListenerProtocolTest(unittest.IsolatedAsyncioTestCase):
    async def asyncSetUp(self) -> None:
        self.server = await FakeServer().start()

    async def asyncTearDown(self) -> None:
        await self.server.close()

    async def connect(self, **kw) -> hearth.Client:
        db = await hearth.connect(port=self.server.port, **kw)
        self.addAsyncCleanup(db.close)
        return db

    async def next(self, listener):
        return await asyncio.wait_for(listener.next(), 5)

    async def assertNothingPending(self, listener) -> None:
        await asyncio.sleep(0.05)
        self.assertEqual(listener.pending, 0, "no further snapshot expected")

    async def test_query_listener_flow_and_resume(self) -> None:
        db = await self.connect(reconnect=True, reconnect_delay=0.01)
        listener = db.listen_query("c", where=("v", ">=", 0), order_by="v", heartbeat_ms=100)
        first = asyncio.ensure_future(self.next(listener))
        link, req = await self.server.next_request("listen")
        self.assertEqual(req["query"], {"collection": "c", "where": [["v", ">=", 0]], "orderBy": ["v"]})
        self.assertEqual(req["heartbeatMs"], 100)
        self.assertNotIn("resumeAfter", req)
        # The initial snapshot may even arrive before the response: it is held, then routed.
        link.send({"sub": "s1", "type": "snapshot", "seq": 5, "initial": True, "size": 2,
                   "changes": [added("a", 0), added("b", 1)]})
        link.reply(req, sub="s1")
        snap = await first
        self.assertTrue(snap.initial)
        self.assertEqual([d.id for d in snap.docs], ["a", "b"])
        self.assertEqual(snap.seq, 5)
        self.assertEqual(listener.sub, "s1")

        link.send({"sub": "s1", "type": "snapshot", "seq": 7, "initial": False, "size": 2,
                   "changes": [{"type": "removed", "doc": wdoc("a"), "oldIndex": 0, "newIndex": -1},
                               added("c", 1),
                               {"type": "modified", "doc": wdoc("b", 1), "oldIndex": 0, "newIndex": 1}]})
        link.send({"sub": "other", "type": "snapshot", "seq": 7, "changes": []})  # not ours: dropped
        snap = await self.next(listener)
        self.assertFalse(snap.initial)
        self.assertEqual([d.id for d in snap.docs], ["c", "b"])
        self.assertEqual(snap.docs[1].data, {"v": 1})
        self.assertEqual([c.type for c in snap.changes], ["removed", "added", "modified"])

        link.send({"type": "heartbeat", "seq": 9})
        await asyncio.sleep(0.05)
        self.assertEqual(listener.last_seq, 9)

        # Connection lost; writes happened meanwhile: the resumed listen gets net changes.
        link.drop()
        link, req = await self.server.next_request("listen")
        self.assertEqual(req["resumeAfter"], 9)
        link.reply(req, sub="s2")
        link.send({"sub": "s2", "type": "snapshot", "seq": 12, "initial": True, "size": 3,
                   "changes": [added("d", 0)]})
        snap = await self.next(listener)
        self.assertFalse(snap.initial)
        self.assertEqual([d.id for d in snap.docs], ["d", "c", "b"])
        self.assertEqual([(c.type, c.doc.id) for c in snap.changes], [("added", "d")])
        self.assertEqual(snap.seq, 12)

        # Lost again, nothing changed: no snapshot reaches the consumer.
        link.drop()
        link, req = await self.server.next_request("listen")
        self.assertEqual(req["resumeAfter"], 12)
        link.reply(req, sub="s3")
        link.send({"sub": "s3", "type": "snapshot", "seq": 13, "initial": True, "size": 3, "changes": []})
        await self.assertNothingPending(listener)
        self.assertEqual(listener.last_seq, 13)

        # Lost again, the server cannot resume: a reset is diffed against the client's state.
        link.drop()
        link, req = await self.server.next_request("listen")
        self.assertEqual(req["resumeAfter"], 13)
        link.reply(req, sub="s4")
        link.send({"sub": "s4", "type": "snapshot", "seq": 20, "initial": True, "reset": True, "size": 3,
                   "changes": [added("b", 0, 2), added("c", 1), added("e", 2)]})
        snap = await self.next(listener)
        self.assertTrue(snap.reset)
        self.assertFalse(snap.initial)
        self.assertEqual([d.id for d in snap.docs], ["b", "c", "e"])
        self.assertEqual(sorted((c.type, c.doc.id) for c in snap.changes),
                         [("added", "e"), ("modified", "b"), ("removed", "d")])
        self.assertEqual(db.reconnects, 3)

        # Leaving sends unlisten for the current sub.
        closing = asyncio.ensure_future(listener.close())
        link, req = await self.server.next_request("unlisten")
        self.assertEqual(req["sub"], "s4")
        link.reply(req)
        await closing
        self.assertTrue(listener.closed)
        with self.assertRaises(StopAsyncIteration):
            await listener.next()

    async def test_document_listener_resume(self) -> None:
        db = await self.connect(reconnect=True, reconnect_delay=0.01)
        listener = db.listen_document("c/a")
        start = asyncio.ensure_future(listener.start())
        link, req = await self.server.next_request("listen")
        self.assertEqual(req["path"], "c/a")
        link.reply(req, sub=1)
        await start
        link.send({"sub": 1, "type": "snapshot", "seq": 3, "initial": True, "doc": None})
        snap = await self.next(listener)
        self.assertEqual((snap.doc, snap.exists, snap.initial, snap.seq), (None, False, True, 3))
        link.send({"sub": 1, "type": "snapshot", "seq": 4, "initial": False, "doc": wdoc("a")})
        snap = await self.next(listener)
        self.assertEqual(snap.doc.data, {"v": 0})
        link.drop()
        link, req = await self.server.next_request("listen")
        self.assertEqual(req["resumeAfter"], 4)
        link.reply(req, sub=2)
        link.send({"sub": 2, "type": "snapshot", "seq": 6, "initial": True, "doc": wdoc("a")})  # unchanged
        await self.assertNothingPending(listener)
        link.send({"sub": 2, "type": "snapshot", "seq": 8, "doc": wdoc("a", 3)})
        snap = await self.next(listener)
        self.assertEqual((snap.doc.data, snap.seq, snap.initial), ({"v": 3}, 8, False))

    async def test_resume_carries_the_history_of_the_applied_seq(self) -> None:
        h1, h2 = "00000000000000a1", "00000000000000b2"
        db = await self.connect(reconnect=True, reconnect_delay=0.01)
        listener = db.listen_query("c", order_by="v")
        first = asyncio.ensure_future(self.next(listener))
        link, req = await self.server.next_request("listen")
        self.assertNotIn("history", req)
        link.reply(req, sub="s1", history=h1)
        link.send({"sub": "s1", "type": "snapshot", "seq": 5, "initial": True, "size": 2,
                   "changes": [added("a", 0), added("b", 1)]})
        initial = await first
        self.assertEqual((listener.last_seq, listener.history), (5, h1))

        link.drop()
        link, req = await self.server.next_request("listen")
        self.assertEqual((req["resumeAfter"], req["history"]), (5, h1))
        # The new subscription names another history, but the link drops before any of its snapshots:
        # the listener's state is still at seq 5 of h1, and that is what it resumes with.
        link.reply(req, sub="s2", history=h2)
        ping = asyncio.ensure_future(db.request("ping"))
        link, ping_req = await self.server.next_request("ping")
        link.reply(ping_req, seq=5)
        await ping                                       # answered after the listen: that was handled first
        self.assertEqual(listener.sub, "s2")
        link.drop()
        link, req = await self.server.next_request("listen")
        self.assertEqual((req["resumeAfter"], req["history"]), (5, h1))
        self.assertEqual((listener.last_seq, listener.history), (5, h1))

        # Another database: a reset at a lower seq replaces the state; the consumer sees the diff.
        link.reply(req, sub="s3", history=h2)
        link.send({"sub": "s3", "type": "snapshot", "seq": 2, "initial": False, "reset": True, "size": 2,
                   "changes": [added("b", 0, 3), added("d", 1)]})
        snap = await self.next(listener)
        self.assertEqual((snap.reset, snap.initial, snap.seq), (True, False, 2))
        self.assertEqual([d.id for d in snap.docs], ["b", "d"])
        self.assertEqual(listener.docs, snap.docs)
        self.assertEqual(hearth.apply_changes(initial.docs, snap.changes), snap.docs)
        self.assertEqual(sorted((c.type, c.doc.id) for c in snap.changes),
                         [("added", "d"), ("modified", "b"), ("removed", "a")])
        self.assertEqual((listener.last_seq, listener.history), (2, h2))
        # Later changes apply to the new state, from the new history's seqs.
        link.send({"sub": "s3", "type": "snapshot", "seq": 3, "size": 1,
                   "changes": [{"type": "removed", "doc": wdoc("b", 3), "oldIndex": 0, "newIndex": -1}]})
        snap = await self.next(listener)
        self.assertEqual(([d.id for d in snap.docs], snap.reset), (["d"], False))

        link.drop()
        link, req = await self.server.next_request("listen")
        self.assertEqual((req["resumeAfter"], req["history"]), (3, h2))

    async def test_no_history_from_an_older_server_resumes_with_the_seq_alone(self) -> None:
        db = await self.connect(reconnect=True, reconnect_delay=0.01)
        listener = db.listen_document("c/a")
        first = asyncio.ensure_future(self.next(listener))
        link, req = await self.server.next_request("listen")
        link.reply(req, sub="s1")
        link.send({"sub": "s1", "type": "snapshot", "seq": 4, "initial": True, "doc": wdoc("a")})
        await first
        self.assertEqual((listener.last_seq, listener.history), (4, None))
        link.drop()
        link, req = await self.server.next_request("listen")
        self.assertEqual(req["resumeAfter"], 4)
        self.assertNotIn("history", req)

    async def test_document_listener_reset(self) -> None:
        h1, h2 = "00000000000000a1", "00000000000000b2"
        db = await self.connect(reconnect=True, reconnect_delay=0.01)
        listener = db.listen_document("c/a")
        first = asyncio.ensure_future(self.next(listener))
        link, req = await self.server.next_request("listen")
        link.reply(req, sub="s1", history=h1)
        link.send({"sub": "s1", "type": "snapshot", "seq": 9, "initial": True, "doc": wdoc("a", 1)})
        self.assertEqual((await first).doc.data, {"v": 1})

        # Replaced by another database where the document does not exist.
        link.drop()
        link, req = await self.server.next_request("listen")
        self.assertEqual((req["resumeAfter"], req["history"]), (9, h1))
        link.reply(req, sub="s2", history=h2)
        link.send({"sub": "s2", "type": "snapshot", "seq": 3, "initial": False, "reset": True, "doc": None})
        snap = await self.next(listener)
        self.assertEqual((snap.doc, snap.exists, snap.reset, snap.initial, snap.seq), (None, False, True, False, 3))
        self.assertEqual((listener.last_seq, listener.history), (3, h2))

        # A reset to the state the consumer already has yields nothing; the next change is the next snapshot.
        link.drop()
        link, req = await self.server.next_request("listen")
        self.assertEqual((req["resumeAfter"], req["history"]), (3, h2))
        link.reply(req, sub="s3", history=h1)
        link.send({"sub": "s3", "type": "snapshot", "seq": 12, "initial": False, "reset": True, "doc": None},
                  {"sub": "s3", "type": "snapshot", "seq": 13, "initial": False, "doc": wdoc("a", 2)})
        snap = await self.next(listener)
        self.assertEqual((snap.doc.data, snap.reset, snap.seq), ({"v": 2}, False, 13))
        self.assertEqual((listener.last_seq, listener.history), (13, h1))

    async def test_error_push_ends_listener(self) -> None:
        db = await self.connect()
        listener = db.listen_query("c")
        first = asyncio.ensure_future(self.next(listener))
        link, req = await self.server.next_request("listen")
        link.reply(req, sub="s")
        link.send({"sub": "s", "type": "snapshot", "seq": 1, "initial": True, "size": 0, "changes": []})
        self.assertEqual((await first).docs, [])
        link.send({"sub": "s", "type": "error", "error": {"code": "RESOURCE_EXHAUSTED", "message": "too slow"}})
        with self.assertRaises(hearth.HearthError) as cm:
            await self.next(listener)
        self.assertEqual(cm.exception.code, "RESOURCE_EXHAUSTED")
        await asyncio.sleep(0.01)
        self.assertTrue(listener.closed)

    async def test_listen_refused(self) -> None:
        db = await self.connect()
        listener = db.listen_document("c/a")
        first = asyncio.ensure_future(self.next(listener))
        link, req = await self.server.next_request("listen")
        link.send({"id": req["id"], "ok": False, "error": {"code": "INVALID_ARGUMENT", "message": 'unknown op "listen"'}})
        with self.assertRaises(hearth.HearthError):
            await first

    async def test_protocol_violation_ends_listener_with_unlisten(self) -> None:
        db = await self.connect()
        listener = db.listen_query("c")
        first = asyncio.ensure_future(self.next(listener))
        link, req = await self.server.next_request("listen")
        link.reply(req, sub="s")
        link.send({"sub": "s", "type": "snapshot", "seq": 1, "initial": True, "size": 5, "changes": [added("a", 0)]})
        with self.assertRaises(hearth.ProtocolError):
            await first
        link, req = await self.server.next_request("unlisten")
        self.assertEqual(req["sub"], "s")

    async def test_lost_connection_without_reconnect(self) -> None:
        db = await self.connect()
        listener = db.listen_document("c/a")
        first = asyncio.ensure_future(self.next(listener))
        link, req = await self.server.next_request("listen")
        link.reply(req, sub="s")
        link.send({"sub": "s", "type": "snapshot", "seq": 1, "initial": True, "doc": None})
        await first
        link.drop()
        with self.assertRaises(ConnectionError):
            await self.next(listener)

    async def test_break_sends_unlisten(self) -> None:
        db = await self.connect()

        async def consume() -> int:
            async for snap in db.listen_query("c"):
                return snap.seq
            return -1

        task = asyncio.ensure_future(consume())
        link, req = await self.server.next_request("listen")
        link.reply(req, sub="s")
        link.send({"sub": "s", "type": "snapshot", "seq": 1, "initial": True, "size": 0, "changes": []})
        self.assertEqual(await task, 1)
        link, req = await self.server.next_request("unlisten")
        self.assertEqual(req["sub"], "s")
        link.reply(req)

    async def test_client_close_ends_iteration(self) -> None:
        db = await self.connect()
        listener = db.listen_document("c/a")
        first = asyncio.ensure_future(self.next(listener))
        link, req = await self.server.next_request("listen")
        link.reply(req, sub="s")
        link.send({"sub": "s", "type": "snapshot", "seq": 1, "initial": True, "doc": None})
        await first
        await db.close()
        with self.assertRaises(StopAsyncIteration):
            await self.next(listener)

    async def test_slow_consumer_gets_merged_snapshots(self) -> None:
        db = await self.connect()
        listener = db.listen_query("c")
        first = asyncio.ensure_future(self.next(listener))
        link, req = await self.server.next_request("listen")
        link.reply(req, sub="s")
        link.send({"sub": "s", "type": "snapshot", "seq": 1, "initial": True, "size": 2,
                   "changes": [added("a", 0), added("b", 1)]})
        initial = await first
        # Three snapshots arrive before the consumer looks: they wait as one.
        link.send({"sub": "s", "type": "snapshot", "seq": 2, "size": 3, "changes": [added("c", 2)]},
                  {"sub": "s", "type": "snapshot", "seq": 3, "size": 2,
                   "changes": [{"type": "removed", "doc": wdoc("a"), "oldIndex": 0, "newIndex": -1}]},
                  {"sub": "s", "type": "snapshot", "seq": 4, "size": 2,
                   "changes": [{"type": "modified", "doc": wdoc("b", 5), "oldIndex": 0, "newIndex": 1}]},
                  {"sub": "s", "type": "snapshot", "seq": 5, "size": 3, "changes": [added("d", 2)]},
                  {"sub": "s", "type": "snapshot", "seq": 6, "size": 2,
                   "changes": [{"type": "removed", "doc": wdoc("d"), "oldIndex": 2, "newIndex": -1}]})
        for _ in range(100):
            if listener.last_seq == 6:
                break
            await asyncio.sleep(0.01)
        self.assertEqual(listener.pending, 1)
        snap = await self.next(listener)
        self.assertEqual((snap.seq, snap.initial), (6, False))
        self.assertEqual([d.id for d in snap.docs], ["c", "b"])
        self.assertEqual(hearth.apply_changes(initial.docs, snap.changes), snap.docs)
        self.assertEqual(sorted((c.type, c.doc.id) for c in snap.changes),
                         [("added", "c"), ("modified", "b"), ("removed", "a")])
        # Changes that cancel out while waiting yield nothing.
        link.send({"sub": "s", "type": "snapshot", "seq": 7, "size": 3, "changes": [added("e", 2)]},
                  {"sub": "s", "type": "snapshot", "seq": 8, "size": 2,
                   "changes": [{"type": "removed", "doc": wdoc("e"), "oldIndex": 2, "newIndex": -1}]})
        await asyncio.sleep(0.05)
        self.assertEqual((listener.pending, listener.last_seq), (0, 8))

    async def test_connection_error_push(self) -> None:
        db = await self.connect()
        listener = db.listen_document("c/a")
        first = asyncio.ensure_future(self.next(listener))
        link, req = await self.server.next_request("listen")
        link.reply(req, sub="s")
        link.send({"sub": "s", "type": "snapshot", "seq": 1, "initial": True, "doc": None})
        await first
        link.send({"type": "error", "error": {"code": "RESOURCE_EXHAUSTED", "message": "did not drain"}})
        await asyncio.sleep(0.02)
        link.drop()
        with self.assertRaises(ConnectionError) as cm:
            await self.next(listener)
        self.assertIn("RESOURCE_EXHAUSTED", str(cm.exception))


if __name__ == "__main__":
    unittest.main()
