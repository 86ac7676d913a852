#!/usr/bin/env python3
"""Convert a JSON export of Firestore documents into Hearth's export NDJSON (docs/operations.md,
"Export and import"), for `hearth import`.

Input (Firestore has no single JSON export format; these are the shapes this script accepts):

1. The REST API / `gcloud firestore` JSON of documents: a JSON array of Document objects, or an object with
   a "documents" array (as `documents:batchGet`/`runQuery`/`list` return them), or NDJSON with one per line.
   Each has "name" ("projects/P/databases/D/documents/col/doc/...") and "fields" holding typed values:
   {"stringValue"}, {"integerValue":"12"}, {"doubleValue"} (also "NaN", "Infinity", "-Infinity"),
   {"booleanValue"}, {"nullValue":null}, {"timestampValue":"RFC 3339"}, {"bytesValue":base64},
   {"referenceValue":"projects/.../documents/col/doc"}, {"geoPointValue":{"latitude","longitude"}},
   {"arrayValue":{"values":[...]}}, {"mapValue":{"fields":{...}}}. "createTime"/"updateTime" are kept as
   informative fields.
2. A plain nested JSON dump (as tools like firestore-export produce): {"collection": {"docId": {field:
   value, ..., "__collections__": {"sub": {...}}}}}. Plain JSON values map to Hearth values as they are
   (numbers with a fraction or an exponent become doubles, others integers); objects of the form
   {"__datatype__":"timestamp","value":{"_seconds":S,"_nanoseconds":N}} become timestamps,
   {"__datatype__":"geopoint","value":{"_latitude","_longitude"}} geopoints, and
   {"__datatype__":"documentReferenceValue","value":"col/doc"} references. Everything else is plain data.

Timestamps are truncated to the microsecond (Hearth's precision). A map key starting with "$" cannot be
stored by Hearth; the script stops with the document's name when it meets one.

Usage: firestore_to_ndjson.py INPUT.json [> OUTPUT.ndjson]    ('-' reads standard input)
"""
import base64
import datetime
import json
import math
import sys


class ConversionError(Exception):
    pass


def rest_value(v, where):
    """A Firestore REST typed value -> Hearth wire JSON."""
    if "stringValue" in v:
        return v["stringValue"]
    if "integerValue" in v:
        return int(v["integerValue"])
    if "doubleValue" in v:
        d = v["doubleValue"]
        if isinstance(d, str):  # "NaN", "Infinity", "-Infinity"
            return {"$double": d}
        if not math.isfinite(float(d)):  # a bare NaN or Infinity (Python's JSON reads them)
            return plain_value(float(d), where)
        return float(d)  # written with a fraction or an exponent, so Hearth reads a double (3.0, -0.0)
    if "booleanValue" in v:
        return bool(v["booleanValue"])
    if "nullValue" in v:
        return None
    if "timestampValue" in v:
        return {"$timestamp": timestamp_text(v["timestampValue"])}
    if "bytesValue" in v:
        return {"$bytes": base64.b64encode(base64.b64decode(v["bytesValue"])).decode()}
    if "referenceValue" in v:
        return {"$ref": document_path(v["referenceValue"])}
    if "geoPointValue" in v:
        g = v["geoPointValue"]
        return {"$geopoint": [g.get("latitude", 0.0), g.get("longitude", 0.0)]}
    if "arrayValue" in v:
        return [rest_value(x, where) for x in v["arrayValue"].get("values", [])]
    if "mapValue" in v:
        return rest_fields(v["mapValue"].get("fields", {}), where)
    raise ConversionError(f"{where}: unknown Firestore value {json.dumps(v)[:80]}")


def rest_fields(fields, where):
    out = {}
    for k, v in fields.items():
        check_key(k, where)
        out[k] = rest_value(v, where)
    return out


def check_key(k, where):
    if k.startswith("$"):
        raise ConversionError(f"{where}: field name {k!r} starts with '$', which Hearth cannot store")


def timestamp_text(text):
    """RFC 3339 with any fraction -> UTC with exactly 6 fraction digits (truncated)."""
    t = text.strip()
    main, frac, zone = t, "", "Z"
    if t.endswith("Z"):
        main = t[:-1]
    else:
        for sign in "+-":
            i = t.rfind(sign)
            if i > 10:
                main, zone = t[:i], t[i:]
                break
    if "." in main:
        main, frac = main.split(".", 1)
    micros = int((frac + "000000")[:6])
    dt = datetime.datetime.fromisoformat(main + ("+00:00" if zone == "Z" else zone))
    dt = dt.astimezone(datetime.timezone.utc).replace(microsecond=micros)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def document_path(name):
    marker = "/documents/"
    return name.split(marker, 1)[1] if marker in name else name.strip("/")


def plain_value(v, where):
    if isinstance(v, dict):
        kind = v.get("__datatype__")
        if kind == "timestamp":
            s, n = v["value"]["_seconds"], v["value"]["_nanoseconds"]
            dt = datetime.datetime.fromtimestamp(s, datetime.timezone.utc).replace(microsecond=n // 1000)
            return {"$timestamp": dt.strftime("%Y-%m-%dT%H:%M:%S.%fZ")}
        if kind == "geopoint":
            return {"$geopoint": [v["value"]["_latitude"], v["value"]["_longitude"]]}
        if kind == "documentReferenceValue":
            return {"$ref": document_path(v["value"])}
        out = {}
        for k, x in v.items():
            check_key(k, where)
            out[k] = plain_value(x, where)
        return out
    if isinstance(v, list):
        return [plain_value(x, where) for x in v]
    if isinstance(v, float) and not math.isfinite(v):
        # JSON has no NaN or infinities (Python's json reads them): Hearth's typed form.
        return {"$double": "NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity")}
    return v  # a float is written with a fraction or an exponent: Hearth reads a double


def plain_documents(tree, prefix=""):
    for collection, docs in tree.items():
        for doc_id, body in docs.items():
            path = f"{prefix}{collection}/{doc_id}"
            body = dict(body)
            subs = body.pop("__collections__", {})
            yield {"path": path, "data": plain_value(body, path)}
            yield from plain_documents(subs, path + "/")


def rest_documents(items):
    for d in items:
        path = document_path(d["name"])
        line = {"path": path, "data": rest_fields(d.get("fields", {}), path)}
        for t in ("createTime", "updateTime"):
            if t in d:
                line[t] = timestamp_text(d[t])
        yield line


def read_documents(text):
    text = text.strip()
    if not text:
        return iter(())
    try:
        root = json.loads(text)
    except json.JSONDecodeError:
        # NDJSON of REST documents.
        return rest_documents(json.loads(l) for l in text.splitlines() if l.strip())
    if isinstance(root, list):
        return rest_documents(x.get("document", x) for x in root if "name" in x.get("document", x))
    if isinstance(root, dict) and isinstance(root.get("documents"), list):
        return rest_documents(root["documents"])
    if isinstance(root, dict) and isinstance(root.get("name"), str) and isinstance(root.get("fields", {}), dict) \
            and "/documents/" in root["name"]:
        return rest_documents([root])  # one REST document (NDJSON of one line)
    if isinstance(root, dict):
        return plain_documents(root)
    raise ConversionError("the input is neither Firestore REST documents nor a nested JSON dump")


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    text = sys.stdin.read() if argv[1] == "-" else open(argv[1], encoding="utf-8").read()
    out = sys.stdout
    try:
        # Every line is made before any is written: a document that cannot be converted leaves no output.
        lines = [json.dumps(d, separators=(",", ":"), ensure_ascii=False, allow_nan=False) for d in read_documents(text)]
    except (ConversionError, KeyError, ValueError, TypeError, AttributeError) as e:
        print(f"firestore_to_ndjson: {e}", file=sys.stderr)
        return 1
    out.write(json.dumps({"hearthExport": 1, "seq": 0, "scope": {}, "source": "firestore"}, separators=(",", ":")) + "\n")
    for line in lines:
        out.write(line + "\n")
    print(f"firestore_to_ndjson: {len(lines)} documents", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
