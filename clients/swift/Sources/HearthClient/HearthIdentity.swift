import Foundation

/// Who the server accepted a connection as: the answer's `auth` to a hello with credentials.
public struct HearthIdentity: Sendable, Equatable {
    /// The token's subject (`request.auth.uid` in rules); nil for the admin.
    public let uid: String?
    /// True for the admin key.
    public let isAdmin: Bool
    /// When the token expires (the connection's identity lapses then unless refreshed); nil for the admin.
    public let expiresAt: Date?

    public init(uid: String?, isAdmin: Bool, expiresAt: Date?) {
        self.uid = uid
        self.isAdmin = isAdmin
        self.expiresAt = expiresAt
    }

    /// From a hello answer's `auth` object; nil when there is none.
    init?(auth: JSON?) {
        guard let auth, auth.objectValue != nil else { return nil }
        uid = auth["uid"]?.stringValue
        isAdmin = auth["admin"]?.boolValue ?? false
        expiresAt = auth["expiresAt"]?.intValue.map { Date(timeIntervalSince1970: TimeInterval($0)) }
    }
}
