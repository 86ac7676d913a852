import HearthProtocol

extension JSONRef {
    /// Calls `body` with each member's key and value, in document order.
    func forEachMember(_ body: (String, JSONRef) -> Void) {
        for m in members { body(m.key, m.value) }
    }

    /// Calls `body` with each element, in order.
    func forEachElement(_ body: (JSONRef) -> Void) {
        for e in elements { body(e) }
    }

    /// A string or number re-encoded as JSON, for echoing request ids verbatim.
    var rawJSON: [UInt8] {
        var w = JSONWriter(capacity: 32)
        switch kind {
        case .string: w.string(string!)
        case .int: w.int(int64!)
        case .double: w.double(double!)
        default: w.null()
        }
        return w.bytes
    }
}

extension JSONRef.Kind {
    /// "a string", "an object", ... for error messages.
    var article: String {
        switch self {
        case .int, .array, .object: return "an \(name)"
        default: return "a \(name)"
        }
    }
}
