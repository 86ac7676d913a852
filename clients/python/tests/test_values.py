"""Value forms: encoding rules offline, and every form round-tripping through a real hearthd."""

import datetime as dt
import math
import unittest

import hearth
from hearth.values import INT64_MAX, INT64_MIN, decode, encode, format_timestamp, parse_timestamp

from .support import HearthTestCase, start_daemon, stop_daemon

UTC = dt.timezone.utc


def setUpModule() -> None:
    start_daemon()


def tearDownModule() -> None:
    stop_daemon()


class EncodingTest(unittest.TestCase):
    def test_wire_forms(self) -> None:
        t = dt.datetime(2026, 11, 29, 12, 0, 0, 123456, tzinfo=UTC)
        self.assertEqual(encode(None), None)
        self.assertEqual(encode(True), True)
        self.assertEqual(encode(42), 42)
        self.assertEqual(encode(3.5), 3.5)
        self.assertEqual(encode(3.0), {"$double": 3.0})
        self.assertEqual(encode(float("nan")), {"$double": "NaN"})
        self.assertEqual(encode(float("inf")), {"$double": "Infinity"})
        self.assertEqual(encode(float("-inf")), {"$double": "-Infinity"})
        self.assertEqual(encode(t), {"$timestamp": "2026-11-29T12:00:00.123456Z"})
        self.assertEqual(encode(b"\x00\x01\x02\xff"), {"$bytes": "AAEC/w=="})
        self.assertEqual(encode(hearth.Reference("customers/c1")), {"$ref": "customers/c1"})
        self.assertEqual(encode(hearth.GeoPoint(48.85, 2)), {"$geopoint": [48.85, 2.0]})
        self.assertEqual(encode(hearth.SERVER_TIMESTAMP), {"$serverTimestamp": True})
        self.assertEqual(encode(hearth.DELETE_FIELD), {"$delete": True})
        self.assertEqual(encode(hearth.DOCUMENT_ID), {"$documentId": True})
        self.assertEqual(encode(hearth.Increment(2)), {"$increment": 2})
        self.assertEqual(encode(hearth.Maximum(2.0)), {"$maximum": {"$double": 2.0}})
        self.assertEqual(encode(hearth.Minimum(-1)), {"$minimum": -1})
        self.assertEqual(encode(hearth.ArrayUnion([1, t])), {"$arrayUnion": [1, {"$timestamp": format_timestamp(t)}]})
        self.assertEqual(encode(hearth.ArrayRemove(["x"])), {"$arrayRemove": ["x"]})
        self.assertEqual(encode({"a": [1, (2, 3)]}), {"a": [1, [2, 3]]})

    def test_rejections(self) -> None:
        with self.assertRaises(ValueError):
            encode(INT64_MAX + 1)
        with self.assertRaises(ValueError):
            encode(INT64_MIN - 1)
        self.assertEqual(encode(INT64_MIN), INT64_MIN)
        with self.assertRaises(ValueError):
            encode(dt.datetime(2026, 1, 1))
        with self.assertRaises(TypeError):
            encode({1: "x"})
        with self.assertRaises(ValueError):
            encode({"$double": 1})
        with self.assertRaises(TypeError):
            encode(object())
        with self.assertRaises(TypeError):
            encode(dt.date(2026, 1, 1))
        with self.assertRaises(TypeError):
            hearth.Increment("1")
        with self.assertRaises(TypeError):
            hearth.Increment(True)

    def test_timestamps(self) -> None:
        paris = dt.timezone(dt.timedelta(hours=1))
        local = dt.datetime(2026, 1, 1, 0, 0, 0, 5, tzinfo=paris)
        self.assertEqual(format_timestamp(local), "2025-12-31T23:00:00.000005Z")
        self.assertEqual(format_timestamp(dt.datetime(1, 1, 1, tzinfo=UTC)), "0001-01-01T00:00:00.000000Z")
        self.assertEqual(parse_timestamp("2026-01-01T00:00:00.1234567+01:00"),
                         dt.datetime(2025, 12, 31, 23, 0, 0, 123456, tzinfo=UTC))
        self.assertEqual(parse_timestamp("2026-01-01T00:00:00Z").tzinfo, UTC)
        with self.assertRaises(hearth.ProtocolError):
            parse_timestamp("yesterday")

    def test_decode(self) -> None:
        self.assertTrue(math.isnan(decode({"$double": "NaN"})))
        self.assertEqual(decode({"$double": 3}), 3.0)
        self.assertIsInstance(decode({"$double": 3}), float)
        self.assertEqual(decode({"m": {"$bytes": ""}}), {"m": b""})
        self.assertEqual(decode({"a": 1, "$b": 2}), {"a": 1, "$b": 2})
        with self.assertRaises(hearth.ProtocolError):
            decode({"$mystery": 1})


class FieldPathTest(unittest.TestCase):
    """Document.get reads field paths as the server does: dots split, backticks quote, backslash escapes."""

    def test_quoted_segments(self) -> None:
        from hearth.results import split_field_path
        doc = hearth.Document(path="c/d", id="d", data={"a.b": 1, "a": {"b": 2, "c.d": {"e": 3}}, "x`y": 4, "w\\z": 5})
        self.assertEqual(doc.get("a.b"), 2)
        self.assertEqual(doc.get("`a.b`"), 1)
        self.assertEqual(doc.get("a.`c.d`.e"), 3)
        self.assertEqual(doc.get("`x\\`y`"), 4)
        self.assertEqual(doc.get("`w\\\\z`"), 5)
        self.assertIsNone(doc.get("`a.b`.c"))
        self.assertEqual(doc.get("missing", "dflt"), "dflt")
        self.assertEqual(split_field_path("`~*/[]`.b_1"), ["~*/[]", "b_1"])
        for bad in ["", "a.", ".a", "a..b", "`a", "`a`b", "a`b`", "``", "`a\\", "a.``", "a/b", "x.[0]", "a~"]:
            with self.assertRaises(ValueError, msg=bad):
                doc.get(bad)


class RoundTripTest(HearthTestCase):
    async def roundtrip(self, value):
        path = f"{self.coll}/d"
        await self.db.set(path, {"v": value})
        doc = await self.db.get(path)
        return doc.data["v"]

    async def test_each_form_round_trips(self) -> None:
        paris = dt.timezone(dt.timedelta(hours=1))
        cases = [
            None, True, False, 0, 42, -7, INT64_MAX, INT64_MIN, 3.5, 1e300, 1.5e-7, "", "text", "ünïcødé ✓ 𝄞",
            [], [1, "a", None], {}, {"nested": {"deep": [1, {"x": 2}]}},
            dt.datetime(2026, 11, 29, 12, 0, 0, 123456, tzinfo=UTC),
            dt.datetime(2026, 1, 1, 0, 0, 0, 5, tzinfo=paris),
            dt.datetime(1, 1, 1, tzinfo=UTC), dt.datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
            b"", b"\x00\x01\x02\xff" * 10, hearth.Reference("customers/c1"),
            hearth.Reference("users/u1/user-feed/p9"), hearth.GeoPoint(48.85, 2.35), hearth.GeoPoint(-90, 180),
        ]
        for value in cases:
            with self.subTest(value=value):
                got = await self.roundtrip(value)
                self.assertEqual(got, value)
                self.assertIs(type(got), type(value))

    async def test_doubles_stay_doubles(self) -> None:
        for value in (3.0, 0.0, -1.0, 1e16, 2.0**63):
            with self.subTest(value=value):
                got = await self.roundtrip(value)
                self.assertIsInstance(got, float)
                self.assertEqual(got, value)
        self.assertEqual(math.copysign(1, await self.roundtrip(-0.0)), -1.0)
        self.assertTrue(math.isnan(await self.roundtrip(float("nan"))))
        self.assertEqual(await self.roundtrip(float("inf")), math.inf)
        self.assertEqual(await self.roundtrip(float("-inf")), -math.inf)
        self.assertIsInstance(await self.roundtrip(3), int)

    async def test_timestamps_come_back_utc(self) -> None:
        got = await self.roundtrip(dt.datetime(2026, 6, 1, 12, tzinfo=dt.timezone(dt.timedelta(hours=-5))))
        self.assertEqual(got.utcoffset(), dt.timedelta(0))
        self.assertEqual(got, dt.datetime(2026, 6, 1, 17, tzinfo=UTC))

    async def test_sentinels(self) -> None:
        path = f"{self.coll}/s"
        r = await self.db.set(path, {"at": hearth.SERVER_TIMESTAMP, "me": hearth.DOCUMENT_ID, "gone": 1,
                                     "tags": ["a", "b"], "hi": 5, "lo": 5})
        self.assertEqual(r.transform_results, [r.update_time])
        doc = await self.db.get(path)
        self.assertEqual(doc.data["at"], doc.update_time)
        self.assertEqual(doc.data["me"], "s")
        await self.db.update(path, {"gone": hearth.DELETE_FIELD, "tags": hearth.ArrayUnion(["b", "c"]),
                                    "hi": hearth.Maximum(9), "lo": hearth.Minimum(2.5)})
        await self.db.update(path, {"tags": hearth.ArrayRemove(["a"])})
        doc = await self.db.get(path)
        self.assertNotIn("gone", doc.data)
        self.assertEqual(doc.data["tags"], ["b", "c"])
        self.assertEqual(doc.data["hi"], 9)
        self.assertEqual(doc.data["lo"], 2.5)
        r = await self.db.add(self.coll, {"id": hearth.DOCUMENT_ID})
        self.assertEqual(len(r.id), 20)
        self.assertEqual((await self.db.get(r.path)).data["id"], r.id)

    async def test_bad_values_rejected_before_sending(self) -> None:
        with self.assertRaises(ValueError):
            await self.db.set(f"{self.coll}/x", {"n": 2**63})
        with self.assertRaises(ValueError):
            await self.db.set(f"{self.coll}/x", {"t": dt.datetime(2026, 1, 1)})
        self.assertIsNone(await self.db.get(f"{self.coll}/x"))


if __name__ == "__main__":
    unittest.main()
