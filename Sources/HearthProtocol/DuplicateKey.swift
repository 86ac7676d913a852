import HearthModel

/// A key that appears more than once in one object of a parsed document, and where that object is.
/// `JSONParser` finds it while parsing (every object, at every depth), so a request is checked once for
/// all of its fields, its write data, its queries and the writes of a commit.
public struct DuplicateKey: Sendable, Equatable {
    public enum Step: Sendable, Equatable {
        case key(String)
        case index(Int)
    }

    /// The repeated key.
    public let key: String
    /// The path from the document's root to the object holding the key; empty for the root object.
    public let location: [Step]

    public init(key: String, location: [Step]) {
        self.key = key
        self.location = location
    }

    /// True when the key is repeated in the root object itself.
    public var isTopLevel: Bool { location.isEmpty }

    /// `data.a`, `writes[1]`, `` query.`a b` ``: keys as field path segments, indexes in brackets.
    public var locationText: String {
        var text = ""
        for step in location {
            switch step {
            case .key(let k):
                if !text.isEmpty { text += "." }
                text += FieldPath([k]).description
            case .index(let i):
                text += "[\(i)]"
            }
        }
        return text
    }

    /// `duplicate key "path"`, or `duplicate key "a" in data.x` below the top level.
    public var message: String {
        isTopLevel ? "duplicate key \"\(key)\"" : "duplicate key \"\(key)\" in \(locationText)"
    }

    public var error: HearthError { .invalid(message) }
}

extension JSONRef {
    /// The key at tape index `keyIndex` (a member key somewhere inside this value) and the path to its
    /// object. Walks down from here, skipping whole siblings; used only to report an error.
    func duplicateKey(at keyIndex: Int) -> DuplicateKey {
        let key = JSONRef(tape: tape, strings: strings, index: keyIndex).string ?? ""
        var node = self
        var location: [DuplicateKey.Step] = []
        descend: while true {
            if node.isObject {
                for m in node.members {
                    if m.value.index - 1 == keyIndex { break descend }
                    if m.value.index <= keyIndex && keyIndex < m.value.end {
                        location.append(.key(m.key))
                        node = m.value
                        continue descend
                    }
                }
            } else if node.isArray {
                for (i, e) in node.elements.enumerated() where e.index <= keyIndex && keyIndex < e.end {
                    location.append(.index(i))
                    node = e
                    continue descend
                }
            }
            break
        }
        return DuplicateKey(key: key, location: location)
    }
}
