"""CRUD, commits, transforms, preconditions, error codes and pipelining against a real hearthd."""

import asyncio
import datetime as dt
import unittest

import hearth

from .support import HearthTestCase, daemon, start_daemon, stop_daemon


def setUpModule() -> None:
    start_daemon()


def tearDownModule() -> None:
    stop_daemon()


class CrudTest(HearthTestCase):
    async def test_create_get_set_update_delete(self) -> None:
        path = f"{self.coll}/c1"
        self.assertIsNone(await self.db.get(path))
        r = await self.db.create(path, {"fullName": "Ada Lovelace", "visits": 0})
        self.assertEqual((r.path, r.id), (path, "c1"))
        self.assertIsInstance(r.seq, int)
        self.assertEqual(r.update_time.tzinfo, dt.timezone.utc)
        doc = await self.db.get(path)
        self.assertEqual(doc, hearth.Document(path, "c1", {"fullName": "Ada Lovelace", "visits": 0},
                                              r.update_time, r.update_time))

        await self.db.set(path, {"address": {"zip": "N1"}}, merge=True)
        await self.db.update(path, {"address.city": "London", "visits": hearth.Increment(1)})
        doc = await self.db.get(path)
        self.assertEqual(doc.data, {"fullName": "Ada Lovelace", "visits": 1,
                                    "address": {"zip": "N1", "city": "London"}})
        self.assertEqual(doc.get("address.city"), "London")
        self.assertEqual(doc.create_time, r.update_time)

        await self.db.set(path, {"a": 1, "b": {"c": 2, "d": 3}, "e": 4}, merge_fields=["a", "b.c"])
        doc = await self.db.get(path)
        self.assertEqual(doc.data["a"], 1)
        self.assertEqual(doc.data["b"], {"c": 2})
        self.assertNotIn("e", doc.data)

        await self.db.set(path, {"only": True})
        self.assertEqual((await self.db.get(path)).data, {"only": True})

        w = await self.db.delete(path)
        self.assertIsNone(await self.db.get(path))
        self.assertGreater(w.seq, r.seq)
        await self.db.delete(path)  # absent: still ok

    async def test_get_all_and_add(self) -> None:
        a = await self.db.add(self.coll, {"n": 1})
        b = await self.db.add(self.coll, {"n": 2})
        self.assertNotEqual(a.id, b.id)
        docs = await self.db.get_all([b.path, f"{self.coll}/missing", a.path])
        self.assertEqual([d.data["n"] if d else None for d in docs], [2, None, 1])

    async def test_unchanged_write_keeps_update_time(self) -> None:
        path = f"{self.coll}/same"
        r1 = await self.db.set(path, {"x": 1})
        r2 = await self.db.set(path, {"x": 1})
        self.assertEqual(r1.update_time, r2.update_time)

    async def test_raw_request(self) -> None:
        r = await self.db.request("set", path=f"{self.coll}/raw", data={"t": {"$timestamp": "2026-01-01T00:00:00Z"}})
        self.assertTrue(r["ok"])
        self.assertIsInstance(r["id"], int)
        g = await self.db.request("get", path=f"{self.coll}/raw")
        self.assertEqual(g["doc"]["data"], {"t": {"$timestamp": "2026-01-01T00:00:00.000000Z"}})
        self.assertGreater(g["id"], r["id"])
        self.assertGreaterEqual(await self.db.ping(), r["seq"])


class CommitTest(HearthTestCase):
    async def test_commit_applies_all_in_one_seq(self) -> None:
        batch = (self.db.batch()
                 .create(f"{self.coll}/m1", {"userId": "u1"})
                 .set(f"{self.coll}/d1", {"memberCount": hearth.Increment(1)}, merge=True)
                 .verify(f"{self.coll}/m1", {"exists": True}))
        result = await self.db.commit(batch)
        self.assertEqual(len(result.results), 3)
        self.assertEqual(result.results[1].transform_results, [1])
        self.assertEqual(result.results[0].update_time, result.commit_time)
        self.assertTrue(all(r.seq == result.seq for r in result.results))

    async def test_already_exists_aborts_whole_commit(self) -> None:
        await self.db.create(f"{self.coll}/exists", {"v": 1})
        await self.db.set(f"{self.coll}/counter", {"n": 10})
        with self.assertRaises(hearth.HearthError) as cm:
            await self.db.commit([
                {"op": "set", "path": f"{self.coll}/new", "data": {"v": 2}},
                {"op": "update", "path": f"{self.coll}/counter", "data": {"n": hearth.Increment(5)}},
                {"op": "create", "path": f"{self.coll}/exists", "data": {}},
            ])
        self.assertEqual(cm.exception.code, "ALREADY_EXISTS")
        self.assertIn("writes[2]", cm.exception.message)
        self.assertIsNone(await self.db.get(f"{self.coll}/new"))
        self.assertEqual((await self.db.get(f"{self.coll}/counter")).data["n"], 10)
        self.assertEqual((await self.db.get(f"{self.coll}/exists")).data, {"v": 1})

    async def test_later_writes_see_earlier_ones(self) -> None:
        path = f"{self.coll}/seq"
        await self.db.commit(hearth.Batch().create(path, {"n": 1}).update(path, {"n": hearth.Increment(1)})
                             .delete(f"{self.coll}/nothing"))
        self.assertEqual((await self.db.get(path)).data["n"], 2)


class TransformTest(HearthTestCase):
    async def test_concurrent_increments_are_exact(self) -> None:
        path = f"{self.coll}/counter"
        await self.db.set(path, {"n": 0})
        clients = [await hearth.connect(port=daemon().port) for _ in range(20)]
        try:
            async def worker(c: hearth.Client) -> None:
                for _ in range(50):
                    await c.update(path, {"n": hearth.Increment(1)})
            await asyncio.gather(*(worker(c) for c in clients))
        finally:
            for c in clients:
                await c.close()
        self.assertEqual((await self.db.get(path)).data["n"], 1000)

    async def test_increment_rules(self) -> None:
        path = f"{self.coll}/inc"
        await self.db.set(path, {"i": 2**63 - 2, "s": "text"})
        r = await self.db.update(path, {"i": hearth.Increment(5), "s": hearth.Increment(3),
                                        "missing": hearth.Increment(2.5), "d": hearth.Increment(1.0)})
        self.assertEqual(r.transform_results, [1.0, 2**63 - 1, 2.5, 3])
        data = (await self.db.get(path)).data
        self.assertEqual(data["i"], 2**63 - 1)   # saturates
        self.assertEqual(data["s"], 3)           # non-numeric becomes n
        self.assertIsInstance(data["d"], float)

    async def test_server_timestamps_share_the_commit_time(self) -> None:
        r = await self.db.commit(hearth.Batch()
                                 .set(f"{self.coll}/a", {"t": hearth.SERVER_TIMESTAMP})
                                 .set(f"{self.coll}/b", {"t": hearth.SERVER_TIMESTAMP}))
        a, b = await self.db.get_all([f"{self.coll}/a", f"{self.coll}/b"])
        self.assertEqual(a.data["t"], b.data["t"])
        self.assertEqual(a.data["t"], r.commit_time)


class PreconditionTest(HearthTestCase):
    async def test_preconditions(self) -> None:
        path = f"{self.coll}/p"
        w = await self.db.set(path, {"v": 1})
        await self.db.update(path, {"v": 2}, precondition=hearth.Precondition(update_time=w.update_time))
        with self.assertRaises(hearth.HearthError) as cm:
            await self.db.update(path, {"v": 3}, precondition={"update_time": w.update_time})
        self.assertEqual(cm.exception.code, "FAILED_PRECONDITION")
        with self.assertRaises(hearth.HearthError) as cm:
            await self.db.set(path, {"v": 3}, precondition={"exists": False})
        self.assertEqual(cm.exception.code, "ALREADY_EXISTS")
        with self.assertRaises(hearth.HearthError) as cm:
            await self.db.delete(f"{self.coll}/absent", precondition={"exists": True})
        self.assertEqual(cm.exception.code, "NOT_FOUND")
        with self.assertRaises(hearth.HearthError) as cm:
            await self.db.update(f"{self.coll}/absent", {"v": 1})
        self.assertEqual(cm.exception.code, "NOT_FOUND")
        with self.assertRaises(hearth.HearthError) as cm:
            await self.db.commit(hearth.Batch().verify(path, hearth.Precondition(exists=False))
                                 .set(f"{self.coll}/q", {"v": 1}))
        self.assertEqual(cm.exception.code, "ALREADY_EXISTS")
        self.assertIsNone(await self.db.get(f"{self.coll}/q"))
        self.assertEqual((await self.db.get(path)).data["v"], 2)


class ErrorTest(HearthTestCase):
    async def assertCode(self, code: str, coro) -> hearth.HearthError:
        with self.assertRaises(hearth.HearthError) as cm:
            await coro
        self.assertEqual(cm.exception.code, code)
        self.assertTrue(cm.exception.message)
        return cm.exception

    async def test_bad_input_codes(self) -> None:
        await self.assertCode("INVALID_ARGUMENT", self.db.request("launch"))
        await self.assertCode("INVALID_ARGUMENT", self.db.get(self.coll))                 # not a document path
        await self.assertCode("INVALID_ARGUMENT", self.db.request("set", path=f"{self.coll}/x", data={}, marge=True))
        await self.assertCode("INVALID_ARGUMENT", self.db.set(f"{self.coll}/x", {"__bad__": 1}))
        await self.assertCode("INVALID_ARGUMENT", self.db.set(f"{self.coll}/x", {"a": [[1]]}))
        await self.assertCode("INVALID_ARGUMENT", self.db.set(f"{self.coll}/x", {"g": hearth.GeoPoint(91, 0)}))
        await self.assertCode("INVALID_ARGUMENT", self.db.set(f"{self.coll}/x", {"a": [hearth.Increment(1)]}))
        await self.assertCode("INVALID_ARGUMENT", self.db.set(f"{self.coll}/x", {"a": hearth.DELETE_FIELD}))
        await self.assertCode("INVALID_ARGUMENT", self.db.query(self.coll, where=[("a", "!=", 1), ("b", "not-in", [2])]))
        await self.assertCode("INVALID_ARGUMENT", self.db.query(self.coll, limit_to_last=1))
        await self.assertCode("INVALID_ARGUMENT", self.db.commit([{"op": "set", "path": f"{self.coll}/x",
                                                                    "data": {}}] * 10_001))
        # docs/protocol.md lists document size under RESOURCE_EXHAUSTED; hearthd answers INVALID_ARGUMENT
        # (as Firestore does). Either is accepted here; the message must say what was wrong.
        with self.assertRaises(hearth.HearthError) as cm:
            await self.db.set(f"{self.coll}/big", {"s": "x" * (1 << 20)})
        self.assertIn(cm.exception.code, ("INVALID_ARGUMENT", "RESOURCE_EXHAUSTED"))
        self.assertIn("too large", cm.exception.message)
        # The connection is still usable after every error.
        self.assertIsInstance(await self.db.ping(), int)

    async def test_over_long_line_is_answered_in_order(self) -> None:
        # A line over --max-line-bytes (16 MiB) is answered RESOURCE_EXHAUSTED without an id to echo; the
        # client matches it to the oldest waiting request, and the requests around it still line up.
        before = asyncio.ensure_future(self.db.ping())
        big = asyncio.ensure_future(self.db.request("set", path=f"{self.coll}/huge", data={"s": "x" * (17 << 20)}))
        after = asyncio.ensure_future(self.db.get(f"{self.coll}/none"))
        self.assertIsInstance(await before, int)
        with self.assertRaises(hearth.HearthError) as cm:
            await big
        self.assertEqual(cm.exception.code, "RESOURCE_EXHAUSTED")
        self.assertIsNone(await after)

    async def test_error_is_exception_with_fields(self) -> None:
        e = await self.assertCode("NOT_FOUND", self.db.update(f"{self.coll}/none", {"a": 1}))
        self.assertIn(f"{self.coll}/none", e.message)
        self.assertEqual(str(e), f"NOT_FOUND: {e.message}")


class PipelineTest(HearthTestCase):
    async def test_thousand_pipelined_requests(self) -> None:
        writes = [self.db.set(f"{self.coll}/d{i}", {"i": i}) for i in range(1000)]
        results = await asyncio.gather(*writes)
        self.assertEqual([r.id for r in results], [f"d{i}" for i in range(1000)])
        seqs = [r.seq for r in results]
        self.assertEqual(seqs, sorted(seqs))
        reads = await asyncio.gather(*(self.db.get(f"{self.coll}/d{i}") for i in range(1000)))
        self.assertEqual([d.data["i"] for d in reads], list(range(1000)))

    async def test_errors_and_successes_interleave(self) -> None:
        tasks = [self.db.get(f"{self.coll}/x") if i % 2 else self.db.request("nope") for i in range(1000)]
        results = await asyncio.gather(*tasks, return_exceptions=True)
        self.assertTrue(all(isinstance(r, hearth.HearthError) for r in results[0::2]))
        self.assertTrue(all(r is None for r in results[1::2]))


class ConnectionTest(unittest.IsolatedAsyncioTestCase):
    async def asyncSetUp(self) -> None:
        asyncio.get_running_loop().slow_callback_duration = 5.0
    async def test_pending_requests_fail_with_connection_error(self) -> None:
        db = await hearth.connect(port=daemon().port)
        try:
            tasks = [asyncio.ensure_future(db.set(f"lost/d{i}", {"i": i})) for i in range(200)]
            await asyncio.sleep(0)
            db.drop_connection()
            results = await asyncio.gather(*tasks, return_exceptions=True)
            failures = [r for r in results if isinstance(r, BaseException)]
            self.assertTrue(failures)
            self.assertTrue(all(isinstance(f, ConnectionError) for f in failures), failures[:3])
            with self.assertRaises(ConnectionError):
                await db.ping()
        finally:
            await db.close()
        with self.assertRaises(ConnectionError):
            await db.ping()

    async def test_connect_refused(self) -> None:
        with self.assertRaises(OSError):
            await hearth.connect(port=1)

    async def test_async_with(self) -> None:
        async with hearth.connect(port=daemon().port) as db:
            self.assertIsInstance(await db.ping(), int)
        self.assertTrue(db.is_closed)

    async def test_reconnect_serves_later_requests(self) -> None:
        db = await hearth.connect(port=daemon().port, reconnect=True)
        try:
            await db.ping()
            db.drop_connection()
            self.assertIsInstance(await asyncio.wait_for(db.ping(), 5), int)
            self.assertEqual(db.reconnects, 1)
        finally:
            await db.close()


if __name__ == "__main__":
    unittest.main()
