import Foundation
import HearthClient

// Example code: three flows from apps written for Cloud Firestore, ported to HearthClient. Apart from how
// `db` is made, each function is what a Firestore developer would write; the Hearth-only calls
// (`WriteBatch.createDocument`, `Hearth.getAll`) are marked. `SeedExamplesTests` runs them against a daemon.

// MARK: - 1. Departments and memberships

/// A department. New documents hold the display name under `departmentName` and, while older app versions
/// are still around, also under the legacy key `name`; documents written before the rename have only
/// `name`. The document ID is also stored as `departmentId`, so queries and references can use it.
struct Department: Codable, Identifiable {
    @DocumentID var id: String?
    var departmentId: String?
    var departmentName: String?
    var name: String?
    var description: String
    var creatorId: String
    var creatorName: String
    @ServerTimestamp var createdAt: Timestamp?
    var memberCount: Int

    /// The name to show: the new key wins, the legacy one keeps old documents readable.
    var displayName: String { departmentName ?? name ?? "" }
}

/// One user's membership of one department, at `department_memberships/{userId}_{departmentId}`: the
/// deterministic ID is what makes "join twice" detectable.
struct DepartmentMembership: Codable, Identifiable {
    @DocumentID var id: String?
    var userId: String
    var departmentId: String
    var departmentName: String
    @ServerTimestamp var joinedAt: Timestamp?

    static func documentID(userId: String, departmentId: String) -> String { "\(userId)_\(departmentId)" }
}

enum DepartmentError: Error, Equatable {
    /// The user is already a member of the department.
    case alreadyJoined
    /// The department has no document ID (it was never saved).
    case invalidDepartment
    /// The user is not a member (leaving twice).
    case notMember
}

/// Creates a department and its creator's membership in one atomic batch.
///
/// The ID is allocated on the client with `document()` (rather than `addDocument`) so it can be written
/// into the document itself as `departmentId`, and into the membership, in the same write. Either both
/// documents exist afterwards or neither does; `memberCount` starts at 1 for the creator.
@discardableResult
func createDepartment(db: Hearth, name: String, description: String,
                      creatorId: String, creatorName: String) async throws -> String {
    let departmentRef = db.collection("departments").document()
    let departmentId = departmentRef.documentID

    let membershipRef = db.collection("department_memberships")
        .document(DepartmentMembership.documentID(userId: creatorId, departmentId: departmentId))

    let batch = db.batch()
    batch.setData([
        "departmentId": departmentId,
        "departmentName": name,          // new key
        "name": name,                    // legacy key, written during the migration only
        "description": description,
        "creatorId": creatorId,
        "creatorName": creatorName,
        "createdAt": FieldValue.serverTimestamp(),
        "memberCount": 1,
    ], forDocument: departmentRef)
    batch.setData([
        "userId": creatorId,
        "departmentId": departmentId,
        "departmentName": name,
        "joinedAt": FieldValue.serverTimestamp(),
    ], forDocument: membershipRef)
    try await batch.commit()
    return departmentId
}

/// Adds `userId` to `department`: creates the membership and increments `memberCount` in one atomic
/// batch. The membership is written with `createDocument` (Hearth extra), so a second join fails the whole
/// batch with `.alreadyExists` and the count is not incremented again; that turns into
/// `DepartmentError.alreadyJoined`. The check holds under concurrency, unlike a read-then-write check
/// against the memberships the app happens to have loaded.
func joinDepartment(db: Hearth, _ department: Department, userId: String) async throws {
    guard let departmentId = department.id else { throw DepartmentError.invalidDepartment }
    let membershipRef = db.collection("department_memberships")
        .document(DepartmentMembership.documentID(userId: userId, departmentId: departmentId))

    let batch = db.batch()
    batch.createDocument([
        "userId": userId,
        "departmentId": departmentId,
        "departmentName": department.displayName,
        "joinedAt": FieldValue.serverTimestamp(),
    ], forDocument: membershipRef)
    batch.updateData(["memberCount": FieldValue.increment(Int64(1))],
                     forDocument: db.collection("departments").document(departmentId))
    do {
        try await batch.commit()
    } catch let error as HearthError where error.code == .alreadyExists {
        throw DepartmentError.alreadyJoined
    }
}

/// Leave: the reverse of a join, also exact. A transaction reads the membership (so its commit carries the
/// membership's updateTime as a precondition), deletes it and decrements `memberCount` in one commit; a
/// concurrent second leave of the same user loses the race, re-reads, and is refused.
func leaveDepartment(db: Hearth, departmentId: String, userId: String) async throws {
    let membershipRef = db.collection("department_memberships")
        .document(DepartmentMembership.documentID(userId: userId, departmentId: departmentId))
    let departmentRef = db.collection("departments").document(departmentId)
    try await db.runTransaction { transaction in
        guard try await transaction.getDocument(membershipRef).exists else { throw DepartmentError.notMember }
        transaction.deleteDocument(membershipRef)
        transaction.updateData(["memberCount": FieldValue.increment(Int64(-1))], forDocument: departmentRef)
    }
}

/// Loads one department (decoded with `Codable`; old documents with only `name` decode too).
func fetchDepartment(db: Hearth, id: String) async throws -> Department {
    try await db.collection("departments").document(id).getDocument(as: Department.self)
}

/// The memberships of one user, as the app shows them in "my departments".
func fetchUserMemberships(db: Hearth, userId: String) async throws -> [DepartmentMembership] {
    let snapshot = try await db.collection("department_memberships")
        .whereField("userId", isEqualTo: userId)
        .getDocuments()
    return try snapshot.documents.map { try $0.data(as: DepartmentMembership.self) }
}

// MARK: - 2. Customers' call records

/// A call with a customer, in the root collection `call_records`, joined to its customer by `customerId`.
/// `callDate` is a timestamp (a `Date` in Swift), not formatted text: text dates do not sort by time.
struct CallRecord: Codable, Identifiable, Equatable {
    @DocumentID var id: String?
    var customerId: String
    var title: String
    var description: String
    var callDate: Date
}

/// Saves a call record for a customer; the ID is allocated by the database.
@discardableResult
func addCallRecord(db: Hearth, _ record: CallRecord) async throws -> String {
    try await db.collection("call_records").addDocument(from: record).documentID
}

/// Listens to a customer's 20 most recent calls, newest first. `onUpdate` gets the whole list on every
/// change, or an error once if the listener ends (for instance when the composite index on
/// `call_records (customerId asc, callDate desc)` is missing). Keep the registration and `remove()` it when
/// the screen goes away.
func listenToCallRecords(db: Hearth, customerId: String,
                         onUpdate: @escaping @Sendable (Result<[CallRecord], Error>) -> Void) -> ListenerRegistration {
    db.collection("call_records")
        .whereField("customerId", isEqualTo: customerId)
        .order(by: "callDate", descending: true)
        .limit(to: 20)
        .addSnapshotListener { snapshot, error in
            guard let snapshot else {
                onUpdate(.failure(error!))
                return
            }
            do {
                onUpdate(.success(try snapshot.documents.map { try $0.data(as: CallRecord.self) }))
            } catch {
                onUpdate(.failure(error))
            }
        }
}

// MARK: - 3. Follower timelines

/// A post, at `posts/{postId}`.
struct Post: Codable, Identifiable, Equatable {
    @DocumentID var id: String?
    var caption: String
    var ownerUid: String
    var ownerUsername: String
    var likes: Int
    var timestamp: Timestamp
}

/// An entry of a user's timeline, at `users/{uid}/user-feed/{postId}`: the ID is the post's, and the
/// entry carries what the feed is sorted and filtered by, so a page of the feed is one query.
struct FeedEntry: Codable, Identifiable {
    @DocumentID var id: String?
    var ownerUid: String
    var timestamp: Timestamp
}

/// Publishes a post and fans it out to the author's own feed and each follower's feed, in one batch so a
/// post never shows up half-delivered. The caller passes the followers; with follows and unfollows
/// happening concurrently, read them in a transaction on the author's document instead, as
/// `Timeline.post` does (docs/guides/timelines.md).
@discardableResult
func publishPost(db: Hearth, caption: String, ownerUid: String, ownerUsername: String,
                 followerUids: [String], at date: Date = Date()) async throws -> String {
    let postRef = db.collection("posts").document()
    let timestamp = Timestamp(date: date)
    let batch = db.batch()
    batch.setData([
        "caption": caption,
        "ownerUid": ownerUid,
        "ownerUsername": ownerUsername,
        "likes": 0,
        "timestamp": timestamp,
    ], forDocument: postRef)
    for uid in [ownerUid] + followerUids {
        batch.setData(["ownerUid": ownerUid, "timestamp": timestamp],
                      forDocument: db.collection("users").document(uid).collection("user-feed").document(postRef.documentID))
    }
    try await batch.commit()
    return postRef.documentID
}

/// One page of a user's timeline: the posts, newest first, and the cursor for the next page (nil when
/// this page is the last).
struct FeedPage {
    var posts: [Post]
    var cursor: DocumentSnapshot?
}

/// Fetches a page of `uid`'s timeline: `pageSize` feed entries newest first, starting after `cursor` (the
/// last entry of the previous page), then the full posts in one round trip with `getAll` (Hearth extra;
/// with Firestore, one `getDocument` per entry). Entries whose post was deleted are skipped.
func fetchFeedPage(db: Hearth, uid: String, pageSize: Int = 10, after cursor: DocumentSnapshot? = nil) async throws -> FeedPage {
    var query = db.collection("users").document(uid).collection("user-feed")
        .order(by: "timestamp", descending: true)
        .limit(to: pageSize)
    if let cursor { query = query.start(afterDocument: cursor) }
    let entries = try await query.getDocuments().documents
    if entries.isEmpty { return FeedPage(posts: [], cursor: nil) }

    let postRefs = entries.map { db.collection("posts").document($0.documentID) }
    let snapshots = try await db.getAll(postRefs)
    let posts = try snapshots.filter(\.exists).map { try $0.data(as: Post.self) }
    return FeedPage(posts: posts, cursor: entries.count == pageSize ? entries.last : nil)
}
