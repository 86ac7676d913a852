"""Offline tests of docChanges application and diffing (hearth.changes)."""

import datetime as dt
import random
import unittest

import hearth
from hearth.changes import DocumentChange, apply_changes, diff

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)


def doc(name: str, version: int = 0) -> hearth.Document:
    return hearth.Document(f"c/{name}", name, {"v": version}, T0, T0 + dt.timedelta(seconds=version))


class ApplyTest(unittest.TestCase):
    def test_wire_changes_apply_in_order(self) -> None:
        old = [doc("a"), doc("b"), doc("c")]
        changes = [DocumentChange.from_wire(w) for w in [
            {"type": "removed", "doc": {"path": "c/a", "id": "a", "data": {}}, "oldIndex": 0, "newIndex": -1},
            {"type": "added", "doc": {"path": "c/d", "id": "d", "data": {}}, "newIndex": 2},
            {"type": "modified", "doc": {"path": "c/b", "id": "b", "data": {"v": 1}}, "oldIndex": 0, "newIndex": 2},
        ]]
        self.assertEqual([d.id for d in apply_changes(old, changes)], ["c", "d", "b"])
        self.assertEqual([d.id for d in old], ["a", "b", "c"])  # not mutated

    def test_inconsistent_changes_raise(self) -> None:
        old = [doc("a"), doc("b")]
        with self.assertRaises(hearth.ProtocolError):
            apply_changes(old, [DocumentChange("removed", doc("b"), 0)])
        with self.assertRaises(hearth.ProtocolError):
            apply_changes(old, [DocumentChange("added", doc("c"), -1, 5)])
        with self.assertRaises(hearth.ProtocolError):
            apply_changes(old, [DocumentChange("added", doc("a"), -1, 0)])


class DiffTest(unittest.TestCase):
    def check(self, old, new) -> list:
        changes = diff(old, new)
        self.assertEqual([d.path for d in apply_changes(old, changes)], [d.path for d in new])
        self.assertEqual(apply_changes(old, changes), new)
        kinds = [c.type for c in changes]
        self.assertEqual(kinds, sorted(kinds, key=["removed", "added", "modified"].index))
        return changes

    def test_simple(self) -> None:
        a, b, c = doc("a"), doc("b"), doc("c")
        self.assertEqual(self.check([a, b], [a, b]), [])
        ch = self.check([a, b, c], [c, doc("b", 1), doc("d")])
        self.assertEqual([(x.type, x.doc.id) for x in ch], [("removed", "a"), ("added", "d"), ("modified", "b")])
        self.assertEqual(self.check([], [a, b])[1].new_index, 1)

    def test_random_minimal(self) -> None:
        # Unchanged documents keep their relative order (a query order is deterministic); modified and
        # added ones land anywhere. The diff then holds exactly one change per differing document.
        rng = random.Random(7)
        names = [f"d{i:02d}" for i in range(14)]
        for _ in range(3000):
            old_names = rng.sample(names, rng.randint(0, 9))
            old = [doc(n) for n in old_names]
            kept = [n for n in old_names if rng.random() < 0.75]
            modified = {n for n in kept if rng.random() < 0.4}
            added = rng.sample([n for n in names if n not in old_names], rng.randint(0, 3))
            new_names = [n for n in kept if n not in modified]
            for n in list(modified) + added:
                new_names.insert(rng.randint(0, len(new_names)), n)
            new = [doc(n, 1 if n in modified else 0) for n in new_names]
            changes = self.check(old, new)
            self.assertEqual(len(changes), len(old_names) - len(kept) + len(added) + len(modified))

    def test_random_any_order(self) -> None:
        rng = random.Random(11)
        names = [f"d{i:02d}" for i in range(10)]
        for _ in range(1000):
            old = [doc(n) for n in rng.sample(names, rng.randint(0, 8))]
            new = [doc(n, rng.randint(0, 1)) for n in rng.sample(names, rng.randint(0, 8))]
            self.check(old, new)

if __name__ == "__main__":
    unittest.main()
