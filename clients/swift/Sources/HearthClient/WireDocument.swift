import Foundation

/// A document as the server sent it: path, ID, wire data and commit times.
struct WireDocument: Sendable, Equatable {
    let path: String
    let id: String
    let data: [String: JSON]
    let createTime: Timestamp?
    let updateTime: Timestamp?

    /// nil for `null` (a missing document) or a malformed entry.
    init?(_ json: JSON) {
        guard case .object(let o) = json, let path = o["path"]?.stringValue else { return nil }
        self.path = path
        id = o["id"]?.stringValue ?? String(path.split(separator: "/").last ?? "")
        data = o["data"]?.objectValue ?? [:]
        createTime = o["createTime"]?.stringValue.flatMap { Timestamp(rfc3339: $0) }
        updateTime = o["updateTime"]?.stringValue.flatMap { Timestamp(rfc3339: $0) }
    }

    /// The wire value at a field path, nil when absent.
    func value(at segments: [String]) -> JSON? {
        guard let first = segments.first, var current = data[first] else { return nil }
        for s in segments.dropFirst() {
            guard let next = current[s] else { return nil }
            current = next
        }
        return current
    }
}
