import COpenSSL

/// Comparison of secrets (admin keys) whose time does not depend on where the inputs differ.
public enum ConstantTime {
    /// True when `a` and `b` hold the same bytes. Both are hashed with SHA-256 and the digests compared with
    /// OpenSSL's CRYPTO_memcmp, so the time depends only on the two lengths, never on the contents.
    public static func equal(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        a.withUnsafeBufferPointer { pa in
            b.withUnsafeBufferPointer { pb in
                hearth_secret_equal(pa.baseAddress, pa.count, pb.baseAddress, pb.count) == 1
            }
        }
    }

    /// `equal` over the UTF-8 bytes of two strings.
    public static func equal(_ a: String, _ b: String) -> Bool {
        equal(Array(a.utf8), Array(b.utf8))
    }
}
