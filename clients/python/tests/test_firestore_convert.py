"""clients/python/tools/firestore_to_ndjson.py: Firestore REST documents and nested dumps to Hearth NDJSON."""
import importlib.util
import json
import pathlib
import unittest

_PATH = pathlib.Path(__file__).resolve().parents[1] / "tools" / "firestore_to_ndjson.py"
_spec = importlib.util.spec_from_file_location("firestore_to_ndjson", _PATH)
convert = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(convert)


class FirestoreConvertTests(unittest.TestCase):
    def test_rest_documents_every_type(self):
        doc = {
            "name": "projects/p/databases/(default)/documents/customers/c1",
            "fields": {
                "s": {"stringValue": "é"}, "i": {"integerValue": "-9223372036854775808"},
                "d": {"doubleValue": 3}, "nan": {"doubleValue": "NaN"}, "negz": {"doubleValue": -0.0},
                "b": {"booleanValue": True}, "n": {"nullValue": None},
                "t": {"timestampValue": "2026-11-29T13:00:00.123456789+01:00"},
                "bytes": {"bytesValue": "AAEC/w=="},
                "r": {"referenceValue": "projects/p/databases/(default)/documents/a/b"},
                "g": {"geoPointValue": {"latitude": 48.85, "longitude": 2.35}},
                "arr": {"arrayValue": {"values": [{"integerValue": "1"}, {"mapValue": {"fields": {"k": {"stringValue": "v"}}}}]}},
                "empty": {"arrayValue": {}},
            },
            "createTime": "2026-11-29T12:00:00.5Z",
        }
        [line] = list(convert.read_documents(json.dumps({"documents": [doc]})))
        self.assertEqual(line["path"], "customers/c1")
        self.assertEqual(line["createTime"], "2026-11-29T12:00:00.500000Z")
        data = json.dumps(line["data"], separators=(",", ":"), ensure_ascii=False, allow_nan=False)
        self.assertEqual(data, '{"s":"é","i":-9223372036854775808,"d":3.0,"nan":{"$double":"NaN"},"negz":-0.0,'
                               '"b":true,"n":null,"t":{"$timestamp":"2026-11-29T12:00:00.123456Z"},'
                               '"bytes":{"$bytes":"AAEC/w=="},"r":{"$ref":"a/b"},"g":{"$geopoint":[48.85,2.35]},'
                               '"arr":[1,{"k":"v"}],"empty":[]}')

    def test_nested_dump_with_subcollections(self):
        dump = {"users": {"u1": {"name": "Ada", "since": {"__datatype__": "timestamp", "value": {"_seconds": 0, "_nanoseconds": 1500}},
                                 "__collections__": {"orders": {"o1": {"total": 2.5}}}}}}
        lines = list(convert.read_documents(json.dumps(dump)))
        self.assertEqual([l["path"] for l in lines], ["users/u1", "users/u1/orders/o1"])
        self.assertEqual(lines[0]["data"]["since"], {"$timestamp": "1970-01-01T00:00:00.000001Z"})

    def test_one_rest_document_on_one_line(self):
        doc = {"name": "projects/p/databases/(default)/documents/users/u1", "fields": {"n": {"integerValue": "3"}}}
        lines = list(convert.read_documents(json.dumps(doc) + "\n"))
        self.assertEqual(lines, [{"path": "users/u1", "data": {"n": 3}}])

    def test_nested_dump_non_finite_doubles(self):
        lines = list(convert.read_documents('{"users":{"u1":{"score":NaN,"hi":Infinity,"lo":-Infinity,"x":1}}}'))
        self.assertEqual(lines[0]["data"], {"score": {"$double": "NaN"}, "hi": {"$double": "Infinity"},
                                            "lo": {"$double": "-Infinity"}, "x": 1})

    def test_a_failure_writes_nothing(self):
        import io
        import sys as _sys
        out, err, stdin = io.StringIO(), io.StringIO(), _sys.stdin
        _sys.stdin, old_out, old_err = io.StringIO('{"a":{"b":{"ok":1}},"c":{"d":{"$x":1}}}'), _sys.stdout, _sys.stderr
        _sys.stdout, _sys.stderr = out, err
        try:
            rc = convert.main(["firestore_to_ndjson.py", "-"])
        finally:
            _sys.stdin, _sys.stdout, _sys.stderr = stdin, old_out, old_err
        self.assertEqual(rc, 1)
        self.assertEqual(out.getvalue(), "")
        self.assertIn("'$x'", err.getvalue())

    def test_dollar_keys_are_refused_with_the_document(self):
        with self.assertRaisesRegex(convert.ConversionError, r"a/b: field name '\$x'"):
            list(convert.read_documents(json.dumps({"a": {"b": {"$x": 1}}})))


if __name__ == "__main__":
    unittest.main()
