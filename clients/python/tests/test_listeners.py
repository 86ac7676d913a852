"""Listeners against a real hearthd: document and query snapshots, changes, unlisten, resume, heartbeats.

Skipped at runtime (with the reason) when the daemon does not know the ``listen`` op yet.
"""

import asyncio
import unittest

import hearth

from .support import Daemon, HearthTestCase, Proxy, daemon, listen_supported, start_daemon, stop_daemon

_supported: bool | None = None


def setUpModule() -> None:
    start_daemon()


def tearDownModule() -> None:
    stop_daemon()


class ListenerTest(HearthTestCase):
    async def asyncSetUp(self) -> None:
        await super().asyncSetUp()
        global _supported
        if _supported is None:
            _supported = await listen_supported(daemon().port)
        if not _supported:
            self.skipTest('hearthd answers INVALID_ARGUMENT unknown op "listen": this build does not serve '
                          "listeners yet; re-run once the server implements the listen protocol")

    async def next(self, listener, timeout: float = 5.0):
        return await asyncio.wait_for(listener.next(), timeout)

    async def assertQuiet(self, listener, wait: float = 0.3) -> None:
        await asyncio.sleep(wait)
        self.assertEqual(listener.pending, 0, f"unexpected snapshot: {list(listener._items)!r}")

    def ids(self, docs) -> list:
        return [d.id for d in docs]

    def changes(self, snap) -> list:
        return [(c.type, c.doc.id, c.old_index, c.new_index) for c in snap.changes]

    async def seed(self) -> None:
        c = self.coll
        await self.db.commit(hearth.Batch().set(f"{c}/r1", {"duration": 30}).set(f"{c}/r2", {"duration": 45})
                             .set(f"{c}/r3", {"duration": 12}).set(f"{c}/x", {"duration": 1}))

    def query(self) -> dict:
        return dict(where=("duration", ">=", 10), order_by="duration")

    # -- documents ------------------------------------------------------------------------------------

    async def test_document_listener(self) -> None:
        path = f"{self.coll}/d"
        w0 = await self.db.set(path, {"n": 1})
        listener = self.db.listen_document(path)
        snap = await self.next(listener)
        self.assertTrue(snap.initial)
        self.assertEqual(snap.doc.data, {"n": 1})
        self.assertGreaterEqual(snap.seq, w0.seq)
        w1 = await self.db.update(path, {"n": 2})
        snap = await self.next(listener)
        self.assertEqual((snap.doc.data, snap.seq, snap.initial), ({"n": 2}, w1.seq, False))
        self.assertEqual(snap.doc.update_time, w1.update_time)
        await self.db.delete(path)
        snap = await self.next(listener)
        self.assertIsNone(snap.doc)
        await self.assertQuiet(listener)
        await listener.close()
        self.assertTrue(listener.closed)

    async def test_document_listener_on_missing_document(self) -> None:
        path = f"{self.coll}/later"
        async with self.db.listen_document(path) as listener:
            snap = await self.next(listener)
            self.assertFalse(snap.exists)
            await self.db.create(path, {"x": True})
            snap = await self.next(listener)
            self.assertEqual(snap.doc.data, {"x": True})
            await self.db.set(f"{self.coll}/other", {"x": 1})
            await self.assertQuiet(listener)

    # -- queries --------------------------------------------------------------------------------------

    async def test_query_listener_changes(self) -> None:
        await self.seed()
        c = self.coll
        listener = self.db.listen_query(c, **self.query())
        snap = await self.next(listener)
        self.assertTrue(snap.initial)
        self.assertEqual(self.ids(snap.docs), ["r3", "r1", "r2"])
        self.assertEqual(self.changes(snap), [("added", "r3", -1, 0), ("added", "r1", -1, 1),
                                              ("added", "r2", -1, 2)])

        w = await self.db.set(f"{c}/r4", {"duration": 20})
        snap = await self.next(listener)
        self.assertEqual(snap.seq, w.seq)
        self.assertEqual(self.changes(snap), [("added", "r4", -1, 1)])
        self.assertEqual(self.ids(snap.docs), ["r3", "r4", "r1", "r2"])

        await self.db.set(f"{c}/y", {"duration": 2})        # does not match: no snapshot
        await self.assertQuiet(listener)

        await self.db.update(f"{c}/r1", {"duration": 50})
        snap = await self.next(listener)
        self.assertEqual(self.changes(snap), [("modified", "r1", 2, 3)])
        self.assertEqual(snap.docs[3].data, {"duration": 50})

        await self.db.delete(f"{c}/r3")
        snap = await self.next(listener)
        self.assertEqual(self.changes(snap), [("removed", "r3", 0, -1)])
        self.assertEqual(snap.docs, list(await self.db.query(c, **self.query())))
        await self.assertQuiet(listener)
        await listener.close()

    async def test_commit_is_one_snapshot(self) -> None:
        await self.seed()
        c = self.coll
        listener = self.db.listen_query(c, **self.query())
        await self.next(listener)
        await self.db.commit(hearth.Batch().delete(f"{c}/r2").set(f"{c}/r5", {"duration": 10})
                             .update(f"{c}/r3", {"duration": 40}))
        snap = await self.next(listener)
        self.assertEqual([ch.type for ch in snap.changes], ["removed", "added", "modified"])
        self.assertEqual(self.ids(snap.docs), ["r5", "r1", "r3"])
        self.assertEqual(snap.docs, list(await self.db.query(c, **self.query())))
        await self.assertQuiet(listener)
        await listener.close()

    async def test_limit_query(self) -> None:
        await self.seed()
        c = self.coll
        async with self.db.listen_query(c, order_by=[("duration", "desc")], limit=2) as listener:
            snap = await self.next(listener)
            self.assertEqual(self.ids(snap.docs), ["r2", "r1"])
            await self.db.set(f"{c}/top", {"duration": 99})
            snap = await self.next(listener)
            self.assertEqual(self.changes(snap), [("removed", "r1", 1, -1), ("added", "top", -1, 0)])
            self.assertEqual(self.ids(snap.docs), ["top", "r2"])

    async def test_refused_listen_raises_from_iteration(self) -> None:
        listener = self.db.listen_query(self.coll, where=("a", "==", 1), order_by="b")   # needs an index
        with self.assertRaises(hearth.HearthError) as cm:
            await self.next(listener)
        self.assertEqual(cm.exception.code, "FAILED_PRECONDITION")
        with self.assertRaises(StopAsyncIteration):
            await self.next(listener)
        with self.assertRaises(hearth.HearthError):
            await self.db.listen_document(self.coll).start()                           # not a document path

    # -- unlisten -------------------------------------------------------------------------------------

    async def test_leaving_async_for_sends_unlisten(self) -> None:
        await self.seed()
        listener = self.db.listen_query(self.coll, **self.query())
        async for snap in listener:
            self.assertTrue(snap.initial)
            break
        for _ in range(100):
            if listener.closed:
                break
            await asyncio.sleep(0.01)
        self.assertTrue(listener.closed)
        conn = self.db._conn
        self.assertEqual(conn._subs, {})
        before = conn.unrouted_pushes
        await self.db.set(f"{self.coll}/r9", {"duration": 33})
        await asyncio.sleep(0.3)
        self.assertEqual(conn.unrouted_pushes, before, "the server kept pushing after unlisten")

    async def test_raw_listen_and_unlisten(self) -> None:
        r = await self.db.request("listen", path=f"{self.coll}/raw")
        self.assertIsInstance(r["sub"], (str, int))
        r2 = await self.db.request("unlisten", sub=r["sub"])
        self.assertTrue(r2["ok"])

    # -- resume ---------------------------------------------------------------------------------------

    async def resilient_client(self) -> tuple[hearth.Client, Proxy]:
        proxy = await Proxy(daemon().port).start()
        self.addAsyncCleanup(proxy.close)
        db = await hearth.connect(port=proxy.port, reconnect=True, reconnect_delay=0.02, max_reconnect_delay=0.1)
        self.addAsyncCleanup(db.close)
        return db, proxy

    async def wait_disconnected(self, db: hearth.Client) -> None:
        for _ in range(200):
            if not db.connected:
                return
            await asyncio.sleep(0.01)
        self.fail("the client did not notice the lost connection")

    async def test_query_resume_delivers_net_changes(self) -> None:
        await self.seed()
        c = self.coll
        db, proxy = await self.resilient_client()
        listener = db.listen_query(c, **self.query())
        initial = await self.next(listener)
        self.assertEqual(self.ids(initial.docs), ["r3", "r1", "r2"])

        proxy.block()
        proxy.drop()
        await self.wait_disconnected(db)
        await self.db.set(f"{c}/r4", {"duration": 20})
        await self.db.update(f"{c}/r1", {"duration": 60})
        await self.db.delete(f"{c}/r2")
        await self.db.set(f"{c}/tmp", {"duration": 15})
        w = await self.db.delete(f"{c}/tmp")              # came and went: not in the net changes
        proxy.unblock()

        snap = await self.next(listener)
        self.assertFalse(snap.initial)
        self.assertFalse(snap.reset, "the server should resume with net changes, not a reset")
        self.assertGreaterEqual(snap.seq, w.seq)
        self.assertEqual(sorted((ch.type, ch.doc.id) for ch in snap.changes),
                         [("added", "r4"), ("modified", "r1"), ("removed", "r2")])
        self.assertEqual(snap.docs, list(await self.db.query(c, **self.query())))
        self.assertEqual(self.ids(snap.docs), ["r3", "r4", "r1"])
        self.assertEqual(hearth.apply_changes(initial.docs, snap.changes), snap.docs)
        await self.assertQuiet(listener)
        self.assertGreaterEqual(db.reconnects, 1)

        await self.db.set(f"{c}/r5", {"duration": 70})    # live again
        snap = await self.next(listener)
        self.assertEqual(self.changes(snap), [("added", "r5", -1, 3)])
        await listener.close()

    async def test_resume_with_no_changes_is_silent(self) -> None:
        await self.seed()
        db, proxy = await self.resilient_client()
        listener = db.listen_query(self.coll, **self.query())
        first = await self.next(listener)
        proxy.drop()
        await self.wait_disconnected(db)
        await self.db.set(f"{self.coll}/unrelated", {"duration": 3})
        for _ in range(300):
            if db.connected and listener.synced:
                break
            await asyncio.sleep(0.01)
        self.assertTrue(listener.synced, "the listener did not resume")
        self.assertGreaterEqual(listener.last_seq, first.seq)
        await self.assertQuiet(listener)
        await self.db.set(f"{self.coll}/r6", {"duration": 11})
        snap = await self.next(listener)
        self.assertEqual(self.changes(snap), [("added", "r6", -1, 0)])
        await listener.close()

    async def test_document_resume(self) -> None:
        path = f"{self.coll}/doc"
        await self.db.set(path, {"v": 1})
        db, proxy = await self.resilient_client()
        listener = db.listen_document(path)
        self.assertEqual((await self.next(listener)).doc.data, {"v": 1})
        proxy.block()
        proxy.drop()
        await self.wait_disconnected(db)
        await self.db.update(path, {"v": 2})
        w = await self.db.update(path, {"v": 3})
        proxy.unblock()
        snap = await self.next(listener)
        self.assertEqual((snap.doc.data, snap.initial), ({"v": 3}, False))
        self.assertGreaterEqual(snap.seq, w.seq)
        await self.assertQuiet(listener)
        await listener.close()

    async def test_lost_connection_without_reconnect_raises(self) -> None:
        db = await hearth.connect(port=daemon().port)
        self.addAsyncCleanup(db.close)
        listener = db.listen_document(f"{self.coll}/z")
        await self.next(listener)
        db.drop_connection()
        with self.assertRaises(ConnectionError):
            await self.next(listener)

    async def test_resume_past_retention_is_a_reset_seen_as_changes(self) -> None:
        small = Daemon("--retention-bytes", "200000").start()
        self.addCleanup(small.stop)
        direct = await hearth.connect(port=small.port)
        self.addAsyncCleanup(direct.close)
        c = self.coll
        await direct.commit(hearth.Batch().set(f"{c}/a", {"v": 1}).set(f"{c}/b", {"v": 2}))
        proxy = await Proxy(small.port).start()
        self.addAsyncCleanup(proxy.close)
        db = await hearth.connect(port=proxy.port, reconnect=True, reconnect_delay=0.02, max_reconnect_delay=0.1)
        self.addAsyncCleanup(db.close)
        listener = db.listen_query(c, order_by="v")
        initial = await self.next(listener)
        proxy.block()
        proxy.drop()
        await self.wait_disconnected(db)
        await direct.set(f"{c}/c", {"v": 3})
        await direct.delete(f"{c}/a")
        big = "x" * 50_000
        for i in range(8):                                # push the change log past its retention
            await direct.set(f"filler/f{i}", {"s": big})
        # Retention prunes as the store applies commits to SQLite, which may trail their acknowledgement (the
        # history stays resumable meanwhile). Listing collections reads SQLite's files, so it first applies
        # everything acknowledged: a barrier after which the log is pruned.
        await direct.request("listCollections")
        self.assertEqual((await direct.request("stats"))["store"]["applier"]["backlogCommits"], 0)
        proxy.unblock()
        snap = await self.next(listener)
        self.assertTrue(snap.reset)
        self.assertFalse(snap.initial)
        self.assertEqual(self.ids(snap.docs), ["b", "c"])
        self.assertEqual(sorted((ch.type, ch.doc.id) for ch in snap.changes), [("added", "c"), ("removed", "a")])
        self.assertEqual(hearth.apply_changes(initial.docs, snap.changes), snap.docs)
        await listener.close()

    def listens(self, proxy: Proxy) -> list[dict]:
        return [r for r in proxy.requests if r.get("op") == "listen"]

    async def test_resume_across_a_daemon_restart_carries_the_history(self) -> None:
        # Restarted on the same data dir, the database keeps its history: the listen that resumes names it
        # beside the seq, and the daemon answers with the net changes, not a reset.
        own = Daemon().start()
        self.addCleanup(own.stop)
        c = self.coll
        direct = await hearth.connect(port=own.port)
        await direct.commit(hearth.Batch().set(f"{c}/a", {"v": 1}).set(f"{c}/b", {"v": 2}))
        history = (await direct.hello())["history"]
        self.assertRegex(history, r"^[0-9a-f]{16}$")
        await direct.close()
        proxy = await Proxy(own.port).start()
        self.addAsyncCleanup(proxy.close)
        db = await hearth.connect(port=proxy.port, reconnect=True, reconnect_delay=0.02, max_reconnect_delay=0.1)
        self.addAsyncCleanup(db.close)
        listener = db.listen_query(c, order_by="v")
        doc_listener = db.listen_document(f"{c}/a")
        initial = await self.next(listener)
        self.assertEqual(self.ids(initial.docs), ["a", "b"])
        self.assertEqual((await self.next(doc_listener)).doc.data, {"v": 1})
        self.assertEqual((listener.history, doc_listener.history), (history, history))
        self.assertNotIn("history", self.listens(proxy)[0], "a first listen has no resume point")

        proxy.block()
        proxy.drop()
        await self.wait_disconnected(db)
        own.restart()
        proxy.target_port = own.port
        direct = await hearth.connect(port=own.port)
        self.addAsyncCleanup(direct.close)
        self.assertEqual((await direct.hello())["history"], history)
        await direct.set(f"{c}/c", {"v": 3})
        w = await direct.update(f"{c}/a", {"v": 4})
        resume_points = (listener.last_seq, doc_listener.last_seq)
        proxy.unblock()

        snap = await self.next(listener)
        self.assertFalse(snap.reset, "same history: the daemon resumes with net changes")
        self.assertEqual(sorted((ch.type, ch.doc.id) for ch in snap.changes), [("added", "c"), ("modified", "a")])
        self.assertEqual(self.ids(snap.docs), ["b", "c", "a"])
        self.assertEqual(hearth.apply_changes(initial.docs, snap.changes), snap.docs)
        doc_snap = await self.next(doc_listener)
        self.assertEqual((doc_snap.doc.data, doc_snap.reset), ({"v": 4}, False))
        self.assertGreaterEqual(doc_snap.seq, w.seq)
        resumed = [r for r in self.listens(proxy) if "resumeAfter" in r]
        self.assertEqual(sorted((r["resumeAfter"], r.get("history")) for r in resumed),
                         sorted((seq, history) for seq in resume_points))
        self.assertEqual((listener.history, doc_listener.history), (history, history))
        await listener.close()
        await doc_listener.close()

    async def test_a_daemon_replaced_by_a_fresh_database_resets_listeners(self) -> None:
        # The daemon behind the client's address is replaced by one on a fresh data dir (another history)
        # whose seqs have already passed the listeners' resume points and whose result has the same size:
        # from a seq alone it would send a diff of unrelated commits (nothing), leaving the old documents.
        # With the history the daemon resets, and the consumer sees exactly the new state.
        old = Daemon().start()
        self.addCleanup(old.stop)
        c = self.coll
        direct = await hearth.connect(port=old.port)
        for name, v in (("a", 1), ("b", 2), ("c", 3)):
            await direct.set(f"{c}/{name}", {"v": v})
        old_history = (await direct.hello())["history"]
        await direct.close()
        proxy = await Proxy(old.port).start()
        self.addAsyncCleanup(proxy.close)
        db = await hearth.connect(port=proxy.port, reconnect=True, reconnect_delay=0.02, max_reconnect_delay=0.1)
        self.addAsyncCleanup(db.close)
        listener = db.listen_query(c, order_by="v")
        gone = db.listen_document(f"{c}/a")
        changed = db.listen_document(f"{c}/b")
        initial = await self.next(listener)
        self.assertEqual(self.ids(initial.docs), ["a", "b", "c"])
        self.assertEqual((await self.next(gone)).doc.data, {"v": 1})
        self.assertEqual((await self.next(changed)).doc.data, {"v": 2})
        resume_after = max(listener.last_seq, gone.last_seq, changed.last_seq)

        fresh = Daemon().start()
        self.addCleanup(fresh.stop)
        direct = await hearth.connect(port=fresh.port)
        self.addAsyncCleanup(direct.close)
        await direct.set(f"{c}/b", {"v": 20})
        await direct.set(f"{c}/d", {"v": 10})
        await direct.set(f"{c}/e", {"v": 30})
        filler = 0
        while await direct.ping() <= resume_after:       # past the resume points, in unrelated documents
            filler += 1
            await direct.set(f"{c}_filler/f{filler}", {})
        new_history = (await direct.hello())["history"]
        self.assertNotEqual(new_history, old_history)

        proxy.block()
        proxy.drop()
        await self.wait_disconnected(db)
        old.stop()
        proxy.target_port = fresh.port
        proxy.unblock()

        snap = await self.next(listener)
        self.assertTrue(snap.reset)
        self.assertFalse(snap.initial)
        self.assertEqual(snap.docs, list(await direct.query(c, order_by="v")))
        self.assertEqual([(d.id, d.data["v"]) for d in snap.docs], [("d", 10), ("b", 20), ("e", 30)])
        self.assertEqual(sorted((ch.type, ch.doc.id) for ch in snap.changes),
                         [("added", "d"), ("added", "e"), ("modified", "b"), ("removed", "a"), ("removed", "c")])
        self.assertEqual(hearth.apply_changes(initial.docs, snap.changes), snap.docs)
        self.assertEqual(listener.docs, snap.docs)
        gone_snap = await self.next(gone)
        self.assertEqual((gone_snap.doc, gone_snap.reset), (None, True))
        changed_snap = await self.next(changed)
        self.assertEqual((changed_snap.doc.data, changed_snap.reset), ({"v": 20}, True))
        for lst in (listener, gone, changed):
            self.assertEqual(lst.history, new_history)
        resumed = [r for r in self.listens(proxy) if "resumeAfter" in r]
        self.assertEqual(len(resumed), 3)
        self.assertEqual({r["history"] for r in resumed}, {old_history})

        # Live on the new database, from its seqs.
        w = await direct.delete(f"{c}/d")
        snap = await self.next(listener)
        self.assertEqual((self.changes(snap), snap.reset, snap.seq), ([("removed", "d", 0, -1)], False, w.seq))
        self.assertEqual(self.ids(snap.docs), ["b", "e"])
        await direct.set(f"{c}/a", {"v": 5})
        gone_snap = await self.next(gone)
        self.assertEqual((gone_snap.doc.data, gone_snap.reset), ({"v": 5}, False))
        for lst in (listener, gone, changed):
            await lst.close()

    async def test_burst_of_writes_keeps_state_consistent(self) -> None:
        c = self.coll
        listener = self.db.listen_query(c, order_by=[("v", "desc")], limit=5)
        docs = (await self.next(listener)).docs
        writer = await hearth.connect(port=daemon().port)
        self.addAsyncCleanup(writer.close)
        await asyncio.gather(*(writer.set(f"{c}/d{i % 7}", {"v": i}) for i in range(40)),
                             *(writer.delete(f"{c}/d{i}") for i in (2, 4)))
        expected = list(await self.db.query(c, order_by=[("v", "desc")], limit=5))
        while docs != expected:
            snap = await self.next(listener)
            self.assertEqual(hearth.apply_changes(docs, snap.changes), snap.docs)
            docs = snap.docs
        await self.assertQuiet(listener)
        await listener.close()

    async def test_hello(self) -> None:
        info = await self.db.hello(heartbeat_ms=0)
        self.assertIsInstance(info["seq"], int)
        self.assertTrue(info["version"])

    # -- heartbeats -----------------------------------------------------------------------------------

    async def test_heartbeats_advance_the_resume_point(self) -> None:
        listener = self.db.listen_document(f"{self.coll}/hb", heartbeat_ms=100)
        await self.next(listener)
        w = await self.db.set(f"{self.coll}_elsewhere/x", {"v": 1})
        for _ in range(300):
            if listener.last_seq >= w.seq:
                break
            await asyncio.sleep(0.01)
        self.assertGreaterEqual(listener.last_seq, w.seq)
        await self.assertQuiet(listener, 0.1)
        await listener.close()


if __name__ == "__main__":
    unittest.main()
