import HearthModel
import Testing

@Suite("Storage size and limits")
struct StorageSizeTests {
    @Test("value sizes follow Firestore's storage-size rules", arguments: [
        (Value.null, 1),
        (true, 1),
        (false, 1),
        (.int(0), 8),
        (.int(.max), 8),
        (.double(1.5), 8),
        (ts(0), 8),
        ("", 1),
        ("abc", 4),
        ("é", 3),                     // 2 UTF-8 bytes + 1
        ("e\u{301}", 4),              // 3 UTF-8 bytes + 1
        ("😀", 5),
        ("Learn Cloud Firestore", 22),
        (.bytes([]), 0),
        (.bytes([1, 2, 3]), 3),
        (geo(1, 2), 16),
        (ref("users/jeff/tasks/my_task_id"), 44),   // 6 + 5 + 6 + 11 + 16
        (ref("a/b"), 20),
        ([], 0),
        ([1, "a"], 10),
        ([[1], [nil, true]], 10),
        ([:], 0),
        (["a": 1], 10),                // "a" 2 + 8
        (["a": ["bc": "d"]], 7),       // 2 + (3 + 2)
        (["é": nil], 4),
    ] as [(Value, Int)])
    func valueSizes(v: Value, expected: Int) {
        #expect(v.storageSize == expected, "storageSize(\(show(v))) = \(v.storageSize), expected \(expected)")
    }

    @Test("the Firestore documentation's example task document is 147 bytes")
    func firestoreDocExample() throws {
        let path = try DocumentPath(parsing: "users/jeff/tasks/my_task_id")
        let fields = MapValue([
            .init(key: "type", value: "Personal"),
            .init(key: "done", value: false),
            .init(key: "priority", value: 1),
            .init(key: "description", value: "Learn Cloud Firestore"),
        ])
        #expect(fields.storageSize == 71)   // names 5+5+9+12, values 9+1+8+22
        #expect(Document.storageSize(path: path, fields: fields) == 147)
    }

    @Test("document size = name + fields + 32", arguments: [
        ("users/jeff", 59),
        ("a/b", 52),
        ("é/x", 53),
    ] as [(String, Int)])
    func emptyDocuments(path: String, expected: Int) throws {
        #expect(Document.storageSize(path: try DocumentPath(parsing: path), fields: MapValue()) == expected)
    }

    @Test("limits")
    func limits() {
        #expect(Limits.maxDocumentBytes == 1_048_576)
        #expect(Limits.maxDepth == 20)
        #expect(Limits.maxWritesPerCommit == 10_000)
    }
}
