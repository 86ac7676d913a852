import HearthModel
@testable import HearthRules

func doc(_ s: String) -> DocumentPath { try! DocumentPath(parsing: s) }
func col(_ s: String) -> CollectionPath { try! CollectionPath(parsing: s) }
func fields(_ v: Value) -> MapValue { v.mapValue! }

/// Compiles or fails the test with the compile error.
func compileRules(_ source: String, file: String = "test.rules") -> Rules {
    do {
        return try Rules.compile(source, file: file)
    } catch {
        fatalError("rules did not compile: \(error)\n\(source)")
    }
}

/// Documents for get()/exists() (before) and getAfter()/existsAfter() (after the commit); records calls.
final class FakeReader: RuleDocumentReader, @unchecked Sendable {
    var before: [DocumentPath: MapValue]
    var after: [DocumentPath: MapValue]
    var calls = 0
    init(before: [String: Value] = [:], after: [String: Value]? = nil) {
        self.before = Dictionary(uniqueKeysWithValues: before.map { (doc($0.key), $0.value.mapValue!) })
        self.after = after.map { Dictionary(uniqueKeysWithValues: $0.map { (doc($0.key), $0.value.mapValue!) }) } ?? self.before
    }
    func get(_ path: DocumentPath) -> MapValue? { calls += 1; return before[path] }
    func getAfter(_ path: DocumentPath) -> MapValue? { calls += 1; return after[path] }
}

let fixedTime = Timestamp(micros: 1_767_225_600_000_000)  // 2026-01-01T00:00:00Z

func request(_ method: RuleMethod, _ path: String, uid: String? = nil, token: Value = [:],
             resource: Value? = nil, newData: Value? = nil, budget: Int = 10) -> RuleRequest {
    RuleRequest(method: method, path: doc(path), auth: uid.map { RuleAuth(uid: $0, token: fields(token)) },
                time: fixedTime, resource: resource.map(fields), requestResource: newData.map(fields),
                maxDocumentReads: budget)
}

func listRequest(_ query: Query, uid: String? = nil, token: Value = [:]) -> RuleRequest {
    RuleRequest(method: .list, query: query, auth: uid.map { RuleAuth(uid: $0, token: fields(token)) }, time: fixedTime)
}

func fp(_ s: String) -> FieldPath { try! FieldPath.parse(s) }

extension Query {
    func filtered(_ f: Filter) -> Query { var q = self; q.filter = f; return q }
    func limited(_ n: Int) -> Query { var q = self; q.limit = n; return q }
}

func eq(_ f: String, _ v: Value) -> Filter { .field(fp(f), .equal, v) }
func and(_ fs: Filter...) -> Filter { .composite(.and, fs) }
