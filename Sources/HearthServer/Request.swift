import HearthModel
import HearthProtocol

/// A parsed request line: its op, its echoed id (pre-encoded JSON), and typed access to its fields with
/// errors that name the field. Valid only while the line is being dispatched.
///
/// Messages never name the op: `Dispatcher` puts `op: ` before every error a handler throws, once, so
/// helpers, decoders and handlers say only what is wrong (`field "path" is required`).
struct Request {
    let op: String
    let body: JSONRef
    /// The whole line the request was parsed from (valid as long as `body`).
    let line: UnsafeRawBufferPointer
    /// The request's `id` as JSON bytes, echoed verbatim; nil when absent.
    let id: [UInt8]?

    func field(_ name: String) -> JSONRef? {
        guard let v = body[name], v.kind != .null else { return nil }
        return v
    }

    /// For an op whose fields depend on its `action`: refuses a field (not null) that `action` does not use,
    /// so that a typo or a misplaced field is not silently ignored (the command table allows the union).
    func refuseFields(notIn used: Set<String>, for action: String) throws(HearthError) {
        var unused: String?
        body.forEachMember { key, value in
            if unused == nil, key != "op", key != "id", key != "action", value.kind != .null, !used.contains(key) { unused = key }
        }
        guard let unused else { return }
        let takes = used.isEmpty ? "no other field" : used.sorted().map { "\"\($0)\"" }.joined(separator: ", ")
        throw .invalid("field \"\(unused)\" is not used by action \"\(action)\" (it takes \(takes))")
    }

    func require(_ name: String) throws(HearthError) -> JSONRef {
        guard let v = field(name) else { throw .invalid("field \"\(name)\" is required") }
        return v
    }

    func string(_ name: String) throws(HearthError) -> String {
        let v = try require(name)
        guard v.kind == .string else { throw mistyped(name, v, "a string") }
        return v.string!
    }

    func optionalString(_ name: String) throws(HearthError) -> String? {
        guard let v = field(name) else { return nil }
        guard v.kind == .string else { throw mistyped(name, v, "a string") }
        return v.string!
    }

    func optionalBool(_ name: String) throws(HearthError) -> Bool? {
        guard let v = field(name) else { return nil }
        guard v.kind == .bool else { throw mistyped(name, v, "true or false") }
        return v.bool!
    }

    /// An integer within `min...max`; the message of every refusal states the range.
    func optionalInt(_ name: String, min: Int64 = 0, max: Int64 = Int64.max) throws(HearthError) -> Int64? {
        guard let v = field(name) else { return nil }
        let expected = "an integer from \(min) to \(max)"
        guard v.kind == .int, let i = v.int64 else { throw mistyped(name, v, expected) }
        guard i >= min && i <= max else { throw .invalid("field \"\(name)\" must be \(expected), got \(i)") }
        return i
    }

    func object(_ name: String) throws(HearthError) -> JSONRef {
        let v = try require(name)
        guard v.kind == .object else { throw mistyped(name, v, "an object") }
        return v
    }

    func array(_ name: String) throws(HearthError) -> JSONRef {
        let v = try require(name)
        guard v.kind == .array else { throw mistyped(name, v, "an array") }
        return v
    }

    func documentPath(_ name: String = "path") throws(HearthError) -> DocumentPath {
        let text = try string(name)
        do {
            return try DocumentPath(parsing: text)
        } catch {
            throw .invalid("field \"\(name)\": \(error.message)")
        }
    }

    func collectionPath(_ name: String = "collection") throws(HearthError) -> CollectionPath {
        let text = try string(name)
        do {
            return try CollectionPath(parsing: text)
        } catch {
            throw .invalid("field \"\(name)\": \(error.message)")
        }
    }

    func mistyped(_ name: String, _ v: JSONRef, _ expected: String) -> HearthError {
        .invalid("field \"\(name)\" must be \(expected), not \(v.kind.article)")
    }
}
