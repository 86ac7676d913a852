import HearthModel
import Testing

private let id1500 = String(repeating: "x", count: 1500)
private let id1501 = String(repeating: "x", count: 1501)

@Suite("ResourcePath, DocumentPath, CollectionPath")
struct ResourcePathTests {
    /// The in-place parse and the reference parse agree on every text: the same segments, or both refuse
    /// with the same message. Random texts over an alphabet of separators, dots, underscores, a zero byte and
    /// multi-byte characters, plus the edges (reserved IDs, the longest ID, the deepest path).
    @Test func theInPlaceParseAgreesWithTheReference() {
        let alphabet: [String] = ["/", "/", ".", "_", "a", "Z", "0", "\u{0}", "\u{E9}", "\u{301}", "\u{1F600}", "__"]
        var rng = SystemRandomNumberGenerator()
        var texts = [".", "..", "...", "a/.", "a/../b", "__x__", "a/__x__", "___", "____", "__/a", "a//b", "/a", "a/",
                     String(repeating: "x", count: ResourcePath.maxIDBytes), String(repeating: "x", count: ResourcePath.maxIDBytes + 1),
                     Array(repeating: "s", count: ResourcePath.maxSegments).joined(separator: "/"),
                     Array(repeating: "s", count: ResourcePath.maxSegments + 1).joined(separator: "/")]
        for _ in 0..<3000 {
            texts.append((0..<Int.random(in: 1...12, using: &rng)).map { _ in alphabet.randomElement(using: &rng)! }.joined())
        }
        for text in texts {
            let fast = Result { () throws(HearthError) in try ResourcePath.parse(text) }
            let reference = Result { () throws(HearthError) in try ResourcePath.parseReporting(text) }
            switch (fast, reference) {
            case (.success(let a), .success(let b)): #expect(a.segments == b.segments, "\(showScalars(text))")
            case (.failure(let a), .failure(let b)): #expect(a.message == b.message, "\(showScalars(text))")
            default: Issue.record("\(showScalars(text)): \(fast) against \(reference)")
            }
        }
    }

    @Test("valid paths parse into their segments", arguments: [
        ("a", ["a"]),
        ("a/b", ["a", "b"]),
        ("a/b/c", ["a", "b", "c"]),
        ("users/alice/posts/p1", ["users", "alice", "posts", "p1"]),
        ("a b/c d", ["a b", "c d"]),
        ("é/😀", ["é", "😀"]),
        ("c/...", ["c", "..."]),
        ("c/.x", ["c", ".x"]),
        ("c/x.", ["c", "x."]),
        ("_/__", ["_", "__"]),
        ("c/___", ["c", "___"]),            // too short to be __...__
        ("c/__x", ["c", "__x"]),
        ("c/x__", ["c", "x__"]),
        ("c/_x_", ["c", "_x_"]),
        ("c/\\", ["c", "\\"]),
        ("c/\u{0}", ["c", "\u{0}"]),
        ("c/" + id1500, ["c", id1500]),
        ("c/" + String(repeating: "é", count: 750), ["c", String(repeating: "é", count: 750)]),   // 1500 bytes
        ("c/" + String(repeating: "€", count: 500), ["c", String(repeating: "€", count: 500)]),   // 1500 bytes
        // A combining mark right after a slash still starts a new segment (Firestore splits on the byte '/').
        ("c/\u{301}x", ["c", "\u{301}x"]),
        ("c\u{301}/x", ["c\u{301}", "x"]),
        ("c/\u{200D}", ["c", "\u{200D}"]),
    ] as [(String, [String])])
    func valid(text: String, segments: [String]) throws {
        let p = try ResourcePath.parse(text)
        #expect(p.segments.map(showScalars) == segments.map(showScalars))
        #expect(p.count == segments.count)
        #expect(UTF8Order.equal(p.description, text))
        #expect(UTF8Order.equal(p.last, segments.last!))
    }

    @Test("invalid paths throw INVALID_ARGUMENT naming the path", arguments: [
        "/a", "a/", "/a/b", "a/b/", "a//b", "/", "//", "a/b//c/d",
        ".", "..", "a/.", "a/..", "./a", "../a", "a/./b", "a/../b",
        "__x__", "a/__x__", "____", "__name__/x", "a/__id123__", "__é__/x",
        "c/" + id1501, "c/" + String(repeating: "é", count: 751),
    ])
    func invalid(text: String) {
        do {
            let p = try ResourcePath.parse(text)
            Issue.record("\(showScalars(text)) parsed as \(p.segments.map(showScalars))")
        } catch {
            #expect(error.code == .invalidArgument)
            #expect(error.message.contains(text), "message \"\(error.message)\" should name the path")
        }
    }

    @Test("the empty path is rejected")
    func empty() {
        #expect(throws: HearthError.self) { try ResourcePath.parse("") }
        do { _ = try ResourcePath.parse("") } catch { #expect(error.code == .invalidArgument) }
        do { _ = try DocumentPath(parsing: "") } catch {
            #expect(error.code == .invalidArgument)
            #expect(error.message.contains("document path"))
        }
        do { _ = try CollectionPath(parsing: "") } catch {
            #expect(error.code == .invalidArgument)
            #expect(error.message.contains("collection path"))
        }
    }

    @Test("depth: 200 segments accepted, 201 rejected")
    func depth() throws {
        let ok = Array(repeating: "s", count: 200).joined(separator: "/")
        #expect(try ResourcePath.parse(ok).count == 200)
        #expect(try DocumentPath(parsing: ok).path.count == 200)
        let tooDeep = Array(repeating: "s", count: 201).joined(separator: "/")
        #expect(throws: HearthError.self) { try ResourcePath.parse(tooDeep) }
        #expect(ResourcePath.maxSegments == 200)
        #expect(ResourcePath.maxIDBytes == 1500)
    }

    @Test("problem(withID:)", arguments: [
        ("a", false), ("", true), (".", true), ("..", true), ("...", false), ("a/b", true),
        ("__x__", true), ("____", true), ("___", false), ("__", false), (id1500, false), (id1501, true),
    ] as [(String, Bool)])
    func problemWithID(id: String, bad: Bool) {
        #expect((ResourcePath.problem(withID: id) != nil) == bad)
    }

    @Test("document paths need an even, non-zero number of segments", arguments: [
        ("a/b", true), ("a/b/c/d", true), ("a", false), ("a/b/c", false), ("a/b/c/d/e", false),
    ] as [(String, Bool)])
    func documentPath(text: String, ok: Bool) {
        do {
            let d = try DocumentPath(parsing: text)
            #expect(ok, "\(text) accepted as a document path")
            #expect(d.description == text)
        } catch {
            #expect(!ok, "\(text) rejected: \(error)")
            #expect(error.code == .invalidArgument)
            #expect(error.message.contains(text))
        }
    }

    @Test("collection paths need an odd number of segments", arguments: [
        ("a", true), ("a/b/c", true), ("a/b/c/d/e", true), ("a/b", false), ("a/b/c/d", false),
    ] as [(String, Bool)])
    func collectionPath(text: String, ok: Bool) {
        do {
            let c = try CollectionPath(parsing: text)
            #expect(ok, "\(text) accepted as a collection path")
            #expect(c.description == text)
        } catch {
            #expect(!ok, "\(text) rejected: \(error)")
            #expect(error.code == .invalidArgument)
            #expect(error.message.contains(text))
        }
    }

    @Test("DocumentPath / CollectionPath parse errors name the path and the kind")
    func kindInMessages() {
        do { _ = try DocumentPath(parsing: "a//b") } catch {
            #expect(error.message.contains("document path"))
            #expect(error.message.contains("a//b"))
        }
        do { _ = try CollectionPath(parsing: "a/..") } catch {
            #expect(error.message.contains("collection path"))
            #expect(error.message.contains("a/.."))
        }
        #expect(throws: HearthError.self) { try DocumentPath(ResourcePath(segments: [])) }
        #expect(throws: HearthError.self) { try CollectionPath(ResourcePath(segments: [])) }
    }

    @Test("document and collection navigation")
    func navigation() throws {
        let d = try DocumentPath(parsing: "users/alice/posts/p1")
        #expect(d.id == "p1")
        #expect(d.collectionID == "posts")
        #expect(d.collection.description == "users/alice/posts")
        #expect(d.collection.parent == (try DocumentPath(parsing: "users/alice")))
        #expect(d.collection.parent?.collection.parent == nil)
        let c = try CollectionPath(parsing: "users")
        #expect(c.id == "users")
        #expect(c.parent == nil)
        #expect(try c.document("bob") == (try DocumentPath(parsing: "users/bob")))
        for bad in ["", ".", "..", "a/b", "__x__", id1501] {
            #expect(throws: HearthError.self, "document(\(bad.prefix(10)))") { try c.document(bad) }
        }
        let p = try ResourcePath.parse("a/b")
        #expect(p.appending("c").description == "a/b/c")
        #expect(p.parent.description == "a")
    }

    static let orderedPaths = [
        "a", "a/b", "a/b/c", "a/b/c/d", "a/b0", "a/b0/x", "a-c", "a-c/d", "a.b/c", "aa", "b/a", "e/x",
        "e\u{301}/x", "é", "é/x", "\u{FF5F}/x", "😀/x",
    ]

    @Test("segment-wise UTF-8 order", arguments: orderedPaths.indices)
    func ordering(i: Int) throws {
        let a = try ResourcePath.parse(Self.orderedPaths[i])
        for (j, text) in Self.orderedPaths.enumerated() {
            let b = try ResourcePath.parse(text)
            let expected = i < j ? -1 : (i > j ? 1 : 0)
            #expect(sign(ResourcePath.compare(a, b)) == expected, "\(a) vs \(b)")
            #expect((a < b) == (i < j))
            #expect((a == b) == (i == j))
        }
    }

    @Test("document paths order like their resource paths")
    func documentOrder() throws {
        let a = try DocumentPath(parsing: "a/b"), b = try DocumentPath(parsing: "a-c/d")
        #expect(a < b, "a/b sorts before a-c/d segment-wise even though \"a-c/d\" < \"a/b\" as strings")
        #expect("a-c/d" < "a/b")
    }

    @Test("equality and hashing are by bytes, not canonical equivalence")
    func equality() throws {
        let pre = try DocumentPath(parsing: "é/x"), dec = try DocumentPath(parsing: "e\u{301}/x")
        #expect(pre != dec)
        #expect(Set([pre, dec, try DocumentPath(parsing: "é/x")]).count == 2)
        let x = ResourcePath(segments: ["ab", "c"]), y = ResourcePath(segments: ["a", "bc"])
        #expect(x != y)
        #expect(x.hashValue != y.hashValue, "segment boundaries should be part of the hash")
    }

    @Test("isPrefix is strict", arguments: [
        ("a", "a/b", true), ("a/b", "a/b/c", true), ("a/b", "a/b", false), ("a/b/c", "a/b", false),
        ("a", "ab/c", false), ("a/b", "a/bc", false), ("é", "e\u{301}/x", false),
    ] as [(String, String, Bool)])
    func isPrefix(a: String, b: String, expected: Bool) throws {
        #expect(try ResourcePath.parse(a).isPrefix(of: ResourcePath.parse(b)) == expected)
    }

    /// `description` joins the segments in one allocation: it must give exactly the standard library's join, for
    /// every kind of segment (empty, as a damaged row can hold; small and large, ASCII, multi-byte, NUL, combining
    /// marks, substrings), and
    /// `collectionDescription` exactly `collection.description`.
    @Test func descriptionIsTheSegmentsJoinedBySlashes() throws {
        let pieces = ["", "a", "users", "é", "😀", "\u{0}", "\u{301}x", id1500, String(repeating: "€", count: 500),
                      "exactly15bytes!", "sixteen-bytes-ok", "x y z"]
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<500 {
            let count = Int.random(in: 1...9, using: &rng)
            var segments: [String] = []
            for _ in 0..<count {
                let s = pieces.randomElement(using: &rng)!
                // A substring's copy, so strings that share no storage with the table are joined too.
                segments.append(Bool.random(using: &rng) ? s : String(decoding: Array(s.utf8), as: UTF8.self))
            }
            let path = ResourcePath(segments: segments)
            // Equal paths hash equally however their strings are stored; moving a segment boundary changes both.
            let copy = ResourcePath(segments: segments.map { String(decoding: Array($0.utf8), as: UTF8.self) })
            #expect(path == copy && path.hashValue == copy.hashValue)
            if count > 1, !segments[0].isEmpty {
                var moved = segments
                moved[1] = String(moved[0].last!) + moved[1]
                moved[0] = String(moved[0].dropLast())
                let other = ResourcePath(segments: moved)
                #expect(path != other)
                #expect(path.hashValue != other.hashValue)   // a 64-bit hash: a collision here would be a 2^-64 event
            }
            #expect(path.description == segments.joined(separator: "/"))
            #expect(Array(path.description.utf8) == Array(segments.joined(separator: "/").utf8))
            if count % 2 == 0, !segments.contains("") {
                let doc = try DocumentPath(path)
                #expect(doc.collectionDescription == doc.collection.description)
            }
        }
    }

    /// Equal paths of 511, 512 and 513 bytes in all (segments and a byte after each) hash equally on either side
    /// of the one-call limit, built from strings that share no storage.
    @Test func equalPathsHashEquallyAroundTheOneCallLimit() {
        for total in 509...515 {
            let idBytes = total - 4 - 4   // "c/x" + id: "c", "x", "c", id, each followed by one byte
            let id = String(repeating: "é", count: idBytes / 2) + (idBytes % 2 == 1 ? "a" : "")
            let a = ResourcePath(segments: ["c", "x", "c", id])
            let b = ResourcePath(segments: ["c", "x", "c", String(decoding: Array(id.utf8), as: UTF8.self)])
            #expect(a == b && a.hashValue == b.hashValue, "\(total) bytes")
        }
    }
}

