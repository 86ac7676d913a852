/// The customer-screen query: call records of one random customer (`c00000`..`c<keys-1>`, five digits, as
/// clients/python/bench/call_records.py loads them), newest first, 20 at a time. Needs the composite
/// index (customerId asc, callDate desc), which that loader declares.
final class QueryScenario: BenchScenario {
    private let template = RequestTemplate([
        .text(#"{"op":"query","collection":"call_records","where":[["customerId","==","c"#),
        .key(width: 5),
        .text(#""]],"orderBy":[["callDate","desc"]],"limit":20}"#),
    ])
    private let customers: UInt64
    var maxRequestBytes: Int { template.count }

    init(customers: Int) { self.customers = UInt64(max(1, min(customers, 99_999))) }

    func writeRequest(into buffer: UnsafeMutableRawPointer, state: inout RequestState) -> Int {
        template.write(into: buffer, key: state.random.below(customers))
    }
}
