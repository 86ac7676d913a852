import Foundation
import Testing
@testable import HearthClient

/// The diff a listener computes when the server resets it: applied one change at a time it turns the old
/// state into the new one, and it reports only real changes.
@Suite struct SnapshotDiffTests {
    static func doc(_ id: Int, version: Int) -> WireDocument {
        WireDocument(.object([
            "path": .string("c/d\(id)"), "id": .string("d\(id)"), "data": .object(["v": .int(Int64(version))]),
            "createTime": .string("2026-01-01T00:00:00Z"), "updateTime": .string("2026-01-01T00:00:\(String(format: "%02d", version % 60))Z"),
        ]))!
    }

    static func apply(_ records: [SnapshotDiff.Record], to docs: [WireDocument]) -> [WireDocument] {
        var out = docs
        for r in records {
            if r.oldIndex >= 0 { out.remove(at: r.oldIndex) }
            if r.newIndex >= 0 { out.insert(r.document, at: r.newIndex) }
        }
        return out
    }

    /// Random old and new states sorted by (version, id), as a query ordered by a field would be.
    @Test func randomDiffsApplyExactly() {
        var rng = SystemRandomNumberGenerator()
        for round in 0..<2000 {
            let n = Int.random(in: 0..<12, using: &rng)
            var versions: [Int: Int] = [:]
            for id in 0..<n where Bool.random(using: &rng) { versions[id] = Int.random(in: 0..<6, using: &rng) }
            var next = versions
            for id in 0..<n {
                switch Int.random(in: 0..<5, using: &rng) {
                case 0: next[id] = nil
                case 1: next[id] = Int.random(in: 0..<6, using: &rng)
                case 2 where versions[id] == nil: next[id] = Int.random(in: 0..<6, using: &rng)
                default: break
                }
            }
            let sorted = { (m: [Int: Int]) in m.sorted { ($0.value, $0.key) < ($1.value, $1.key) }.map { Self.doc($0.key, version: $0.value) } }
            let old = sorted(versions), new = sorted(next)
            let records = SnapshotDiff.diff(old: old, new: new)
            #expect(Self.apply(records, to: old) == new, "round \(round)")
            let types = records.map(\.type)
            #expect(types == types.sorted { order($0) < order($1) }, "removed, then added, then modified")
            for r in records where r.type == .modified {
                #expect(old.first { $0.path == r.document.path } != r.document, "modified only when the content changed")
            }
            let unchanged = old.filter { d in new.contains(d) }
            #expect(!records.contains { r in unchanged.contains { $0.path == r.document.path } }, "unchanged documents are not reported")
        }
    }

    func order(_ t: DocumentChangeType) -> Int {
        switch t {
        case .removed: return 0
        case .added: return 1
        case .modified: return 2
        }
    }

    @Test func serverChangesAreValidatedOneAtATime() {
        let a = Self.doc(1, version: 1), b = Self.doc(2, version: 2)
        func change(_ t: String, _ d: WireDocument, _ old: Int, _ new: Int) -> JSON {
            .object(["type": .string(t), "doc": .object(["path": .string(d.path), "id": .string(d.id), "data": .object(d.data),
                                                         "updateTime": .string(d.updateTime!.rfc3339)]),
                     "oldIndex": .int(Int64(old)), "newIndex": .int(Int64(new))])
        }
        var docs = [a, b]
        var records: [SnapshotDiff.Record] = []
        #expect(SnapshotDiff.apply([change("modified", b, 1, 0)], to: &docs, records: &records))
        #expect(docs.map(\.path) == ["c/d2", "c/d1"])
        #expect(!SnapshotDiff.apply([change("removed", a, 0, -1)], to: &docs, records: &records), "a is not at index 0")
        docs = [a]
        #expect(!SnapshotDiff.apply([change("added", b, -1, 2)], to: &docs, records: &records), "index past the end")
    }
}
