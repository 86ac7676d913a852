import HearthEngine
import HearthModel
import HearthStorage
import Synchronization

/// A codec for engine tests that keeps fields in a table and stores their index: the engine must never look
/// inside encoded bytes.
final class TableCodec: DocumentCodec {
    private let table = Mutex<[MapValue]>([])

    func encode(_ fields: MapValue) -> [UInt8] {
        table.withLock { t in
            t.append(fields)
            var n = UInt64(t.count - 1)
            return withUnsafeBytes(of: &n) { Array($0) }
        }
    }

    /// How many times `decode` ran.
    var decodes: Int { decodeCount.withLock { $0 } }
    private let decodeCount = Mutex<Int>(0)

    func decode(_ data: [UInt8]) throws(HearthError) -> MapValue {
        decodeCount.withLock { $0 += 1 }
        var n: UInt64 = 0
        withUnsafeMutableBytes(of: &n) { $0.copyBytes(from: data) }
        return table.withLock { $0[Int(n)] }
    }
}

/// An engine over a MemoryStore with a manual clock, and helpers to commit and make durable synchronously.
final class EngineHarness {
    let store: any DocumentStore
    let codec: TableCodec
    var now: Int64 = 1_800_000_000_000_000
    var engine: Engine!
    var published: [CommitRecord] = []

    /// An engine over `store` (a new MemoryStore by default); `codec` and `indexCatalogCodec` as the engine takes
    /// them (a second harness on the same store shares the first one's `codec`).
    init(cacheBytes: Int = Engine.defaultCacheBytes, store: any DocumentStore = MemoryStore(), codec: TableCodec = TableCodec(),
         indexCatalogCodec: (any IndexCatalogCodec)? = nil) throws {
        self.store = store
        self.codec = codec
        engine = try Engine(store: store, codec: codec, indexCatalogCodec: indexCatalogCodec, cacheBytes: cacheBytes,
                            clock: { [unowned self] in self.now })
        engine.onCommitted = { [unowned self] in self.published += $0 }
    }

    /// An engine following another over `store`, as a cluster node does: the store may be ahead of what it
    /// published, and it refuses commits of its own.
    static func follower(over store: MemoryStore, codec: TableCodec,
                         indexCatalogCodec: (any IndexCatalogCodec)? = nil) throws -> EngineHarness {
        let h = try EngineHarness(store: store, codec: codec, indexCatalogCodec: indexCatalogCodec)
        h.engine.storeMayLead = true
        h.engine.commitRefusal = HearthError(.unavailable, "a follower")
        return h
    }

    /// Commits and flushes; returns the outcome or the error (immediate or from durability).
    func commit(_ writes: [Write]) -> Result<CommitOutcome, HearthError> {
        var result: Result<CommitOutcome, HearthError>?
        do {
            try engine.commit(writes) { result = $0 }
        } catch {
            return .failure(error)
        }
        flush()
        return result!
    }

    func flush() {
        while let batch = engine.takeBatch() {
            engine.finish(batch, error: Engine.makeDurable(batch, in: store))
        }
    }

    func fields(_ path: String) throws -> MapValue? {
        guard let d = try engine.get(try DocumentPath(parsing: path)) else { return nil }
        return try engine.fields(of: d)
    }

    func doc(_ path: String) throws -> StoredDocument? {
        try engine.get(try DocumentPath(parsing: path))
    }
}

func path(_ s: String) -> DocumentPath { try! DocumentPath(parsing: s) }
func fp(_ s: String) -> FieldPath { try! FieldPath.parse(s) }

func set(_ p: String, _ fields: MapValue, transforms: [FieldTransform] = [], precondition: Precondition = .none) -> Write {
    Write(kind: .set, path: path(p), operation: .update(fields: fields, mask: nil), transforms: transforms, precondition: precondition)
}

func merge(_ p: String, _ fields: MapValue, mask: [String], transforms: [FieldTransform] = []) -> Write {
    Write(kind: .set, path: path(p), operation: .update(fields: fields, mask: mask.map(fp)), transforms: transforms)
}

func update(_ p: String, _ fields: MapValue, mask: [String], transforms: [FieldTransform] = [], precondition: Precondition = .exists(true)) -> Write {
    Write(kind: .update, path: path(p), operation: .update(fields: fields, mask: mask.map(fp)), transforms: transforms, precondition: precondition)
}

func create(_ p: String, _ fields: MapValue) -> Write {
    Write(kind: .create, path: path(p), operation: .update(fields: fields, mask: nil), precondition: .exists(false))
}

func delete(_ p: String, precondition: Precondition = .none) -> Write {
    Write(kind: .delete, path: path(p), operation: .delete, precondition: precondition)
}

func m(_ pairs: KeyValuePairs<String, Value>) -> MapValue {
    MapValue(pairs.map { MapValue.Field(key: $0.key, value: $0.value) })
}
