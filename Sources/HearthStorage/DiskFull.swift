import HearthModel

/// The one way a store reports that its disk is full, so the server can tell it from other failures: the code
/// is RESOURCE_EXHAUSTED and the message starts with `storage: disk full: `, then names the operation.
extension HearthError {
    /// A store operation failed for want of space (SQLite's SQLITE_FULL, or an I/O error with ENOSPC).
    public static func diskFull(_ detail: String) -> HearthError {
        HearthError(.resourceExhausted, diskFullPrefix + detail)
    }

    /// True for an error made by `diskFull(_:)`, also after the engine put "commit not durable: " before it.
    public var isDiskFull: Bool {
        code == .resourceExhausted && message.contains(HearthError.diskFullPrefix)
    }

    static let diskFullPrefix = "storage: disk full: "
}
