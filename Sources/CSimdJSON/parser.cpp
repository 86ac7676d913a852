// The C API over simdjson's DOM parser (see include/csimdjson.h). On failure, the error path re-reads the
// input with hearth::Validator to find the byte offset and reason simdjson does not report. A successful
// parse is checked for repeated keys with hearth::DuplicateKeyFinder.
#include "csimdjson.h"
#include "duplicate_keys.hpp"
#include "validator.hpp"

#include <simdjson.h>

#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

struct hearth_json_parser {
    simdjson::dom::parser parser;
    uint8_t *padded = nullptr;   // copy of the input with simdjson::SIMDJSON_PADDING bytes of slack
    size_t padded_capacity = 0;  // bytes usable for input (the allocation is this + simdjson::SIMDJSON_PADDING)
    size_t retain_capacity;
    std::string reason;
    hearth::DuplicateKeyFinder duplicates;

    explicit hearth_json_parser(size_t retain) : retain_capacity(retain) {}
    ~hearth_json_parser() { std::free(padded); }

    // Copies `len` bytes into the padded buffer, growing it (or shrinking it after a huge document).
    const uint8_t *pad(const uint8_t *bytes, size_t len) {
        bool shrink = padded_capacity > retain_capacity && len <= retain_capacity;
        if (!padded || len > padded_capacity || shrink) {
            size_t want = len > retain_capacity ? len : retain_capacity;
            uint8_t *fresh = static_cast<uint8_t *>(std::malloc(want + simdjson::SIMDJSON_PADDING));
            if (!fresh) return nullptr;
            std::free(padded);
            padded = fresh;
            padded_capacity = want;
        }
        if (len) std::memcpy(padded, bytes, len);
        std::memset(padded + len, 0, simdjson::SIMDJSON_PADDING);
        return padded;
    }

    // Releases simdjson's buffers (sized for the largest document so far) before a small parse.
    void release_if_oversized(size_t len) {
        if (parser.capacity() > retain_capacity && len <= retain_capacity) {
            parser = simdjson::dom::parser();
        }
    }
};

namespace {

void succeed(hearth_json_parser *p, hearth_json_result *out) {
    out->status = HEARTH_JSON_OK;
    out->tape = p->parser.doc.tape.get();
    out->string_buf = p->parser.doc.string_buf.get();
    out->error_offset = -1;
    out->error_reason = "";
    out->duplicate_key = p->duplicates.find(out->tape, out->string_buf);
}

void report(hearth_json_parser *p, hearth_json_result *out, hearth_json_status status, int64_t offset,
            std::string reason) {
    p->reason = std::move(reason);
    out->status = status;
    out->tape = nullptr;
    out->string_buf = nullptr;
    out->error_offset = offset;
    out->error_reason = p->reason.c_str();
    out->duplicate_key = 0;
}

// Integer literals beyond int64/uint64 are valid JSON that the DOM parser rejects: reparse with ".0"
// appended to each, so that they become doubles.
bool reparse_with_big_integers(hearth_json_parser *p, const uint8_t *bytes, size_t len,
                               const std::vector<size_t> &ends) {
    std::vector<uint8_t> text;
    text.reserve(len + 2 * ends.size());
    size_t from = 0;
    for (size_t end : ends) {
        text.insert(text.end(), bytes + from, bytes + end);
        text.push_back('.');
        text.push_back('0');
        from = end;
    }
    text.insert(text.end(), bytes + from, bytes + len);
    const uint8_t *buf = p->pad(text.data(), text.size());
    if (!buf) return false;
    simdjson::dom::element root;
    return p->parser.parse(buf, text.size(), false).get(root) == simdjson::SUCCESS;
}

void diagnose(hearth_json_parser *p, const uint8_t *bytes, size_t len, simdjson::error_code error,
              hearth_json_result *out) {
    using namespace simdjson;
    if (error == MEMALLOC || error == CAPACITY) {
        report(p, out, HEARTH_JSON_RESOURCE, -1, error_message(error));
        return;
    }
    if (error == UTF8_ERROR) {
        size_t at = hearth::Validator::first_invalid_utf8(bytes, len);
        if (at < len) {
            report(p, out, HEARTH_JSON_UTF8, static_cast<int64_t>(at), "invalid UTF-8");
            return;
        }
    }
    hearth::Validator v(bytes, len, p->parser.max_depth());
    if (!v.run()) {
        report(p, out, HEARTH_JSON_SYNTAX, static_cast<int64_t>(v.error_offset()), v.reason());
        return;
    }
    if (!v.big_integers().empty() && reparse_with_big_integers(p, bytes, len, v.big_integers())) {
        succeed(p, out);
        return;
    }
    report(p, out, HEARTH_JSON_OTHER, -1, error_message(error));
}

void parse(hearth_json_parser *p, const uint8_t *original, const uint8_t *buf, size_t len,
           hearth_json_result *out) {
    simdjson::dom::element root;
    simdjson::error_code error = p->parser.parse(buf, len, false).get(root);
    if (error == simdjson::SUCCESS) {
        succeed(p, out);
    } else {
        diagnose(p, original, len, error, out);
    }
}

} // namespace

extern "C" {

size_t hearth_json_padding(void) { return simdjson::SIMDJSON_PADDING; }

hearth_json_parser *hearth_json_parser_create(size_t retain_capacity) {
    return new (std::nothrow) hearth_json_parser(retain_capacity);
}

void hearth_json_parser_destroy(hearth_json_parser *parser) { delete parser; }

void hearth_json_parse(hearth_json_parser *p, const uint8_t *bytes, size_t len, hearth_json_result *out) {
    p->release_if_oversized(len);
    const uint8_t *buf = p->pad(bytes, len);
    if (!buf) {
        report(p, out, HEARTH_JSON_RESOURCE, -1, simdjson::error_message(simdjson::MEMALLOC));
        return;
    }
    parse(p, bytes, buf, len, out);
}

void hearth_json_parse_padded(hearth_json_parser *p, const uint8_t *bytes, size_t len,
                              hearth_json_result *out) {
    p->release_if_oversized(len);
    parse(p, bytes, bytes, len, out);
}

} // extern "C"
