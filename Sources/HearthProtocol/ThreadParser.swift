#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// One `JSONParser` per thread, for Sendable entry points (like `FieldsJSON`) that cannot carry a parser.
/// Only `FieldsJSON` uses it, and never while refs from an earlier parse on it are still in use.
enum ThreadParser {
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        #if canImport(Darwin)
        let rc = pthread_key_create(&key) { Unmanaged<JSONParser>.fromOpaque($0).release() }
        #else
        let rc = pthread_key_create(&key) { p in if let p { Unmanaged<JSONParser>.fromOpaque(p).release() } }
        #endif
        precondition(rc == 0, "pthread_key_create failed")
        return key
    }()

    /// This thread's parser (created on first use, released when the thread exits).
    static var current: JSONParser {
        if let p = pthread_getspecific(key) { return Unmanaged<JSONParser>.fromOpaque(p).takeUnretainedValue() }
        let parser = JSONParser()
        pthread_setspecific(key, Unmanaged.passRetained(parser).toOpaque())
        return parser
    }
}
