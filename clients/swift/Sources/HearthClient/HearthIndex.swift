import Foundation

/// A declared composite index (the protocol's `index` op; docs/queries.md). Firestore declares indexes in
/// the console or `firestore.indexes.json`; Hearth declares them at run time, from an admin connection
/// when security rules are enforced.
public struct HearthIndex: Sendable, Equatable {
    /// Which collections the index covers: every collection with the ID, per parent, or all of them at once
    /// (collection-group queries).
    public enum Scope: String, Sendable { case collection, collectionGroup }

    /// How a field is indexed.
    public enum Mode: String, Sendable {
        case ascending = "asc"
        case descending = "desc"
        case arrayContains = "array-contains"
    }

    /// One indexed field: a dotted field path and its mode.
    public struct Field: Sendable, Equatable {
        public var path: String
        public var mode: Mode
        public init(_ path: String, _ mode: Mode = .ascending) {
            self.path = path
            self.mode = mode
        }
    }

    public let id: Int64
    public let collection: String
    public let scope: Scope
    public let fields: [Field]
    /// `building` while the backfill runs (queries needing it fail with `.failedPrecondition`), then `ready`.
    public let state: String

    public var isReady: Bool { state == "ready" }

    init(_ json: JSON) throws {
        guard let o = json.objectValue, let id = o["id"]?.intValue, let collection = o["collection"]?.stringValue,
              let state = o["state"]?.stringValue, let fields = o["fields"]?.arrayValue else {
            throw HearthError.internalError("an index description lacks id, collection, state or fields")
        }
        self.id = id
        self.collection = collection
        self.state = state
        scope = Scope(rawValue: o["scope"]?.stringValue ?? "collection") ?? .collection
        self.fields = try fields.map { f in
            guard let pair = f.arrayValue, let path = pair.first?.stringValue,
                  let mode = Mode(rawValue: pair.count > 1 ? pair[1].stringValue ?? "" : "asc") else {
                throw HearthError.internalError("an index field is not [path, mode]")
            }
            return Field(path, mode)
        }
    }
}

extension Hearth {
    /// Declares a composite index and returns it (`state` `building` at first); declaring one that exists
    /// returns it as it is, so an app may declare its indexes at every start. Throws `.permissionDenied`
    /// without the admin key while rules are enforced. `waitForIndex` waits until queries can use it.
    @discardableResult
    public func createIndex(collection: String, fields: [HearthIndex.Field],
                            scope: HearthIndex.Scope = .collection) async throws -> HearthIndex {
        let request: [String: JSON] = [
            "op": .string("index"), "action": .string("create"), "collection": .string(collection),
            "scope": .string(scope.rawValue),
            "fields": .array(fields.map { .array([.string($0.path), .string($0.mode.rawValue)]) }),
        ]
        let obj = try await connection.call(request)
        guard let index = obj["index"] else { throw HearthError.internalError("index create answered without the index") }
        return try HearthIndex(index)
    }

    /// Every declared index, with its state.
    public func listIndexes() async throws -> [HearthIndex] {
        let obj = try await connection.call(["op": .string("index"), "action": .string("list")])
        return try (obj["indexes"]?.arrayValue ?? []).map(HearthIndex.init)
    }

    /// Waits until the index with this ID is `ready` (asking `listIndexes` every 20 ms, backing off to
    /// 250 ms) and returns it. Throws `.notFound` if it is not declared (or was dropped), `.unavailable`
    /// after `timeout` seconds.
    @discardableResult
    public func waitForIndex(id: Int64, timeout: TimeInterval = 60) async throws -> HearthIndex {
        let deadline = Date().addingTimeInterval(timeout)
        var pause = 0.02
        while true {
            guard let index = try await listIndexes().first(where: { $0.id == id }) else {
                throw HearthError(.notFound, "no index \(id) is declared")
            }
            if index.isReady { return index }
            if Date() >= deadline { throw HearthError.unavailable("index \(id) is still \(index.state) after \(timeout) s") }
            try await Task.sleep(nanoseconds: UInt64(pause * 1e9))
            pause = min(pause * 2, 0.25)
        }
    }

    /// Drops the index: queries stop using it at once; its entries are removed in the background.
    public func dropIndex(id: Int64) async throws {
        _ = try await connection.call(["op": .string("index"), "action": .string("drop"), "indexId": .int(id)])
    }
}
