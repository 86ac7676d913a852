#include "validator.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace hearth {

namespace {

bool is_ws(uint8_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool is_digit(uint8_t c) { return c >= '0' && c <= '9'; }
bool is_token_char(uint8_t c) {
    return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '.' || c == '+' || c == '-' || c == '_';
}
int hex_value(uint8_t c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// Length of the valid UTF-8 sequence at s[0..n), or 0 when it is invalid (Unicode Table 3-7).
size_t utf8_sequence(const uint8_t *s, size_t n) {
    uint8_t c = s[0];
    if (c < 0x80) return 1;
    size_t len;
    uint8_t lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) { len = 2; }
    else if (c == 0xE0) { len = 3; lo = 0xA0; }
    else if (c == 0xED) { len = 3; hi = 0x9F; }
    else if (c >= 0xE1 && c <= 0xEF) { len = 3; }
    else if (c == 0xF0) { len = 4; lo = 0x90; }
    else if (c >= 0xF1 && c <= 0xF3) { len = 4; }
    else if (c == 0xF4) { len = 4; hi = 0x8F; }
    else return 0;
    if (n < len) return 0;
    if (s[1] < lo || s[1] > hi) return 0;
    for (size_t k = 2; k < len; k++) {
        if (s[k] < 0x80 || s[k] > 0xBF) return 0;
    }
    return len;
}

} // namespace

size_t Validator::first_invalid_utf8(const uint8_t *bytes, size_t len) {
    size_t i = 0;
    while (i < len) {
        size_t k = utf8_sequence(bytes + i, len - i);
        if (k == 0) return i;
        i += k;
    }
    return len;
}

bool Validator::run() {
    skip_whitespace();
    if (i_ == n_) return fail(i_, "no JSON value");
    if (!value(1)) return false;
    skip_whitespace();
    if (i_ < n_) return fail(i_, "unexpected " + token_at(i_) + " after the JSON value");
    return true;
}

bool Validator::fail(size_t at, std::string reason) {
    error_offset_ = at;
    reason_ = std::move(reason);
    return false;
}

// A short description of what is at `at`: a quoted printable token, a byte value, or the end.
std::string Validator::token_at(size_t at) const {
    if (at >= n_) return "end of input";
    uint8_t c = s_[at];
    char buf[16];
    if (c < 0x20 || c >= 0x7F) {
        std::snprintf(buf, sizeof buf, "byte 0x%02X", c);
        return buf;
    }
    if (!is_token_char(c)) return std::string("'") + static_cast<char>(c) + "'";
    size_t end = at;
    while (end < n_ && end - at < 32 && is_token_char(s_[end])) end++;
    std::string t(reinterpret_cast<const char *>(s_ + at), end - at);
    if (end < n_ && is_token_char(s_[end])) t += "...";
    return "'" + t + "'";
}

bool Validator::fail_unexpected(size_t at) {
    if (at >= n_) return fail(at, "unexpected end of input");
    return fail(at, "unexpected " + token_at(at));
}

void Validator::skip_whitespace() {
    while (i_ < n_ && is_ws(s_[i_])) i_++;
}

bool Validator::value(size_t depth) {
    if (i_ >= n_) return fail_unexpected(i_);
    switch (s_[i_]) {
    case '{': return object(depth);
    case '[': return array(depth);
    case '"': return string();
    case 't': case 'f': case 'n': return literal();
    default:
        if (s_[i_] == '-' || is_digit(s_[i_])) return number();
        return fail_unexpected(i_);
    }
}

bool Validator::object(size_t depth) {
    if (depth > max_depth_) return fail(i_, "nesting deeper than " + std::to_string(max_depth_) + " levels");
    i_++;
    skip_whitespace();
    if (i_ < n_ && s_[i_] == '}') { i_++; return true; }
    for (;;) {
        skip_whitespace();
        if (i_ >= n_) return fail_unexpected(i_);
        if (s_[i_] != '"') return fail(i_, "expected a string key, found " + token_at(i_));
        if (!string()) return false;
        skip_whitespace();
        if (i_ >= n_) return fail_unexpected(i_);
        if (s_[i_] != ':') return fail(i_, "expected ':' after an object key, found " + token_at(i_));
        i_++;
        skip_whitespace();
        if (!value(depth + 1)) return false;
        skip_whitespace();
        if (i_ >= n_) return fail_unexpected(i_);
        if (s_[i_] == ',') { i_++; continue; }
        if (s_[i_] == '}') { i_++; return true; }
        return fail(i_, "expected ',' or '}' in an object, found " + token_at(i_));
    }
}

bool Validator::array(size_t depth) {
    if (depth > max_depth_) return fail(i_, "nesting deeper than " + std::to_string(max_depth_) + " levels");
    i_++;
    skip_whitespace();
    if (i_ < n_ && s_[i_] == ']') { i_++; return true; }
    for (;;) {
        skip_whitespace();
        if (!value(depth + 1)) return false;
        skip_whitespace();
        if (i_ >= n_) return fail_unexpected(i_);
        if (s_[i_] == ',') { i_++; continue; }
        if (s_[i_] == ']') { i_++; return true; }
        return fail(i_, "expected ',' or ']' in an array, found " + token_at(i_));
    }
}

bool Validator::string() {
    size_t start = i_;
    i_++;
    for (;;) {
        if (i_ >= n_) return fail(start, "unterminated string");
        uint8_t c = s_[i_];
        if (c == '"') { i_++; return true; }
        if (c < 0x20) {
            char buf[64];
            std::snprintf(buf, sizeof buf, "control character 0x%02X must be escaped in a string", c);
            return fail(i_, buf);
        }
        if (c >= 0x80) {
            size_t k = utf8_sequence(s_ + i_, n_ - i_);
            if (k == 0) return fail(i_, "invalid UTF-8 in a string");
            i_ += k;
            continue;
        }
        if (c != '\\') { i_++; continue; }
        size_t esc = i_;
        if (i_ + 1 >= n_) return fail(start, "unterminated string");
        uint8_t e = s_[i_ + 1];
        if (e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' || e == 'r' || e == 't') {
            i_ += 2;
            continue;
        }
        if (e != 'u') {
            if (e < 0x20 || e >= 0x7F) return fail(esc, "invalid escape sequence");
            return fail(esc, std::string("invalid escape sequence '\\") + static_cast<char>(e) + "'");
        }
        auto read_hex = [&](size_t at, unsigned &out) -> bool {
            if (at + 6 > n_ || s_[at] != '\\' || s_[at + 1] != 'u') return false;
            out = 0;
            for (size_t k = at + 2; k < at + 6; k++) {
                int h = hex_value(s_[k]);
                if (h < 0) return false;
                out = out * 16 + static_cast<unsigned>(h);
            }
            return true;
        };
        unsigned cp;
        if (!read_hex(esc, cp)) return fail(esc, "invalid \\u escape (it needs four hex digits)");
        i_ = esc + 6;
        if (cp >= 0xDC00 && cp <= 0xDFFF) return fail(esc, "unpaired surrogate in \\u escape");
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            unsigned low;
            if (!read_hex(i_, low) || low < 0xDC00 || low > 0xDFFF) return fail(esc, "unpaired surrogate in \\u escape");
            i_ += 6;
        }
    }
}

bool Validator::number() {
    size_t start = i_;
    bool negative = s_[i_] == '-';
    if (negative) i_++;
    auto bad = [&]() { return fail(start, "invalid number " + token_at(start)); };
    if (i_ >= n_ || !is_digit(s_[i_])) return bad();
    size_t int_start = i_;
    if (s_[i_] == '0') {
        i_++;
    } else {
        while (i_ < n_ && is_digit(s_[i_])) i_++;
    }
    size_t int_end = i_;
    bool integral = true;
    if (i_ < n_ && s_[i_] == '.') {
        integral = false;
        i_++;
        if (i_ >= n_ || !is_digit(s_[i_])) return bad();
        while (i_ < n_ && is_digit(s_[i_])) i_++;
    }
    if (i_ < n_ && (s_[i_] == 'e' || s_[i_] == 'E')) {
        integral = false;
        i_++;
        if (i_ < n_ && (s_[i_] == '+' || s_[i_] == '-')) i_++;
        if (i_ >= n_ || !is_digit(s_[i_])) return bad();
        while (i_ < n_ && is_digit(s_[i_])) i_++;
    }
    if (i_ < n_ && is_token_char(s_[i_])) return bad();

    std::string text(reinterpret_cast<const char *>(s_ + start), i_ - start);
    errno = 0;
    double d = std::strtod(text.c_str(), nullptr);
    if (std::isinf(d)) {
        std::string shown = text.size() > 40 ? text.substr(0, 40) + "..." : text;
        return fail(start, "number " + shown + " is out of range");
    }
    if (integral) {
        // Does the magnitude fit uint64 (positive) or int64 (negative)?
        uint64_t limit = negative ? (uint64_t(1) << 63) : UINT64_MAX;
        uint64_t v = 0;
        bool fits = true;
        for (size_t k = int_start; k < int_end && fits; k++) {
            uint64_t digit = s_[k] - '0';
            if (v > (limit - digit) / 10) fits = false;
            else v = v * 10 + digit;
        }
        if (!fits) big_integers_.push_back(i_);
    }
    return true;
}

bool Validator::literal() {
    static const char *const words[] = {"true", "false", "null"};
    size_t start = i_;
    for (const char *w : words) {
        if (w[0] != s_[i_]) continue;
        size_t k = 0;
        while (w[k] && i_ + k < n_ && s_[i_ + k] == static_cast<uint8_t>(w[k])) k++;
        if (w[k] == 0 && !(i_ + k < n_ && is_token_char(s_[i_ + k]))) {
            i_ += k;
            return true;
        }
        break;
    }
    return fail(start, "invalid literal " + token_at(start));
}

} // namespace hearth
