import Foundation
import Testing
import HearthClient

/// `setData(from:)`, `addDocument(from:)` and `data(as:)` with Hearth's value types.
@Suite struct CodableTests {
    let env: TestEnv
    init() throws { env = try TestEnv() }

    struct Address: Codable, Equatable {
        var city: String
        var zip: String?
    }

    struct Customer: Codable, Equatable {
        @DocumentID var id: String?
        var fullName: String
        var since: Date
        var lastSeen: Timestamp
        var visits: Int
        var balance: Double
        var tags: [String]
        var address: Address
        var avatar: Data?
        var location: GeoPoint?
        var nickname: String?
        @ServerTimestamp var updatedAt: Date?
    }

    @Test func modelsRoundTripWithDatesAndTimestamps() async throws {
        let since = Date(timeIntervalSince1970: 1_795_953_600.25)
        let customer = Customer(id: "ignored", fullName: "Ada Lovelace", since: since,
                                lastSeen: Timestamp(seconds: 1_795_953_700, nanoseconds: 5_000),
                                visits: 3, balance: 10, tags: ["vip"], address: Address(city: "London", zip: nil),
                                avatar: Data([1, 2]), location: GeoPoint(latitude: 51.5, longitude: -0.12),
                                nickname: nil, updatedAt: nil)
        let ref = env.db.collection("customers").document("c1")
        try await ref.setData(from: customer)

        let raw = try #require(try await ref.getDocument().data())
        #expect(raw["id"] == nil, "@DocumentID is not stored")
        #expect(raw["nickname"] == nil, "nil optionals are omitted")
        #expect(raw["since"] is Timestamp)
        #expect(raw["balance"] as? Double == 10, "a Double property stays a double on the wire")
        #expect(raw["updatedAt"] is Timestamp, "a nil @ServerTimestamp becomes the commit time")

        let back = try await ref.getDocument(as: Customer.self)
        #expect(back.id == "c1")
        #expect(abs(back.since.timeIntervalSince(since)) < 1e-6)
        #expect(back.lastSeen == customer.lastSeen)
        #expect(back.fullName == customer.fullName && back.visits == 3 && back.balance == 10 && back.tags == ["vip"])
        #expect(back.address == customer.address && back.avatar == customer.avatar && back.location == customer.location)
        #expect(back.nickname == nil)
        #expect(back.updatedAt != nil)
    }

    @Test func addDocumentFromAModelAndQueryDecoding() async throws {
        struct Note: Codable { @DocumentID var id: String?; var text: String; var rank: Int }
        let notes = env.db.collection("notes")
        let a = try await notes.addDocument(from: Note(text: "a", rank: 1))
        try await notes.addDocument(from: Note(text: "b", rank: 2))
        let decoded = try await notes.order(by: "rank").getDocuments(as: Note.self)
        #expect(decoded.map(\.text) == ["a", "b"])
        #expect(decoded[0].id == a.documentID)
    }

    /// A model whose CodingKey names a field the document does not have fails with a DecodingError that
    /// names the key.
    @Test func mistypedCodingKeyFailsNamingTheKey() async throws {
        struct Misnamed: Codable {
            var fullName: String
            enum CodingKeys: String, CodingKey { case fullName = "full_name" }
        }
        let ref = env.db.document("customers/c2")
        try await ref.setData(["fullName": "Grace Hopper"])
        do {
            _ = try await ref.getDocument(as: Misnamed.self)
            Issue.record("decoding succeeded")
        } catch let DecodingError.keyNotFound(key, context) {
            #expect(key.stringValue == "full_name")
            #expect(context.debugDescription.contains("full_name"))
            #expect(context.debugDescription.contains("fullName"), "the message lists the fields present")
        }
    }

    @Test func typeMismatchNamesTheFieldPath() async throws {
        struct Inner: Codable { var count: Int }
        struct Outer: Codable { var inner: Inner }
        let ref = env.db.document("mismatch/m")
        try await ref.setData(["inner": ["count": "three"]])
        do {
            _ = try await ref.getDocument(as: Outer.self)
            Issue.record("decoding succeeded")
        } catch let DecodingError.typeMismatch(_, context) {
            #expect(context.codingPath.map(\.stringValue) == ["inner", "count"])
            #expect(context.debugDescription.contains("inner.count"))
        }
    }

    @Test func numbersConvertOnlyWhenExact() throws {
        struct Numbers: Codable { var i: Int; var d: Double; var small: Int8; var f: Float }
        let decoder = Hearth.Decoder()
        let ok = try decoder.decode(Numbers.self, from: ["i": 3.0, "d": 4, "small": 100, "f": 1.5] as [String: Any])
        #expect(ok.i == 3 && ok.d == 4 && ok.small == 100 && ok.f == 1.5)
        #expect(throws: DecodingError.self) { try decoder.decode(Numbers.self, from: ["i": 3.5, "d": 4, "small": 1, "f": 1] as [String: Any]) }
        #expect(throws: DecodingError.self) { try decoder.decode(Numbers.self, from: ["i": 3, "d": 4, "small": 300, "f": 1] as [String: Any]) }
    }

    @Test func missingDocumentDecodingThrowsValueNotFound() async throws {
        struct Any1: Codable { var a: Int }
        #expect(throws: DecodingError.self) { try _ = env.db.document("no/doc").getDocumentSync(as: Any1.self) }
    }
}

extension DocumentReference {
    /// Test helper: the blocking read of the transaction API, outside a transaction.
    func getDocumentSync<T: Decodable>(as type: T.Type) throws -> T {
        let box = Box<Result<DocumentSnapshot, Error>>()
        let done = DispatchSemaphore(value: 0)
        getDocument { snap, error in
            box.value = snap.map { .success($0) } ?? .failure(error!)
            done.signal()
        }
        done.wait()
        return try box.value!.get().data(as: type)
    }
}

final class Box<T>: @unchecked Sendable { var value: T? }
