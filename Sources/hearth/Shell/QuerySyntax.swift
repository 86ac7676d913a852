import HearthProtocol

/// The words form of a query, shared by the shell's `query`/`count`/`listen` and `hearth query`:
///
///     COLLECTION [where FIELD OP VALUE [and FIELD OP VALUE]...] [order by FIELD [asc|desc][, FIELD [asc|desc]]...]
///                [limit N] [select FIELD[,FIELD...]]
///
/// OP is one of `== != < <= > >= in not-in array-contains array-contains-any`. VALUE is JSON (`"c1"`, `30`,
/// `true`, `[1,2]`, `{"$timestamp":"2026-11-01T00:00:00Z"}`) or a bare word, taken as a string. On the command
/// line, a value the shell's quotes kept together is one value: `where name == 'Ada Lovelace'`.
enum QuerySyntax {
    static let operators: Set<String> = ["==", "!=", "<", "<=", ">", ">=", "in", "not-in", "array-contains", "array-contains-any"]
    static let usage = "COLLECTION [where F OP V [and ...]] [order by F [desc], ...] [limit N] [select F,...]"

    /// Parses the words into the query op's fields (written into `w` after `op` and `id`).
    static func parse(_ a: inout ShortFormArguments, into w: inout JSONWriter) throws(UsageError) {
        let collection = try a.word("COLLECTION")
        w.key("collection"); w.string(collection)
        var filters: [(String, String, [UInt8])] = []
        var orders: [(String, String)] = []
        var limit: Int?
        var select: [String]?
        while let keyword = a.optionalWord() {
            switch keyword.lowercased() {
            case "where", "and":
                let field = try a.word("a field after '\(keyword)'")
                let op = try a.word("an operator after '\(field)'")
                guard operators.contains(op) else { throw UsageError("unknown operator '\(op)' (use one of \(operators.sorted().joined(separator: " ")))") }
                guard let value = a.token() else { throw UsageError("missing a value after '\(field) \(op)'") }
                filters.append((field, op, try jsonValue(value)))
            case "order":
                guard a.optionalWord()?.lowercased() == "by" else { throw UsageError("expected 'order by'") }
                var more = true
                while more {
                    var field = try a.word("a field after 'order by'")
                    more = field.hasSuffix(",")
                    if more { field.removeLast() }
                    var direction = "asc"
                    if !more, let next = a.peekWord()?.lowercased(), ["asc", "desc", "asc,", "desc,"].contains(next) {
                        _ = a.optionalWord()
                        more = next.hasSuffix(",")
                        direction = more ? String(next.dropLast()) : next
                    }
                    if !more, a.peekWord() == "," { _ = a.optionalWord(); more = true }
                    orders.append((field, direction))
                }
            case "limit":
                guard let n = Int(try a.word("a number after 'limit'")), n >= 0 else { throw UsageError("limit must be a whole number") }
                limit = n
            case "select":
                select = Commands.fieldPathList(try a.word("fields after 'select'"))
            default:
                throw UsageError("unexpected '\(keyword)' (expected where, and, order by, limit or select)")
            }
        }
        if !filters.isEmpty {
            w.key("where")
            w.beginArray()
            for (f, op, v) in filters {
                w.beginArray(); w.string(f); w.string(op); w.raw(v); w.endArray()
            }
            w.endArray()
        }
        if !orders.isEmpty {
            w.key("orderBy")
            w.beginArray()
            for (f, d) in orders { w.beginArray(); w.string(f); w.string(d); w.endArray() }
            w.endArray()
        }
        if let limit { w.key("limit"); w.int(Int64(limit)) }
        if let select {
            w.key("select")
            w.beginArray()
            for f in select { w.string(f) }
            w.endArray()
        }
    }

    /// A JSON token as is (validated), a bare word as a JSON string.
    static func jsonValue(_ token: String) throws(UsageError) -> [UInt8] {
        let first = token.first ?? " "
        if "{[\"-0123456789".contains(first) || ["true", "false", "null"].contains(token) {
            let parser = JSONParser()
            do { _ = try parser.parse(token) } catch { throw UsageError("value \(token) is not valid JSON: \(error.message)") }
            return Array(token.utf8)
        }
        var w = JSONWriter(capacity: token.utf8.count + 8)
        w.string(token)
        return w.bytes
    }
}

extension ShortFormArguments {
    /// The next token: a JSON object, array or string taken whole (it may contain spaces), else a word.
    mutating func token() -> String? {
        if let whole = wholeArgumentValue() { return whole }
        _ = refill()
        guard let first = rest.first else { return nil }
        guard first == "{" || first == "[" || first == "\"" else { return optionalWord() }
        var depth = 0
        var inString = false
        var escaped = false
        var end = rest.startIndex
        for i in rest.indices {
            let c = rest[i]
            end = rest.index(after: i)
            if inString {
                if escaped { escaped = false } else if c == "\\" { escaped = true } else if c == "\"" { inString = false }
                if !inString && depth == 0 { break }
                continue
            }
            if c == "\"" { inString = true } else if c == "{" || c == "[" { depth += 1 } else if c == "}" || c == "]" {
                depth -= 1
                if depth == 0 { break }
            }
        }
        let token = String(rest[..<end])
        rest = rest[end...]
        return token
    }

    /// The next word without consuming it.
    func peekWord() -> String? {
        var copy = self
        return copy.optionalWord()
    }
}
