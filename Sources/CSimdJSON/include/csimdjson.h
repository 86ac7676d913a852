#ifndef HEARTH_CSIMDJSON_H
#define HEARTH_CSIMDJSON_H

/*
 * A plain C view of simdjson's DOM parser, so that Swift never needs C++ interop.
 *
 * One `hearth_json_parser` parses one document at a time; after a successful parse the result points at
 * simdjson's DOM tape and string buffer, which stay valid until the next parse on the same parser or its
 * destruction. A parser is not thread-safe: use one per thread.
 *
 * Tape (simdjson "tape.md"): 64-bit words, type in the high 8 bits ('r' '{' '}' '[' ']' '"' 'l' 'u' 'd'
 * 't' 'f' 'n'). Word 0 is 'r' (root); the value starts at word 1. For '{' and '[' the low 32 bits hold
 * the index just after the matching close and bits 32..55 the element count (saturating at 0xFFFFFF).
 * For '"' the low 56 bits are an offset into the string buffer, where a 4-byte little-endian length
 * precedes the (unescaped, valid UTF-8) bytes. 'l' (int64), 'u' (uint64) and 'd' (double) keep their
 * value in the next word.
 *
 * Every successful parse also checks each object for repeated keys (by unescaped bytes): the result's
 * `duplicate_key` is the tape index of the first repeated key, or 0 when all keys are unique.
 */

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hearth_json_parser hearth_json_parser;

typedef enum hearth_json_status {
    /** Parsed: `tape` and `string_buf` are set. */
    HEARTH_JSON_OK = 0,
    /** Not valid JSON: `error_offset` is the byte where the problem is and `error_reason` says what. */
    HEARTH_JSON_SYNTAX = 1,
    /** The input is not valid UTF-8: `error_offset` is the first byte of the first bad sequence. */
    HEARTH_JSON_UTF8 = 2,
    /** Out of memory or beyond the parser's capacity: `error_reason` says which; no offset. */
    HEARTH_JSON_RESOURCE = 3,
    /** Rejected by simdjson for a reason that has no position: `error_reason` only. */
    HEARTH_JSON_OTHER = 4,
} hearth_json_status;

typedef struct hearth_json_result {
    hearth_json_status status;
    const uint64_t *tape;
    const uint8_t *string_buf;
    /** Byte offset of the error in the input, or -1 when unknown. */
    int64_t error_offset;
    /** NUL-terminated reason; owned by the parser, valid until its next parse. */
    const char *error_reason;
    /**
     * After HEARTH_JSON_OK: the tape index of the first key that repeats an earlier key of the same object
     * (outer objects first, then document order), or 0 when every object's keys are unique.
     */
    uint64_t duplicate_key;
} hearth_json_result;

/** Bytes of readable slack simdjson needs after the input for `hearth_json_parse_padded`. */
size_t hearth_json_padding(void);

/**
 * Creates a parser. Buffers grow to fit the largest document parsed; after a document larger than
 * `retain_capacity` bytes, the next smaller parse first releases them (so one huge line does not pin
 * memory). Returns NULL when out of memory.
 */
hearth_json_parser *hearth_json_parser_create(size_t retain_capacity);

void hearth_json_parser_destroy(hearth_json_parser *parser);

/** Parses `len` bytes, first copying them into a parser-owned padded buffer (any input is fine). */
void hearth_json_parse(hearth_json_parser *parser, const uint8_t *bytes, size_t len, hearth_json_result *out);

/**
 * Parses without copying. The caller guarantees that `hearth_json_padding()` bytes after `bytes + len`
 * are readable (their content does not matter).
 */
void hearth_json_parse_padded(hearth_json_parser *parser, const uint8_t *bytes, size_t len,
                              hearth_json_result *out);

/**
 * Writes the shortest decimal form of a finite double that reads back to the same value, always with a
 * '.' or an exponent so that it reads back as a double ("3.0", "0.1", "1e+300", "-0.0"). `out` must have
 * room for 32 bytes. Returns the number of bytes written (no NUL). Non-finite input writes nothing.
 */
size_t hearth_format_double(double value, char *out);

#ifdef __cplusplus
}
#endif

#endif
