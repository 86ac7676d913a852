/// Why talking to the daemon failed. Every case exits with code 3.
enum ClientError: Error, CustomStringConvertible {
    /// Could not reach the daemon (refused, unreachable, bad address, connect timeout).
    case connect(String)
    /// The daemon closed the connection while a response was owed.
    case closed
    /// No complete response within the timeout.
    case timeout(seconds: Double)
    /// A socket call failed.
    case io(String)

    var description: String {
        switch self {
        case .connect(let m): return m
        case .closed: return "the daemon closed the connection before answering"
        case .timeout(let s): return "no response within \(s) s"
        case .io(let m): return m
        }
    }
}
