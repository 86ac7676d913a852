import HearthModel

/// An internal decoding error: a reason plus the path to the value it concerns, built innermost first as
/// the error unwinds (so the success path never builds paths). `hearthError(root:)` renders
/// `root.a.b[2]: reason` as INVALID_ARGUMENT.
struct DecodeFailure: Error {
    enum Component {
        /// A map key, shown like a field path segment (backticks when not a simple identifier).
        case key(String)
        /// An array index, shown as `[i]`.
        case index(Int)
        /// Text shown as is after a dot (field paths already rendered, operand names like `$arrayUnion`).
        case raw(String)
    }

    var reason: String
    var reversedPath: [Component] = []

    init(_ reason: String) { self.reason = reason }

    func adding(_ c: Component) -> DecodeFailure {
        var f = self
        f.reversedPath.append(c)
        return f
    }

    func hearthError(root: String) -> HearthError {
        var path = root
        for c in reversedPath.reversed() {
            switch c {
            case .key(let k):
                if !path.isEmpty { path += "." }
                path += FieldPath([k]).description
            case .index(let i):
                path += "[\(i)]"
            case .raw(let s):
                if !path.isEmpty { path += "." }
                path += s
            }
        }
        return .invalid(path.isEmpty ? reason : "\(path): \(reason)")
    }
}
