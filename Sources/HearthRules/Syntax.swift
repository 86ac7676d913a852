/// The parsed rules file, before names are resolved.
enum Syntax {
    struct File {
        var version: Int
        var versionPos: SourcePos?
        var servicePos: SourcePos
        var functions: [Function]
        var matches: [Match]
    }

    /// One segment of a match path: `users`, `{uid}` or `{rest=**}`.
    enum PatternSegment {
        case literal(String)
        case variable(String)
        case rest(String)
    }

    struct Match {
        var pos: SourcePos
        var segments: [(PatternSegment, SourcePos)]
        var pattern: String
        var functions: [Function]
        var allows: [Allow]
        var matches: [Match]
    }

    struct Allow {
        var pos: SourcePos
        var methods: [(String, SourcePos)]
        var condition: Expr?
    }

    struct Function {
        var pos: SourcePos
        var name: String
        var params: [(String, SourcePos)]
        var lets: [(String, Expr, SourcePos)]
        var body: Expr
    }

    /// One piece of a path-literal segment: text, or `$(expression)`.
    enum PathPiece {
        case text(String)
        case interpolation(Expr)
    }

    struct Expr {
        var kind: Kind
        var pos: SourcePos
        init(_ kind: Kind, _ pos: SourcePos) {
            self.kind = kind
            self.pos = pos
        }
    }

    indirect enum Kind {
        case null
        case bool(Bool)
        case int(Int64)
        case float(Double)
        case string(String)
        case identifier(String)
        case member(Expr, String)
        case index(Expr, Expr)
        case slice(Expr, Expr?, Expr?)
        case call(Expr, [Expr])
        case unary(String, Expr)
        case binary(String, Expr, Expr)
        case ternary(Expr, Expr, Expr)
        case isType(Expr, String)
        case list([Expr])
        case map([(Expr, Expr)])
        case path([[PathPiece]])
    }
}
