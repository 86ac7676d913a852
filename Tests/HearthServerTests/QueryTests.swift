import Foundation
import HearthTesting
import Testing

/// Queries over TCP against the real daemon: Firestore's published cases, indexes, and invalid queries.
@Suite(.serialized) final class QueryTests {
    let daemon: DaemonProcess
    let c: WireClient

    init() throws {
        daemon = try DaemonProcess()
        c = try daemon.connect()
    }

    func ids(_ r: [String: Any]) -> [String] {
        ((r["docs"] as? [[String: Any]]) ?? []).compactMap { $0["id"] as? String }
    }

    func load(_ docs: [(String, String)]) throws {
        let writes = docs.map { #"{"op":"set","path":"\#($0.0)","data":\#($0.1)}"# }.joined(separator: ",")
        let r = try c.request(#"{"op":"commit","writes":[\#(writes)]}"#)
        #expect(r.isOK, "\(r)")
    }

    /// firebase-js-sdk query.test.ts: the `!=` / `not-in` zip dataset.
    @Test func notEqualAndNotInZipDataset() throws {
        try load([
            ("zips/a", #"{"zip":98101}"#), ("zips/b", #"{"zip":91102}"#), ("zips/c", #"{"zip":98103}"#),
            ("zips/d", #"{"zip":[98101]}"#), ("zips/e", #"{"zip":["98101",{"zip":98101}]}"#), ("zips/f", #"{"zip":{"code":500}}"#),
            ("zips/g", #"{"code":500}"#), ("zips/h", #"{"zip":null}"#), ("zips/i", #"{"zip":{"$double":"NaN"}}"#),
        ])
        #expect(ids(try c.request(#"{"op":"query","collection":"zips","where":[["zip","!=",98101]]}"#)) == ["i", "b", "c", "d", "e", "f"])
        #expect(ids(try c.request(#"{"op":"query","collection":"zips","where":[["zip","!=",{"$double":"NaN"}]]}"#)) == ["b", "a", "c", "d", "e", "f"])
        #expect(ids(try c.request(#"{"op":"query","collection":"zips","where":[["zip","!=",null]]}"#)) == ["i", "b", "a", "c", "d", "e", "f"])
        #expect(ids(try c.request(#"{"op":"query","collection":"zips","where":[["zip","not-in",[98101,98103,[98101]]]]}"#)) == ["i", "b", "e", "f"])
        #expect(ids(try c.request(#"{"op":"query","collection":"zips","where":[["zip","not-in",[null]]]}"#)) == [])
        #expect(ids(try c.request(#"{"op":"query","collection":"zips","where":[["zip","in",[98101,98103,[98101]]]]}"#)) == ["a", "c", "d"])
        #expect(ids(try c.request(#"{"op":"query","collection":"zips","where":[["zip","array-contains",98101]]}"#)) == ["d"])
        #expect(ids(try c.request(#"{"op":"query","collection":"zips","where":[["zip","==",null]]}"#)) == ["h"])
        #expect(ids(try c.request(#"{"op":"query","collection":"zips","where":[["zip","==",{"$double":"NaN"}]]}"#)) == ["i"])
        #expect(ids(try c.request(#"{"op":"query","collection":"zips","where":[["zip",">",90000]]}"#)) == ["b", "a", "c"])
    }

    /// 42 and 42.0 tie and are ordered by document key; type order across values.
    @Test func numbersTieAcrossTypesAndTypesOrder() throws {
        try load([("n/b", #"{"v":42}"#), ("n/a", #"{"v":{"$double":42}}"#), ("n/c", #"{"v":41.5}"#), ("n/d", #"{"v":"42"}"#),
                  ("n/e", #"{"v":true}"#), ("n/f", #"{"v":null}"#), ("n/g", #"{"v":{"$timestamp":"2026-01-01T00:00:00Z"}}"#)])
        #expect(ids(try c.request(#"{"op":"query","collection":"n","orderBy":["v"]}"#)) == ["f", "e", "c", "a", "b", "g", "d"])
        #expect(ids(try c.request(#"{"op":"query","collection":"n","where":[["v","==",42]]}"#)) == ["a", "b"])
        #expect(ids(try c.request(#"{"op":"query","collection":"n","where":[["v",">=",42]]}"#)) == ["a", "b"])
        #expect(ids(try c.request(#"{"op":"query","collection":"n","orderBy":[["v","desc"]],"limit":2}"#)) == ["d", "g"])
    }

    /// The collection-group path set: only collections with exactly that ID, at any depth.
    @Test func collectionGroupMatchesOnlyThatCollectionID() throws {
        try load([("abc/123/cg/cg-doc1", "{}"), ("abc/123/cg-not/x", "{}"), ("cg/cg-doc2", "{}"), ("xcg/cg-doc3", "{}"),
                  ("abc/cg/cgx/y", "{}"), ("cg/cg-doc4/sub/z", "{}"), ("a/b/c/d/cg/cg-doc5", "{}"), ("abc/cg", "{}")])
        let r = try c.request(#"{"op":"query","collectionGroup":"cg"}"#)
        let paths = ((r["docs"] as? [[String: Any]]) ?? []).compactMap { $0["path"] as? String }
        // Not cg-not, not xcg, not the document abc/cg, not cgx; cg/cg-doc4 itself was never written.
        #expect(paths == ["a/b/c/d/cg/cg-doc5", "abc/123/cg/cg-doc1", "cg/cg-doc2"])
        let under = try c.request(#"{"op":"query","collectionGroup":"cg","parent":"abc/123"}"#)
        #expect(ids(under) == ["cg-doc1"])
        // Below a parent that is itself in the group: not the parent, and `__name__` bounds within the parent.
        try load([("abc/123/cg/cg-doc1/cg/deeper", "{}")])
        let belowDoc = try c.request(#"{"op":"query","collectionGroup":"cg","parent":"abc/123/cg/cg-doc1"}"#)
        #expect(ids(belowDoc) == ["deeper"], "\(belowDoc)")
        let after = try c.request(#"{"op":"query","collectionGroup":"cg","parent":"abc/123","where":[["__name__",">","abc/123/cg/cg-doc1"]]}"#)
        #expect(ids(after) == ["deeper"], "\(after)")
        let count = try c.request(#"{"op":"count","collectionGroup":"cg","parent":"abc/123/cg/cg-doc1"}"#)
        #expect(count["count"] as? Int == 1, "\(count)")
    }

    /// Cursors are prefixes of the normalized order; inclusivity; offset after cursors; limitToLast.
    @Test func cursorsOffsetAndLimitToLast() throws {
        try load((1...6).map { ("cur/d\($0)", #"{"k":\#(($0 + 1) / 2),"i":\#($0)}"#) })   // k: 1 1 2 2 3 3
        func q(_ extra: String) throws -> [String] { ids(try c.request(#"{"op":"query","collection":"cur","orderBy":["k"]\#(extra)}"#)) }
        #expect(try q(#","startAt":[2]"#) == ["d3", "d4", "d5", "d6"])
        #expect(try q(#","startAfter":[2]"#) == ["d5", "d6"])
        #expect(try q(#","endAt":[2]"#) == ["d1", "d2", "d3", "d4"])
        #expect(try q(#","endBefore":[2]"#) == ["d1", "d2"])
        #expect(try q(#","startAfter":[2,"d3"]"#) == ["d4", "d5", "d6"])
        #expect(try q(#","startAt":[2],"offset":1,"limit":2"#) == ["d4", "d5"])
        #expect(try q(#","limitToLast":3"#) == ["d4", "d5", "d6"])
        #expect(ids(try c.request(#"{"op":"query","collection":"cur","orderBy":[["k","desc"]],"startAt":[2],"limit":3}"#)) == ["d4", "d3", "d2"])
        #expect(ids(try c.request(#"{"op":"query","collection":"cur","where":[["__name__",">=","d5"]]}"#)) == ["d5", "d6"])
    }

    @Test func compositeIndexLifecycleAndExplain() throws {
        var writes: [String] = []
        for i in 0..<300 {
            writes.append(#"{"op":"set","path":"calls/r\#(i)","data":{"customerId":"c\#(i % 30)","callDate":{"$timestamp":"2026-01-01T00:00:\#(String(format: "%02d", i % 60)).\#(String(format: "%06d", i))Z"},"duration":\#(i)}}"#)
        }
        #expect(try c.request(#"{"op":"commit","writes":[\#(writes.joined(separator: ","))]}"#).isOK)
        let query = #""collection":"calls","where":[["customerId","==","c7"]],"orderBy":[["callDate","desc"]],"limit":3"#
        let missing = try c.request(#"{"op":"query",\#(query)}"#)
        #expect(missing.errorCode == "FAILED_PRECONDITION")
        #expect(missing.errorMessage?.contains(#"[["customerId","asc"],["callDate","desc"]]"#) == true, "\(missing)")
        let created = try c.request(#"{"op":"index","action":"create","collection":"calls","fields":[["customerId","asc"],["callDate","desc"]]}"#)
        #expect(created.isOK, "\(created)")
        try c.waitUntilIndexesAreReady()
        let r = try c.request(#"{"op":"query",\#(query)}"#)
        #expect(ids(r).count == 3, "\(r)")
        let explain = try c.request(#"{"op":"explain",\#(query)}"#)
        let plan = explain["plan"] as? [String: Any]
        #expect(plan?["examined"] as? Int == 3)
        #expect(((plan?["branches"] as? [[String: Any]])?.first?["index"] as? String)?.contains("composite") == true)
        // The catalog survives a restart.
        daemon.stop()
        try daemon.start()
        let again = try daemon.connect().request(#"{"op":"query",\#(query)}"#)
        #expect(ids(again) == ids(r))
    }

    /// The index a query names in its FAILED_PRECONDITION can be created, also when the array-contains field
    /// is ordered too; a query no index could serve (more fields than an index holds) is INVALID_ARGUMENT.
    @Test func theIndexAnErrorNamesCanBeCreated() throws {
        try load([("tg/a", #"{"tags":["x","b"]}"#), ("tg/b", #"{"tags":["a","x"]}"#), ("tg/c", #"{"tags":["y"]}"#), ("tg/d", #"{"tags":["x"]}"#)])
        let query = #""collection":"tg","where":[["tags","array-contains","x"]],"orderBy":[["tags","desc"]]"#
        let missing = try c.request(#"{"op":"query",\#(query)}"#)
        #expect(missing.errorCode == "FAILED_PRECONDITION", "\(missing)")
        let named = #"[["tags","array-contains"],["tags","desc"]]"#
        #expect(missing.errorMessage?.contains(named) == true, "\(missing)")
        let created = try c.request(#"{"op":"index","action":"create","collection":"tg","fields":\#(named)}"#)
        #expect(created.isOK, "\(created)")
        try c.waitUntilIndexesAreReady()
        let r = try c.request(#"{"op":"query",\#(query)}"#)
        // Arrays order element by element, a prefix first: ["x","b"] > ["x"] > ["a","x"].
        #expect(ids(r) == ["a", "d", "b"], "\(r)")
        let twice = try c.request(#"{"op":"index","action":"create","collection":"tg","fields":[["tags","asc"],["tags","desc"]]}"#)
        #expect(twice.errorCode == "INVALID_ARGUMENT" && twice.errorMessage?.contains("appears twice") == true, "\(twice)")
        let backwards = try c.request(#"{"op":"index","action":"create","collection":"tg","fields":[["tags","asc"],["tags","array-contains"]]}"#)
        #expect(backwards.errorCode == "INVALID_ARGUMENT" && backwards.errorMessage?.contains("must come before") == true, "\(backwards)")
        let order = (0..<101).map { #"["f\#($0)","asc"]"# }.joined(separator: ",")
        let wide = try c.request(#"{"op":"query","collection":"tg","orderBy":[\#(order)]}"#)
        #expect(wide.errorCode == "INVALID_ARGUMENT" && wide.errorMessage?.contains("at most 100") == true, "\(wide)")
    }

    /// An index orders documents with equal fields by name in the direction of its last field: a query ordering
    /// the name against it (explicitly, or through a last orderBy on a field an equality fixes) gets a clear
    /// UNIMPLEMENTED saying how to order it instead, not an index that cannot be created or already exists.
    @Test func aNameOrderedAgainstItsFieldIsUnimplementedWithTheWayOut() throws {
        try load([("nd/a", #"{"a":1,"n":1}"#), ("nd/b", #"{"a":1,"n":1}"#)])
        let explicit = try c.request(#"{"op":"query","collection":"nd","orderBy":[["n","asc"],["__name__","desc"]]}"#)
        #expect(explicit.errorCode == "UNIMPLEMENTED", "\(explicit)")
        #expect(explicit.errorMessage?.contains("order __name__ asc or leave it out") == true, "\(explicit)")
        let implicit = try c.request(#"{"op":"query","collection":"nd","where":[["a","==",1]],"orderBy":[["n","asc"],["a","desc"]]}"#)
        #expect(implicit.errorCode == "UNIMPLEMENTED", "\(implicit)")
        #expect(implicit.errorMessage?.contains("order \"a\" asc or leave it out") == true, "\(implicit)")
        // An explicit __name__ is named as what to change, also after a field an equality fixes.
        let both = try c.request(#"{"op":"query","collection":"nd","where":[["a","==",1]],"orderBy":[["n","asc"],["a","desc"],["__name__","desc"]]}"#)
        #expect(both.errorMessage?.contains("order __name__ asc or leave it out") == true, "\(both)")
        // The way out works: the same order with the name along.
        #expect(ids(try c.request(#"{"op":"query","collection":"nd","orderBy":[["n","asc"],["__name__","asc"]]}"#)) == ["a", "b"])
        #expect(ids(try c.request(#"{"op":"query","collection":"nd","orderBy":[["n","desc"],["__name__","desc"]]}"#)) == ["b", "a"])
    }

    @Test func aggregates() throws {
        try load([("agg/a", #"{"v":1}"#), ("agg/b", #"{"v":2}"#), ("agg/c", #"{"v":2.5}"#), ("agg/d", #"{"v":"x"}"#), ("agg/e", "{}")])
        let r = try c.request(#"{"op":"aggregate","query":{"collection":"agg"},"aggregations":{"n":{"count":{}},"s":{"sum":"v"},"m":{"avg":"v"},"none":{"avg":"missing"}}}"#)
        let result = r["result"] as? [String: Any]
        #expect(result?["n"] as? Int == 5)
        #expect(result?["s"] as? Double == 5.5)
        #expect(result?["m"] as? Double == 5.5 / 3)
        #expect(result?["none"] is NSNull)
        let ints = try c.request(#"{"op":"aggregate","query":{"collection":"agg","where":[["v","<=",2]]},"aggregations":{"s":{"sum":"v"}}}"#)
        #expect(((ints["result"] as? [String: Any])?["s"] as? Int) == 3)
        #expect(try c.request(#"{"op":"count","collection":"agg"}"#)["count"] as? Int == 5)
        // count takes {} only: nothing is silently ignored.
        for (spec, message) in [(#"{"upTo":2}"#, "upTo is not supported"), (#"{"bogus":true}"#, #"unknown field "bogus""#),
                                ("[]", "must be {}"), ("null", "must be {}")] {
            let bad = try c.request(#"{"op":"aggregate","query":{"collection":"agg"},"aggregations":{"c":{"count":\#(spec)}}}"#)
            #expect(bad.errorCode == "INVALID_ARGUMENT" && bad.errorMessage?.contains(message) == true, "\(spec): \(bad)")
        }
        // An alias names a field of the result: a field name's rules apply.
        for (alias, message) in [("", "map keys must not be empty"), ("__n__", "is reserved"), ("$n", "starting with '$'"),
                                 (String(repeating: "a", count: 1501), "above the limit of 1500")] {
            let bad = try c.request(#"{"op":"aggregate","query":{"collection":"agg"},"aggregations":{"\#(alias)":{"count":{}}}}"#)
            #expect(bad.errorCode == "INVALID_ARGUMENT" && bad.errorMessage?.hasPrefix("aggregate: aggregations: alias: ") == true
                    && bad.errorMessage?.contains(message) == true, "\(alias.prefix(8)): \(bad)")
        }
    }

    static let invalid: [(String, String)] = [
        (#""where":[["a","in",[]]]"#, "non-empty"),
        (#""where":[["a","in",[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31]]]"#, "30"),
        (#""where":[["a","not-in",[1,2,3,4,5,6,7,8,9,10,11]]]"#, "10"),
        (#""where":[["a","!=",1],["b","!=",2]]"#, "!="),
        (#""where":[["a","in",[1,2,3,4,5,6]],["b","in",[1,2,3,4,5,6]]]"#, "disjunctions"),
        (#""orderBy":["a"],"startAt":[1,"x","y"]"#, "cursor"),
        (#""limitToLast":2"#, "orderBy"),
        (#""where":[["a",">",null]]"#, "null"),
        (#""where":[["a","<",{"$double":"NaN"}]]"#, "NaN"),
        (#""where":[["a","==",{"$increment":1}]]"#, "$increment"),
        (#""orderBy":["__name__","a"]"#, "__name__"),
        (#""where":[["a","~",1]]"#, "where[0][1]"),
        (#""where":[["a","==",1,2]]"#, "filter"),
        (#""limit":-1"#, "limit"),
        (#""frob":1"#, "frob"),
    ]

    @Test func invalidQueriesAreRejectedAndTheConnectionCarriesOn() throws {
        for (extra, mention) in Self.invalid {
            let r = try c.request(#"{"op":"query","collection":"any",\#(extra)}"#)
            #expect(r.errorCode == "INVALID_ARGUMENT", "\(extra): \(r)")
            #expect(r.errorMessage?.contains(mention) == true, "\(extra): \(r.errorMessage ?? "")")
        }
        #expect(try c.request(#"{"op":"query","collectionGroup":"a/b"}"#).errorCode == "INVALID_ARGUMENT")
        #expect(try c.request(#"{"op":"query"}"#).errorCode == "INVALID_ARGUMENT")
        #expect(try c.request(#"{"op":"ping"}"#).isOK)
    }
}
