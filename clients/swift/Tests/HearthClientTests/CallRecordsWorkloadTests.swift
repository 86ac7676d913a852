import Foundation
import HearthTesting
import Testing
import HearthClient

// Workload: a CRM's customers, call records and customer documents (seed 001), against a real daemon.
// Three root collections; the two child collections point at their customer with `customerId`. See
// docs/guides/call-records.md.

/// The models of the call-records workload, namespaced so they do not clash with `SeedExamples.swift`.
enum CallCenter {
    struct Customer: Codable, Identifiable, Equatable {
        @DocumentID var id: String?
        var fullName: String
        var phoneNum: String
        var email: String
        var dateOfBirth: Date
    }

    /// `callDate` is a timestamp: it sorts by time. (The seed stored a localized string.)
    struct CallRecord: Codable, Identifiable, Equatable {
        @DocumentID var id: String?
        var customerId: String
        var title: String
        var description: String
        var callDate: Date
    }

    struct CustomerDocument: Codable, Identifiable, Equatable {
        @DocumentID var id: String?
        var customerId: String
        var fileName: String
        var downloadURL: String
        var uploadTime: Timestamp
    }

    /// A call record model with a mistyped coding key: the stored field is `callDate`, the key says
    /// `calldate`. Decoding must fail loudly, naming the key.
    struct MistypedCallRecord: Codable {
        @DocumentID var id: String?
        var customerId: String
        var title: String
        var callDate: Date

        enum CodingKeys: String, CodingKey {
            case id, customerId, title
            case callDate = "calldate"
        }
    }

    /// The seed's other typo: the enum is spelled `CodingKyes`. Swift ignores it (it is just an unused
    /// nested enum) and synthesizes `CodingKeys` from the property names, so this decodes fine; the typo
    /// that breaks decoding is a wrong *case* string, as in `MistypedCallRecord`.
    struct MisspelledEnumCallRecord: Codable {
        @DocumentID var id: String?
        var customerId: String
        var title: String
        var callDate: Date

        enum CodingKyes: String, CodingKey {
            case id, customerId, title, callDate
        }
    }

    static let callsIndex = #"[["customerId","asc"],["callDate","desc"]]"#
    static let documentsIndex = #"[["customerId","asc"],["uploadTime","desc"]]"#

    /// The customer's call records, newest first.
    static func callsQuery(_ db: Hearth, customerId: String) -> Query {
        db.collection("call_records").whereField("customerId", isEqualTo: customerId).order(by: "callDate", descending: true)
    }

    static func documentsQuery(_ db: Hearth, customerId: String) -> Query {
        db.collection("customer_documents").whereField("customerId", isEqualTo: customerId).order(by: "uploadTime", descending: true)
    }

    /// One page of call records (pageSize newest after `cursor`), and the cursor for the next page (nil at
    /// the end).
    static func callPage(_ db: Hearth, customerId: String, pageSize: Int,
                         after cursor: DocumentSnapshot?) async throws -> ([CallRecord], DocumentSnapshot?) {
        var q = callsQuery(db, customerId: customerId).limit(to: pageSize)
        if let cursor { q = q.start(afterDocument: cursor) }
        let docs = try await q.getDocuments().documents
        return (try docs.map { try $0.data(as: CallRecord.self) }, docs.count == pageSize ? docs.last : nil)
    }
}

@Suite struct CallRecordsWorkloadTests {
    typealias CallRecord = CallCenter.CallRecord
    let base = Date(timeIntervalSince1970: 1_767_225_600)   // 2026-01-01T00:00:00Z

    private func addCall(_ db: Hearth, _ customerId: String, _ title: String, minutes: Double) async throws -> String {
        try await db.collection("call_records").addDocument(from: CallRecord(
            customerId: customerId, title: title, description: "", callDate: base.addingTimeInterval(minutes * 60))).documentID
    }

    @Test func callListenerReceivesAppendsInOrder() async throws {
        let env = try TestEnv()
        let db = env.db

        // Without the composite index the query is refused with the exact index request in the message.
        do {
            _ = try await CallCenter.callsQuery(db, customerId: "c1").getDocuments()
            Issue.record("the query ran without its index")
        } catch {
            #expect((error as? HearthError)?.code == .failedPrecondition)
            #expect("\(error)".contains("index"))
        }
        // A listener is refused the same way; the error is its only callback.
        let missing = Recorder<QuerySnapshot>()
        let r0 = CallCenter.callsQuery(db, customerId: "c1").addSnapshotListener(missing.callback)
        let error = try await missing.waitForError()
        r0.remove()
        #expect((error as? HearthError)?.code == .failedPrecondition)
        #expect("\(error)".contains("index"))
        #expect(missing.values.isEmpty && missing.failures.count == 1)

        try env.createIndex(collection: "call_records", fields: CallCenter.callsIndex)
        try await db.collection("customers").document("c1").setData(from: CallCenter.Customer(
            fullName: "王小明", phoneNum: "+86 10 1234 5678", email: "wang@example.com", dateOfBirth: base))
        for (i, title) in ["a", "b", "c"].enumerated() { try await addCall(db, "c1", title, minutes: Double(i)) }
        try await addCall(db, "c2", "someone else", minutes: 10)

        let snaps = Recorder<QuerySnapshot>()
        let registration = CallCenter.callsQuery(db, customerId: "c1").addSnapshotListener(snaps.callback)
        defer { registration.remove() }
        let initial = try await snaps.wait(for: 1)[0]
        #expect(try initial.documents.map { try $0.data(as: CallRecord.self).title } == ["c", "b", "a"])

        // Newer calls arrive at index 0, one snapshot per commit, in commit order.
        var expected = ["c", "b", "a"]
        for (i, title) in ["d", "e", "f"].enumerated() {
            let id = try await addCall(db, "c1", title, minutes: Double(10 + i))
            expected.insert(title, at: 0)
            try await snaps.wait { $0.last?.documents.first?.documentID == id }
            let last = try #require(snaps.values.last)
            #expect(last.documentChanges.map(\.type) == [.added])
            #expect(last.documentChanges.first?.newIndex == 0)
            #expect(try last.documents.map { try $0.data(as: CallRecord.self).title } == expected)
        }
        // A back-dated call (logged late) lands where its date puts it, not on top.
        let lateId = try await addCall(db, "c1", "late", minutes: 1.5)
        try await snaps.wait { $0.last?.documentChanges.first?.document.documentID == lateId }
        let late = try #require(snaps.values.last)
        #expect(late.documentChanges.first?.newIndex == 4)
        #expect(late.documents.map { $0.get("title") as? String } == ["f", "e", "d", "c", "late", "b", "a"])
        // Another customer's call never reaches this listener.
        try await addCall(db, "c2", "not mine", minutes: 100)
        let marker = try await addCall(db, "c1", "marker", minutes: 200)
        try await snaps.wait { $0.last?.documents.first?.documentID == marker }

        // Replaying the diffs over the first snapshot reproduces every later snapshot exactly.
        var replica = initial.documents.map(\.documentID)
        for snap in snaps.values.dropFirst() {
            for change in snap.documentChanges {
                switch change.type {
                case .removed: replica.remove(at: Int(change.oldIndex))
                case .added: replica.insert(change.document.documentID, at: Int(change.newIndex))
                case .modified:
                    replica.remove(at: Int(change.oldIndex))
                    replica.insert(change.document.documentID, at: Int(change.newIndex))
                }
            }
            #expect(replica == snap.documents.map(\.documentID))
        }
        #expect(snaps.values.allSatisfy { $0.documents.allSatisfy { $0.get("customerId") as? String == "c1" } })
        #expect(snaps.failures.isEmpty)
    }

    @Test func pagingWithStartAfterVisitsEveryRecordOnce() async throws {
        let env = try TestEnv()
        let db = env.db
        try env.createIndex(collection: "call_records", fields: CallCenter.callsIndex)
        // 45 calls for c1, with ties on callDate (three calls per minute), and noise for c2.
        let batch = db.batch()
        for i in 0..<45 {
            try batch.setData(from: CallRecord(customerId: "c1", title: "call \(i)", description: "",
                                               callDate: base.addingTimeInterval(Double(i / 3) * 60)),
                              forDocument: db.collection("call_records").document())
        }
        for i in 0..<10 {
            try batch.setData(from: CallRecord(customerId: "c2", title: "other \(i)", description: "", callDate: base),
                              forDocument: db.collection("call_records").document())
        }
        try await batch.commit()

        var all: [CallRecord] = []
        var sizes: [Int] = []
        var cursor: DocumentSnapshot?
        repeat {
            let (page, next) = try await CallCenter.callPage(db, customerId: "c1", pageSize: 20, after: cursor)
            all += page
            sizes.append(page.count)
            cursor = next
        } while cursor != nil
        #expect(sizes == [20, 20, 5])
        #expect(Set(all.compactMap(\.id)).count == 45, "no record twice, none skipped, even across equal dates")
        #expect(all.allSatisfy { $0.customerId == "c1" })
        #expect(zip(all, all.dropFirst()).allSatisfy { $0.callDate > $1.callDate || ($0.callDate == $1.callDate && $0.id! > $1.id!) },
                "newest first; equal dates in descending document-ID order")
    }

    @Test func documentsListenerOrdersByUploadTimeDescending() async throws {
        let env = try TestEnv()
        let db = env.db
        try env.createIndex(collection: "customer_documents", fields: CallCenter.documentsIndex)
        func upload(_ customerId: String, _ name: String, seconds: Double) async throws -> String {
            try await db.collection("customer_documents").addDocument(from: CallCenter.CustomerDocument(
                customerId: customerId, fileName: name,
                downloadURL: "https://files.example.com/customer_files/\(customerId)/\(name)",
                uploadTime: Timestamp(date: base.addingTimeInterval(seconds)))).documentID
        }
        try await upload("c1", "contract.pdf", seconds: 10)
        try await upload("c1", "id-card.jpg", seconds: 5)
        try await upload("c2", "other.pdf", seconds: 20)

        let snaps = Recorder<[CallCenter.CustomerDocument]>()
        let registration = CallCenter.documentsQuery(db, customerId: "c1").addSnapshotListener { snapshot, error in
            snaps.callback(try? snapshot?.documents.map { try $0.data(as: CallCenter.CustomerDocument.self) }, error)
        }
        defer { registration.remove() }
        #expect(try await snaps.wait(for: 1)[0].map(\.fileName) == ["contract.pdf", "id-card.jpg"])

        let invoice = try await upload("c1", "invoice.pdf", seconds: 30)
        try await snaps.wait { $0.last?.first?.id == invoice }
        #expect(snaps.values.last?.map(\.fileName) == ["invoice.pdf", "contract.pdf", "id-card.jpg"])

        try await db.collection("customer_documents").document(invoice).delete()
        try await snaps.wait { $0.last?.count == 2 }
        #expect(snaps.values.last?.map(\.fileName) == ["contract.pdf", "id-card.jpg"])
        #expect(snaps.values.allSatisfy { $0.allSatisfy { $0.customerId == "c1" } })
        #expect(snaps.failures.isEmpty)
    }

    @Test func codableModelsRoundTripWithDataAs() async throws {
        let env = try TestEnv()
        let db = env.db
        let customer = CallCenter.Customer(fullName: "王小明", phoneNum: "+86 10 1234 5678", email: "wang@example.com",
                                           dateOfBirth: Date(timeIntervalSince1970: 631_152_000))
        try await db.collection("customers").document("c1").setData(from: customer)
        let record = CallRecord(customerId: "c1", title: "续约", description: "客户要求回电", callDate: base)
        let recordId = try await db.collection("call_records").addDocument(from: record).documentID
        let upload = Timestamp(date: base.addingTimeInterval(0.25))
        let docId = try await db.collection("customer_documents").addDocument(from: CallCenter.CustomerDocument(
            customerId: "c1", fileName: "合同.pdf", downloadURL: "https://files.example.com/c1/x.pdf", uploadTime: upload)).documentID

        let c = try await db.document("customers/c1").getDocument(as: CallCenter.Customer.self)
        #expect(c.id == "c1" && c.fullName == "王小明" && c.dateOfBirth == customer.dateOfBirth)
        let r = try await db.document("call_records/\(recordId)").getDocument().data(as: CallRecord.self)
        #expect(r.id == recordId && r.customerId == "c1" && r.title == "续约" && r.callDate == base)
        // The date is stored as a timestamp, not text.
        #expect(try await db.document("call_records/\(recordId)").getDocument().get("callDate") is Timestamp)
        let d = try await db.document("customer_documents/\(docId)").getDocument(as: CallCenter.CustomerDocument.self)
        #expect(d.id == docId && d.fileName == "合同.pdf" && d.uploadTime == upload)
        // @DocumentID is not stored as a field.
        #expect(try await db.document("call_records/\(recordId)").getDocument().data()?["id"] == nil)
    }

    @Test func mistypedCodingKeyFailsNamingTheKey() async throws {
        let env = try TestEnv()
        let db = env.db
        try await db.collection("call_records").document("r1").setData(from: CallRecord(
            customerId: "c1", title: "t", description: "", callDate: base))
        let snapshot = try await db.collection("call_records").getDocuments()

        // `try` surfaces the mistake: a DecodingError naming the missing key and the fields that exist.
        do {
            _ = try snapshot.documents[0].data(as: CallCenter.MistypedCallRecord.self)
            Issue.record("decoding with a mistyped key should fail")
        } catch let error as DecodingError {
            guard case .keyNotFound(let key, _) = error else { Issue.record("expected keyNotFound, got \(error)"); return }
            #expect(key.stringValue == "calldate")
            #expect("\(error)".contains("calldate") && "\(error)".contains("callDate"))
        }
        // The seed's `compactMap { try? ... }` turns the same mistake into an empty list, silently.
        #expect(snapshot.documents.compactMap { try? $0.data(as: CallCenter.MistypedCallRecord.self) }.isEmpty)

        // A misspelled *enum name* (`CodingKyes`) is harmless: Swift synthesizes the keys instead.
        let ok = try snapshot.documents[0].data(as: CallCenter.MisspelledEnumCallRecord.self)
        #expect(ok.id == "r1" && ok.callDate == base)
    }

    @Test func localizedDateStringsSortWrongTimestampsSortRight() async throws {
        let env = try TestEnv()
        let db = env.db
        // Three calls on Jan 2, Jan 9 and Jan 10, 2026, each stored three ways.
        let days = [2, 9, 10]
        let batch = db.batch()
        for day in days {
            var parts = DateComponents()
            (parts.year, parts.month, parts.day, parts.hour) = (2026, 1, day, 12)
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = TimeZone(identifier: "UTC")!
            let date = calendar.date(from: parts)!
            batch.setData([
                "customerId": "c1",
                "title": "day \(day)",
                "callDateZh": "2026年1月\(day)日",   // what DateFormatter gives in a zh_CN locale
                "callDateUS": "1/\(day)/2026",        // ... and in en_US
                "callDate": Timestamp(date: date),
            ], forDocument: db.collection("call_records").document("jan\(day)"))
        }
        try await batch.commit()

        func newestFirst(by field: String) async throws -> [String] {
            try await db.collection("call_records").order(by: field, descending: true).getDocuments()
                .documents.map(\.documentID)
        }
        // Strings compare character by character: "1" < "9", so Jan 10 sorts *before* Jan 9 ascending and
        // the "newest first" list starts with Jan 9.
        #expect(try await newestFirst(by: "callDateZh") == ["jan9", "jan2", "jan10"])
        #expect(try await newestFirst(by: "callDateUS") == ["jan9", "jan2", "jan10"])
        // Timestamps compare by time.
        #expect(try await newestFirst(by: "callDate") == ["jan10", "jan9", "jan2"])
        // And a range ("calls since Jan 5") is only meaningful on the timestamp.
        let since = try await db.collection("call_records")
            .whereField("callDate", isGreaterThanOrEqualTo: Timestamp(date: base.addingTimeInterval(4 * 86_400)))
            .getDocuments().documents.map(\.documentID)
        #expect(Set(since) == ["jan9", "jan10"])
        let sinceText = try await db.collection("call_records")
            .whereField("callDateUS", isGreaterThanOrEqualTo: "1/5/2026").getDocuments().documents.map(\.documentID)
        #expect(Set(sinceText) == ["jan9"], "text comparison drops Jan 10 (\"1/10\" < \"1/5\")")
    }

    @Test func embeddingCallsInTheCustomerHitsTheOneMiBLimit() async throws {
        let env = try TestEnv()
        let db = env.db
        // The nested design the seed rejected: every call as an element of an array in the customer.
        let note = String(repeating: "x", count: 1_000)
        let calls: [[String: Any]] = (0..<1_100).map { ["title": "call \($0)", "description": note, "callDate": Timestamp(date: base)] }
        let code = await hearthCode {
            try await db.collection("customers").document("c1").setData(["fullName": "Ada", "calls": calls])
        }
        #expect(code == .invalidArgument)
        #expect(try await db.document("customers/c1").getDocument().exists == false)
        // The same 1,100 calls as separate documents are fine (one commit here, but any number of commits
        // would do), and each page stays small.
        try env.createIndex(collection: "call_records", fields: CallCenter.callsIndex)
        for chunk in stride(from: 0, to: 1_100, by: 250) {
            let batch = db.batch()
            for i in chunk..<min(chunk + 250, 1_100) {
                batch.setData(["customerId": "c1", "title": "call \(i)", "description": note,
                               "callDate": Timestamp(date: base.addingTimeInterval(Double(i)))],
                              forDocument: db.collection("call_records").document())
            }
            try await batch.commit()
        }
        let (page, next) = try await CallCenter.callPage(db, customerId: "c1", pageSize: 20, after: nil)
        #expect(page.map(\.title) == (1_080..<1_100).reversed().map { "call \($0)" })
        #expect(next != nil)
        let count = try await CallCenter.callsQuery(db, customerId: "c1").count.getAggregation(source: .server).count
        #expect(count.intValue == 1_100)
    }
}
