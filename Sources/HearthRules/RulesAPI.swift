import HearthModel

/// A rules file that does not compile: where (1-based line and column) and what is wrong or not supported.
public struct RulesError: Error, Sendable, Equatable, CustomStringConvertible {
    public var file: String
    public var line: Int
    public var column: Int
    public var message: String

    public init(file: String, line: Int, column: Int, message: String) {
        self.file = file
        self.line = line
        self.column = column
        self.message = message
    }

    /// `file:line:column: message`, as compilers print it.
    public var description: String { "\(file):\(line):\(column): \(message)" }
}

/// The request methods rules distinguish; `read` is get + list and `write` is create + update + delete.
public enum RuleMethod: String, Sendable, CaseIterable {
    case get, list, create, update, delete
}

/// The authenticated caller: `request.auth.uid` and `request.auth.token` (all the token's claims).
public struct RuleAuth: Sendable {
    public var uid: String
    public var token: MapValue
    public init(uid: String, token: MapValue) {
        self.uid = uid
        self.token = token
    }
}

/// Everything a rule may look at besides other documents.
public struct RuleRequest: Sendable {
    public var method: RuleMethod
    /// get/create/update/delete: the document.
    public var path: DocumentPath?
    /// list: the query (collection or collection group); judged from its own constraints.
    public var query: Query?
    /// nil: `request.auth` is null.
    public var auth: RuleAuth?
    /// `request.time`.
    public var time: Timestamp
    /// The stored document before the request (nil when absent: `resource` is null).
    public var resource: MapValue?
    /// create/update: the document after the write, transforms applied (`request.resource`).
    public var requestResource: MapValue?
    /// The `get()`/`exists()`/`getAfter()`/`existsAfter()` budget in distinct documents (Firestore: 10 for a
    /// single-document request, 20 for a commit).
    public var maxDocumentReads: Int

    public init(method: RuleMethod, path: DocumentPath? = nil, query: Query? = nil, auth: RuleAuth? = nil,
                time: Timestamp, resource: MapValue? = nil, requestResource: MapValue? = nil,
                maxDocumentReads: Int = 10) {
        self.method = method
        self.path = path
        self.query = query
        self.auth = auth
        self.time = time
        self.resource = resource
        self.requestResource = requestResource
        self.maxDocumentReads = maxDocumentReads
    }
}

/// How rules read other documents (`get()`, `exists()`, `getAfter()`, `existsAfter()`).
public protocol RuleDocumentReader {
    /// The published state, nil when absent.
    func get(_ path: DocumentPath) -> MapValue?
    /// The state after the commit being judged (the same as `get` outside a commit).
    func getAfter(_ path: DocumentPath) -> MapValue?
}

/// A reader for rules that read no other documents: every document is absent.
public struct NoDocumentReader: RuleDocumentReader {
    public init() {}
    public func get(_ path: DocumentPath) -> MapValue? { nil }
    public func getAfter(_ path: DocumentPath) -> MapValue? { nil }
}

/// The outcome of `Rules.evaluate`.
public struct RuleDecision: Sendable {
    public var allowed: Bool
    /// For a denial, what denied it (the rule position and the first error, the field a query must constrain,
    /// or that no rule allows the method on the path); for an allow, the position of the allowing statement.
    public var reason: String
    /// Documents read by get()/exists()/getAfter()/existsAfter() while deciding (a listener's re-check
    /// dependencies), each once, in the order first read.
    public var reads: [DocumentPath]

    public init(allowed: Bool, reason: String, reads: [DocumentPath]) {
        self.allowed = allowed
        self.reason = reason
        self.reads = reads
    }
}
