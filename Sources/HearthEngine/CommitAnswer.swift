import HearthModel
import HearthStorage

/// A commit's answer as kept with its request ID (`CommitRecord.request`), so a retry of the write is
/// answered exactly as the write was: its seq, commit time, and each write's path, update time and transform
/// results. Encoded with the engine's document codec, as a map: `{"t": commit time, "r": [{"p": path,
/// "u": update time, "x": [transform results]}]}`. Pure.
enum CommitAnswer {
    static func encode(commitTime: Timestamp, results: [WriteResult], codec: any DocumentCodec) -> [UInt8] {
        let rows: [Value] = results.map { r in
            .map(MapValue([MapValue.Field(key: "p", value: .string(r.path.description)),
                           MapValue.Field(key: "u", value: .timestamp(r.updateTime)),
                           MapValue.Field(key: "x", value: .array(r.transformResults))]))
        }
        return codec.encode(MapValue([MapValue.Field(key: "t", value: .timestamp(commitTime)),
                                      MapValue.Field(key: "r", value: .array(rows))]))
    }

    /// The outcome of the commit at `seq` whose answer is `bytes`; DATA_LOSS when they do not decode.
    static func decode(_ bytes: [UInt8], seq: UInt64, codec: any DocumentCodec) throws(HearthError) -> CommitOutcome {
        func damaged(_ detail: String) -> HearthError {
            HearthError(.dataLoss, "the answer kept with the commit of seq \(seq) does not decode: \(detail)")
        }
        let map: MapValue
        do { map = try codec.decode(bytes) } catch { throw damaged(error.message) }
        guard case .timestamp(let time)? = map["t"], case .array(let rows)? = map["r"] else { throw damaged("no commit time or results") }
        var results: [WriteResult] = []
        results.reserveCapacity(rows.count)
        for row in rows {
            guard case .map(let r) = row, case .string(let p)? = r["p"], case .timestamp(let u)? = r["u"],
                  case .array(let x)? = r["x"] else { throw damaged("a result is not {p,u,x}") }
            let path: DocumentPath
            do { path = try DocumentPath(parsing: p) } catch { throw damaged("path \(p): \(error.message)") }
            results.append(WriteResult(path: path, updateTime: u, transformResults: x))
        }
        return CommitOutcome(seq: seq, commitTime: time, results: results, duplicate: true)
    }
}
