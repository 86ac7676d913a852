// Error-path JSON checker: finds WHERE and WHY a document simdjson rejected is invalid (simdjson's DOM
// parser reports no positions). Runs only after a failed parse, so it favours clarity over speed.
#ifndef HEARTH_VALIDATOR_HPP
#define HEARTH_VALIDATOR_HPP

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace hearth {

/// Checks RFC 8259 JSON the way simdjson accepts it (strict grammar, UTF-8, paired surrogates, nesting at
/// most `max_depth`, numbers within double range). Integer literals beyond int64/uint64 are valid JSON
/// that simdjson's DOM parser rejects; their end offsets are collected in `big_integers`.
class Validator {
public:
    Validator(const uint8_t *bytes, size_t len, size_t max_depth) : s_(bytes), n_(len), max_depth_(max_depth) {}

    /// True when the whole input is one valid JSON value; otherwise `error_offset()`/`reason()` say why.
    bool run();

    size_t error_offset() const { return error_offset_; }
    const std::string &reason() const { return reason_; }
    const std::vector<size_t> &big_integers() const { return big_integers_; }

    /// Offset of the first byte of the first invalid UTF-8 sequence, or `len` when all of it is valid.
    static size_t first_invalid_utf8(const uint8_t *bytes, size_t len);

private:
    bool value(size_t depth);
    bool object(size_t depth);
    bool array(size_t depth);
    bool string();
    bool number();
    bool literal();
    void skip_whitespace();
    bool fail(size_t at, std::string reason);
    bool fail_unexpected(size_t at);
    std::string token_at(size_t at) const;

    const uint8_t *s_;
    size_t n_;
    size_t max_depth_;
    size_t i_ = 0;
    size_t error_offset_ = 0;
    std::string reason_;
    std::vector<size_t> big_integers_;
};

} // namespace hearth

#endif
