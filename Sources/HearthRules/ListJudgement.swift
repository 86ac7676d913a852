import HearthModel

/// A segment of the documents a list query ranges over: a known ID, the (unknown) document ID, or any number
/// of collection/document pairs (the ancestors of a collection-group query).
enum QuerySegment {
    case literal(String)
    case documentID
    case anyPairs
}

extension Judgement {
    /// Judges a list request from its query alone (see `Rules`): every case of the query must be allowed.
    mutating func runList() -> RuleDecision {
        guard let query = request.query else {
            return RuleDecision(allowed: false, reason: "list needs a query", reads: [])
        }
        let valid: ValidQuery
        do { valid = try query.validated() } catch {
            return RuleDecision(allowed: false, reason: "the query is invalid: \(error.message)", reads: [])
        }
        let path: [QuerySegment]
        let subject: String
        switch valid.target {
        case .collection(let c):
            path = c.path.segments.map(QuerySegment.literal) + [.documentID]
            subject = "list on \(RulePath(RulePath.documentsRoot + c.path.segments).description)"
        case .collectionGroup(let id, let parent):
            path = (parent?.path.segments ?? []).map(QuerySegment.literal) + [.anyPairs, .literal(id), .documentID]
            subject = "list on collection group '\(id)'" + (parent.map { " under \($0)" } ?? "")
        }
        var lastAllow: Int?
        for c in ListCase.cases(of: valid) {
            evaluator.listCase = c
            allowedBy = nil
            firstError = nil
            falseAllows = []
            for (root, slot) in zip(rules.program.roots, rules.program.databaseSlots) {
                evaluator.slots[slot] = .string("(default)")
                if visitList(root, path, 0) { break }
            }
            guard allowedBy != nil else {
                let denied = decision(subject: subject)
                guard !c.otherForms.isEmpty else { return denied }
                // A case the query's own values would not show: say which documents it stands for.
                return RuleDecision(allowed: false, reason: denied.reason + " (for documents holding "
                    + c.otherForms.joined(separator: ", ") + ", which the query returns too: it matches numbers by value)",
                    reads: denied.reads)
            }
            lastAllow = allowedBy
        }
        allowedBy = lastAllow
        return decision(subject: subject)
    }

    mutating func visitList(_ node: MatchNode, _ path: [QuerySegment], _ i: Int) -> Bool {
        guard node.methodsBelow & bit != 0 else { return false }
        return matchList(node, 0, path, i)
    }

    func knownID(_ s: QuerySegment) -> String? {
        switch s {
        case .literal(let t): return t
        case .documentID: return evaluator.listCase?.documentID
        case .anyPairs: return nil
        }
    }

    mutating func matchList(_ node: MatchNode, _ k: Int, _ path: [QuerySegment], _ i: Int) -> Bool {
        if k == node.segments.count {
            if i == path.count {
                for allow in node.allows where allow.methods & bit != 0 {
                    if evaluate(allow, node.pattern) { return true }
                }
            }
            for child in node.children where visitList(child, path, i) { return true }
            return false
        }
        switch node.segments[k] {
        case .literal(let s):
            // A literal must match every document of the query: a known ID equal to it.
            guard i < path.count, let id = knownID(path[i]), UTF8Order.equal(id, s) else { return false }
            return matchList(node, k + 1, path, i + 1)
        case .variable(let slot):
            guard i < path.count else { return false }
            switch path[i] {
            case .anyPairs: return false
            case .literal(let t): evaluator.slots[slot] = .string(t)
            case .documentID: evaluator.slots[slot] = knownID(path[i]).map(RuleValue.string) ?? .symbolic(.documentID)
            }
            return matchList(node, k + 1, path, i + 1)
        case .rest(let slot, let name):
            let minimum = rules.program.version == 1 ? 1 : 0
            let longest = path.count - i
            guard longest >= minimum else { return false }
            for n in stride(from: longest, through: minimum, by: -1) {
                var segments: [String] = []
                var known = true
                for s in path[i..<(i + n)] {
                    guard let id = knownID(s) else { known = false; break }
                    segments.append(id)
                }
                evaluator.slots[slot] = known ? .path(RulePath(segments)) : .symbolic(.wildcard(name))
                if matchList(node, k + 1, path, i + n) { return true }
            }
            return false
        }
    }
}
