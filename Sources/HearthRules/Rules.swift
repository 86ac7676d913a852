import HearthModel

/// Compiled Firestore Security Rules (the subset docs/rules.md lists), ready to judge requests.
///
/// A request is allowed when any `allow` statement for its method, in any `match` block whose full path
/// matches (overlapping matches included), evaluates to true. `read` covers get and list; `write` covers
/// create, update and delete. No matching allow denies. An evaluation error (a missing field, a wrong type, a
/// null dereference, `get()` of a missing document then `.data`, more document reads than the budget)
/// makes that allow statement false; the others may still allow, and a denial names the first error.
/// `{name=**}` matches zero or more segments with rules_version '2' (one or more, last segment only, with '1')
/// and binds a path.
///
/// **Rules are not filters.** A `list` request is judged from its query, never from stored documents:
/// - the query's filter is expanded into cases: one per disjunct of its disjunctive normal form and per
///   value of each `in` filter; every case must be allowed (by some allow statement);
/// - in a case, `resource.data.f` is the value the query pins with `f == v` (or the case's `in` value);
///   `resource.id` and `resource.__name__` come from a `__name__ ==`/`in` filter; `resource != null` is true;
/// - a comparison `resource.data.f < c` (`<=`, `>`, `>=`, `==`, `!=`) on a field the query bounds with range
///   filters is true when every value in the bounds satisfies it, false when none does;
/// - anything else that needs an unpinned field, the document ID or a path variable spanning unknown segments
///   makes the allow undecidable: the request is denied with the allow's position and the field the query
///   must constrain;
/// - `request.query.limit` is the query's limit (or limitToLast), null without one; `offset` an int;
///   `orderBy` a map from field path to 'ASC'/'DESC' of the explicit orderBys;
/// - a collection query over `a/x/b` matches rule paths as the documents `a/x/b/{id}` with `{id}` unknown; a
///   collection-group query over `g` (under `parent`) matches only rule paths whose recursive wildcard spans
///   the unknown ancestors, such as `/{path=**}/g/{id}` (rules_version '2').
public final class Rules: Sendable {
    let program: Program
    let file: String
    /// "allowed by file:line:column" for each allow statement, built once.
    let allowReasons: [String]

    /// The number of allow statements and functions, for `hearth rules check`.
    public var ruleCount: Int { program.allowCount }
    public var functionCount: Int { program.functions.count }

    init(program: Program, file: String) {
        self.program = program
        self.file = file
        var reasons = [String](repeating: "", count: program.allowCount)
        func collect(_ node: MatchNode) {
            for a in node.allows { reasons[a.id] = "allowed by \(file):\(a.pos.line):\(a.pos.column)" }
            node.children.forEach(collect)
        }
        program.roots.forEach(collect)
        allowReasons = reasons
    }

    /// Parses and checks a rules file; anything outside the supported subset is refused with its position and
    /// what is not supported (never ignored).
    public static func compile(_ source: String, file: String) throws(RulesError) -> Rules {
        do {
            var parser = try Parser(source)
            let syntax = try parser.parseFile()
            var compiler = Compiler(syntax)
            return Rules(program: try compiler.compile(), file: file)
        } catch {
            throw RulesError(file: file, line: Int(error.pos.line), column: Int(error.pos.column), message: error.message)
        }
    }

    /// False when no allow condition for `method` reads `resource` (directly or through a function): the
    /// caller may then leave `RuleRequest.resource` nil without reading or decoding the stored document.
    /// (`resource == null` is then never evaluated, so the answer cannot depend on it.)
    public func readsResource(_ method: RuleMethod) -> Bool {
        program.resourceMethods & CompiledAllow.bit(method) != 0
    }

    public func evaluate(_ request: RuleRequest, reader: any RuleDocumentReader) -> RuleDecision {
        var judge = Judgement(rules: self, request: request, reader: reader)
        return judge.run()
    }

    func position(_ pos: SourcePos) -> String { "\(file):\(pos.line):\(pos.column)" }
}

/// One evaluation: walks the match tree for the request's path, evaluates the applicable allows and keeps
/// the first error for the denial reason.
struct Judgement {
    let rules: Rules
    let request: RuleRequest
    var evaluator: Evaluator
    let bit: UInt8
    var firstError: (allow: SourcePos, error: EvalError, pattern: String)?
    var falseAllows: [SourcePos] = []
    /// The allow statement that allowed the request (its index in `Program`).
    var allowedBy: Int?

    init(rules: Rules, request: RuleRequest, reader: any RuleDocumentReader) {
        self.rules = rules
        self.request = request
        evaluator = Evaluator(program: rules.program, request: request, reader: reader)
        bit = CompiledAllow.bit(request.method)
    }

    mutating func run() -> RuleDecision {
        if request.method == .list {
            return runList()
        }
        guard let path = request.path else {
            return RuleDecision(allowed: false, reason: "\(request.method.rawValue) needs a document path", reads: [])
        }
        let segments = path.path.segments
        for (root, slot) in zip(rules.program.roots, rules.program.databaseSlots) {
            evaluator.slots[slot] = .string("(default)")
            if visit(root, segments, 0) { break }
        }
        return decision(subject: "\(request.method.rawValue) on \(RulePath(document: path).description)")
    }

    func decision(subject: @autoclosure () -> String) -> RuleDecision {
        if let id = allowedBy {
            return RuleDecision(allowed: true, reason: rules.allowReasons[id], reads: evaluator.reads)
        }
        if let (allow, error, pattern) = firstError {
            if error.undecidable {
                return RuleDecision(allowed: false, reason: "\(rules.position(allow)): list on \(pattern) \(error.message)",
                                    reads: evaluator.reads)
            }
            return RuleDecision(allowed: false, reason: "\(rules.position(error.pos)): error evaluating the condition: \(error.message) (denied)",
                                reads: evaluator.reads)
        }
        if !falseAllows.isEmpty {
            let where_ = falseAllows.prefix(5).map(rules.position).joined(separator: ", ")
            return RuleDecision(allowed: false, reason: "no rule allows \(subject()): the condition\(falseAllows.count == 1 ? " is" : "s are") false at \(where_)",
                                reads: evaluator.reads)
        }
        return RuleDecision(allowed: false, reason: "no rule allows \(subject())", reads: evaluator.reads)
    }

    /// Matches `node`'s segments against `path[i...]`, then evaluates its allows (when the path is used up)
    /// or descends into its children. Returns true once an allow holds.
    mutating func visit(_ node: MatchNode, _ path: [String], _ i: Int) -> Bool {
        guard node.methodsBelow & bit != 0 else { return false }
        return matchSegments(node, 0, path, i)
    }

    mutating func matchSegments(_ node: MatchNode, _ k: Int, _ path: [String], _ i: Int) -> Bool {
        if k == node.segments.count { return reached(node, path, i) }
        switch node.segments[k] {
        case .literal(let s):
            guard i < path.count, UTF8Order.equal(path[i], s) else { return false }
            return matchSegments(node, k + 1, path, i + 1)
        case .variable(let slot):
            guard i < path.count else { return false }
            evaluator.slots[slot] = .string(path[i])
            return matchSegments(node, k + 1, path, i + 1)
        case .rest(let slot, _):
            let minimum = rules.program.version == 1 ? 1 : 0
            let longest = path.count - i
            guard longest >= minimum else { return false }
            for n in stride(from: longest, through: minimum, by: -1) {
                evaluator.slots[slot] = .path(RulePath(Array(path[i..<(i + n)])))
                if matchSegments(node, k + 1, path, i + n) { return true }
            }
            return false
        }
    }

    mutating func reached(_ node: MatchNode, _ path: [String], _ i: Int) -> Bool {
        if i == path.count {
            for allow in node.allows where allow.methods & bit != 0 {
                if evaluate(allow, node.pattern) { return true }
            }
        }
        for child in node.children where visit(child, path, i) { return true }
        return false
    }

    mutating func evaluate(_ allow: CompiledAllow, _ pattern: String) -> Bool {
        guard let condition = allow.condition else {
            allowedBy = allow.id
            return true
        }
        do {
            if try evaluator.condition(condition) {
                allowedBy = allow.id
                return true
            }
            falseAllows.append(allow.pos)
        } catch {
            if firstError == nil { firstError = (allow.pos, error, pattern) }
        }
        return false
    }
}
