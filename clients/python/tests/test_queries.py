"""Queries (filters, orders, limits, cursors, collection groups), count and aggregate against hearthd."""

import datetime as dt
import unittest

import hearth

from .support import HearthTestCase, start_daemon, stop_daemon

UTC = dt.timezone.utc


def setUpModule() -> None:
    start_daemon()


def tearDownModule() -> None:
    stop_daemon()


def day(d: int) -> dt.datetime:
    return dt.datetime(2026, 11, d, 9, tzinfo=UTC)


class QueryTest(HearthTestCase):
    async def asyncSetUp(self) -> None:
        await super().asyncSetUp()
        c = self.coll
        await self.db.commit(hearth.Batch()
                             .set(f"{c}/r1", {"customerId": "c1", "callDate": day(1), "duration": 30, "tags": ["a"]})
                             .set(f"{c}/r2", {"customerId": "c1", "callDate": day(3), "duration": 45, "tags": ["b"]})
                             .set(f"{c}/r3", {"customerId": "c2", "callDate": day(2), "duration": 12.5})
                             .set(f"{c}/r4", {"customerId": "c1", "callDate": day(2), "duration": 5,
                                              "tags": ["a", "b"]}))

    def ids(self, docs) -> list:
        return [d.id for d in docs]

    async def test_filters(self) -> None:
        c = self.coll
        self.assertEqual(self.ids(await self.db.query(c, where=("duration", ">=", 12))), ["r3", "r1", "r2"])
        self.assertEqual(self.ids(await self.db.query(c, where=[("customerId", "==", "c1"), ("duration", "==", 5)])),
                         ["r4"])
        self.assertEqual(self.ids(await self.db.query(c, where=[("duration", ">", 5), ("duration", "<", 40)])),
                         ["r3", "r1"])
        self.assertEqual(self.ids(await self.db.query(c, where=("callDate", "==", day(2)))), ["r3", "r4"])
        self.assertEqual(self.ids(await self.db.query(c, where=("tags", "array-contains", "a"))), ["r1", "r4"])
        self.assertEqual(self.ids(await self.db.query(c, where=("tags", "array-contains-any", ["b"]))), ["r2", "r4"])
        self.assertEqual(self.ids(await self.db.query(c, where=("duration", "in", [5, 30.0]))), ["r1", "r4"])
        self.assertEqual(self.ids(await self.db.query(c, where=("customerId", "not-in", ["c1"]))), ["r3"])
        self.assertEqual(self.ids(await self.db.query(
            c, where={"or": [("customerId", "==", "c2"), ("duration", "in", [5, 30])]})), ["r1", "r3", "r4"])
        self.assertEqual(self.ids(await self.db.query(c, where=("duration", "==", 12.5))), ["r3"])

    async def test_order_limit_select(self) -> None:
        c = self.coll
        docs = await self.db.query(c, order_by=[("duration", "desc")], limit=2, select=["duration"])
        self.assertEqual(self.ids(docs), ["r2", "r1"])
        self.assertEqual(docs[0].data, {"duration": 45})
        self.assertIsInstance(docs.seq, int)
        self.assertEqual(self.ids(await self.db.query(c, order_by="duration", limit_to_last=1)), ["r2"])
        self.assertEqual(self.ids(await self.db.query(c, order_by="duration", offset=1, limit=2)), ["r3", "r1"])
        self.assertEqual((await self.db.query(c, order_by="duration", select=[]))[0].data, {})

    async def test_cursors(self) -> None:
        c = self.coll
        await self.db.create_index(c, [("customerId", "asc"), ("callDate", "desc")])
        q = dict(where=("customerId", "==", "c1"), order_by=[("callDate", "desc")], limit=2)
        page1 = await self._ready_query(c, **q)
        self.assertEqual(self.ids(page1), ["r2", "r4"])
        last = page1[-1]
        page2 = await self.db.query(c, **q, start_after=[last.data["callDate"], last.id])
        self.assertEqual(self.ids(page2), ["r1"])
        self.assertEqual(self.ids(await self.db.query(c, order_by="duration", start_at=[12.5], end_before=[45])),
                         ["r3", "r1"])
        self.assertEqual(self.ids(await self.db.query(c, order_by="duration", start_after=[12.5], end_at=[45])),
                         ["r1", "r2"])

    async def _ready_query(self, c, **q):
        import asyncio
        for _ in range(100):
            try:
                return await self.db.query(c, **q)
            except hearth.HearthError as e:
                if e.code != "FAILED_PRECONDITION" or "building" not in e.message:
                    raise
                await asyncio.sleep(0.05)
        self.fail("index never became ready")

    async def test_missing_index_is_failed_precondition(self) -> None:
        with self.assertRaises(hearth.HearthError) as cm:
            await self.db.query(self.coll, where=("customerId", "==", "c1"), order_by=[("duration", "desc")])
        self.assertEqual(cm.exception.code, "FAILED_PRECONDITION")
        self.assertIn('"op":"index"', cm.exception.message)

    async def test_collection_group(self) -> None:
        g = hearth.Batch()
        grp = f"feed_{self.coll}"
        g.set(f"users/u1/{grp}/p1", {"n": 1}).set(f"users/u2/{grp}/p2", {"n": 2})
        await self.db.commit(g)
        self.assertEqual(self.ids(await self.db.query(collection_group=grp)), ["p1", "p2"])
        self.assertEqual(self.ids(await self.db.query(collection_group=grp, parent="users/u2")), ["p2"])

    async def test_count_and_aggregate(self) -> None:
        c = self.coll
        self.assertEqual(await self.db.count(c), 4)
        self.assertEqual(await self.db.count(c, where=("customerId", "==", "c1")), 3)
        r = await self.db.aggregate({"calls": hearth.Count(), "total": hearth.Sum("duration"),
                                     "mean": hearth.Avg("duration")}, c, where=("customerId", "==", "c1"))
        self.assertEqual(r, {"calls": 3, "total": 80, "mean": 80 / 3})
        self.assertIsInstance(r["total"], int)
        r = await self.db.aggregate({"total": hearth.Sum("duration"), "none": {"avg": "nothing"}}, c)
        self.assertEqual(r, {"total": 92.5, "none": None})
        plan = await self.db.explain(c, where=("customerId", "==", "c1"))
        self.assertEqual(plan["returned"], 3)

    async def test_query_argument_errors(self) -> None:
        with self.assertRaises(ValueError):
            await self.db.query(self.coll, where=("a", "~", 1))
        with self.assertRaises(ValueError):
            await self.db.query()
        with self.assertRaises(hearth.HearthError) as cm:
            await self.db.query(self.coll, where=("a", ">", None))
        self.assertEqual(cm.exception.code, "INVALID_ARGUMENT")


if __name__ == "__main__":
    unittest.main()
