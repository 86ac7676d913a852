import HearthModel
import HearthProtocol

/// Ops that touch no documents.
enum MetaHandlers {
    static func help(_ ctx: Context, _ req: Request) throws(HearthError) {
        ctx.reply(req) { w in
            w.key("ops")
            w.beginArray()
            for c in CommandTable.all {
                w.beginObject()
                w.key("op"); w.string(c.name)
                w.key("synopsis"); w.string(c.synopsis)
                w.endObject()
            }
            w.endArray()
            w.key("protocol"); w.string("one JSON object per line; see docs/protocol.md")
        }
    }

    static func ping(_ ctx: Context, _ req: Request) throws(HearthError) {
        let seq = ctx.engine.lastDurableSeq
        let diskFull = ctx.engine.diskFull != nil
        ctx.reply(req) { w in
            w.key("seq"); w.uint(seq)
            w.key("diskFull"); w.bool(diskFull)
        }
    }
}
