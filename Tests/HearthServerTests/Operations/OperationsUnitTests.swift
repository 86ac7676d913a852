import Foundation
@testable import HearthServer
import HearthModel
import HearthStorage
import Testing

/// Tables for the pieces under the metrics, logs and admin ops: the log histogram, the HTTP request head
/// parser, the collection ID walk, log line formats, and the Prometheus number forms.
struct OperationsUnitTests {
    @Test func histogramBucketsAreContiguousAndQuantilesBoundTheValues() {
        // Every value falls in the bucket whose bounds hold it.
        for v: UInt64 in [0, 1, 2, 3, 4, 5, 7, 8, 9, 10, 15, 16, 17, 100, 1000, 65_535, 65_536, 1_000_000, 1 << 40] {
            let b = LogHistogram.bucket(v)
            let lower: UInt64 = b == 0 ? 0 : LogHistogram.upperBound(b - 1)
            #expect(lower <= v && (v < LogHistogram.upperBound(b) || b == LogHistogram.bucketCount - 1), "\(v) in bucket \(b)")
        }
        for i in 1..<LogHistogram.bucketCount { #expect(LogHistogram.upperBound(i) > LogHistogram.upperBound(i - 1)) }
        var h = LogHistogram()
        for v in 1...1000 { h.record(UInt64(v)) }
        let p50 = h.quantile(0.5), p99 = h.quantile(0.99)
        #expect(p50 >= 500 && Double(p50) <= 500 * 1.25, "\(p50)")
        #expect(p99 >= 990 && Double(p99) <= 990 * 1.25, "\(p99)")
        #expect(h.total == 1000 && h.sum == 500_500)
        #expect(h.count(below: 512) == 511)
        #expect(LogHistogram().quantile(0.5) == 0)
    }

    @Test func httpRequestHeads() {
        typealias P = HTTPRequestHead.Parse
        let cases: [(String, P)] = [
            ("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", .request(method: "GET", path: "/metrics")),
            ("GET /metrics?a=b HTTP/1.0\n\n", .request(method: "GET", path: "/metrics")),
            ("POST /x HTTP/1.1\r\n\r\n", .request(method: "POST", path: "/x")),
            ("GET /metrics HTTP/1.1\r\nHost: x\r\n", .incomplete),
            ("", .incomplete),
            ("GET /metrics\r\n\r\n", .bad(status: 400, reason: "Bad Request")),
            ("GET  /metrics HTTP/1.1\r\n\r\n", .bad(status: 400, reason: "Bad Request")),
            ("get /metrics HTTP/1.1\r\n\r\n", .bad(status: 400, reason: "Bad Request")),
            ("GET metrics HTTP/1.1\r\n\r\n", .bad(status: 400, reason: "Bad Request")),
            ("GET /m\u{7F} HTTP/1.1\r\n\r\n", .bad(status: 400, reason: "Bad Request")),
            ("GET /metrics HTTP/2\r\n\r\n", .bad(status: 505, reason: "HTTP Version Not Supported")),
            ("GET /metrics FTP/1.1\r\n\r\n", .bad(status: 400, reason: "Bad Request")),
            ("\r\n\r\n", .bad(status: 400, reason: "Bad Request")),
            ("GET /" + String(repeating: "a", count: 9000), .bad(status: 431, reason: "Request Header Fields Too Large")),
        ]
        for (text, expected) in cases { #expect(HTTPRequestHead.parse(Array(text.utf8)) == expected, "\(text.prefix(40))") }
        let ok = String(decoding: HTTPRequestHead.response(to: .request(method: "GET", path: "/metrics"), metrics: { "m 1\n" }), as: UTF8.self)
        #expect(ok == "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\nContent-Length: 4\r\nConnection: close\r\n\r\nm 1\n")
        let head = String(decoding: HTTPRequestHead.response(to: .request(method: "HEAD", path: "/metrics"), metrics: { "m 1\n" }), as: UTF8.self)
        #expect(head.hasSuffix("Content-Length: 4\r\nConnection: close\r\n\r\n"))
        let notFound = String(decoding: HTTPRequestHead.response(to: .request(method: "GET", path: "/"), metrics: { "" }), as: UTF8.self)
        #expect(notFound.hasPrefix("HTTP/1.1 404 Not Found\r\n"))
        let post = String(decoding: HTTPRequestHead.response(to: .request(method: "POST", path: "/metrics"), metrics: { "" }), as: UTF8.self)
        #expect(post.hasPrefix("HTTP/1.1 405 Method Not Allowed\r\n") && post.contains("Allow: GET, HEAD\r\n"))
    }

    @Test func collectionIDWalkSkipsDeeperCollectionsAndSortsByBytes() throws {
        let paths = ["a", "a-b", "a-b/1/c", "a/1/x", "a/1/x/2/y", "a/2/z", "b", "é"].sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        var seeks = 0
        func next(prefix: String) -> (String, Bool) -> String? {
            return { cursor, strictly in
                seeks += 1
                return paths.first { p in
                    p.hasPrefix(prefix) && (strictly ? cursor.utf8.lexicographicallyPrecedes(p.utf8) : !p.utf8.lexicographicallyPrecedes(cursor.utf8))
                }
            }
        }
        #expect(try CollectionIDWalk.ids(prefix: "", next: next(prefix: "")) == ["a", "a-b", "b", "é"])
        #expect(seeks <= 2 * 4 + 1, "\(seeks) seeks")
        #expect(try CollectionIDWalk.ids(prefix: "a/1/", next: next(prefix: "a/1/")) == ["x"])
        #expect(try CollectionIDWalk.ids(prefix: "q/1/", next: next(prefix: "q/1/")) == [])
    }

    @Test func memoryStoreAdministrationMatchesTheContract() throws {
        let store = MemoryStore()
        var seq: UInt64 = 0
        func put(_ p: String) throws {
            seq += 1
            let path = try DocumentPath(parsing: p)
            let doc = StoredDocument(path: path, data: Array("{}".utf8), createTime: Timestamp(micros: 1), updateTime: Timestamp(micros: 1), seq: seq)
            try store.apply([CommitRecord(seq: seq, commitTime: Timestamp(micros: Int64(seq)), mutations: [Mutation(path: path, before: nil, after: doc)])])
        }
        for p in ["a/1", "a/1/x/1", "a/1/x/2", "a/2/y/1", "b/1"] { try put(p) }
        #expect(try store.collectionIDs(under: nil) == ["a", "b"])
        #expect(try store.collectionIDs(under: try DocumentPath(parsing: "a/1")) == ["x"])
        let all = try store.documentPaths(under: try ResourcePath.parse("a"), limit: 10).map(\.description)
        #expect(all == ["a/1", "a/1/x/1", "a/1/x/2", "a/2/y/1"], "\(all)")   // a/2 holds only a subcollection
        #expect(try store.documentPaths(under: try ResourcePath.parse("a/1"), limit: 2).map(\.description) == ["a/1", "a/1/x/1"])
        #expect(try store.compact().method == "none")
    }

    @Test func logLinesInBothFormats() {
        let t = Timestamp(micros: 1_700_000_000_123_456)
        let text = Logger.line(.warn, "slow request", [("op", .string("get")), ("peer", .string("127.0.0.1:5")),
                                                     ("duration_ms", .number(12.5)), ("id", .string("\"a b\""))], format: .text, time: t)
        #expect(text == "2023-11-14T22:13:20.123456Z hearthd warn: slow request op=get peer=127.0.0.1:5 duration_ms=12.5 id=\"\\\"a b\\\"\"\n")
        let json = Logger.line(.info, "hi \"there\"", [("n", .int(3))], format: .json, time: t)
        #expect(json == #"{"time":"2023-11-14T22:13:20.123456Z","level":"info","msg":"hi \"there\"","n":3}"# + "\n")
        #expect(LogValue.string("").text == "\"\"")
        #expect(LogValue.string("a=b").text == "\"a=b\"")
    }

    @Test func prometheusNumberForms() {
        #expect(PrometheusText.seconds(8) == "0.000008")
        #expect(PrometheusText.seconds(1_048_576) == "1.048576")
        #expect(PrometheusText.seconds(2_000_000) == "2")
        #expect(PrometheusText.escape("a\"b\\c\nd") == "a\\\"b\\\\c\\nd")
        #expect(PrometheusText.number(.nan) == "NaN" && PrometheusText.number(.infinity) == "+Inf")
    }
}
