/* Protobuf wire format: written, a growable byte buffer and the encodings
 * pacer's OTLP messages need (otlp.c, otlp_proto.c); read, a field at a
 * time (grpc.c). Canonical output: varints are minimal, a nested
 * message's length is written once its content is known (pb_open /
 * pb_close).
 *
 * Allocation failure is sticky: once a write fails, `failed` is set and
 * later writes do nothing. A buffer is used by one thread at a time.
 */
#ifndef PACER_CORE_PBUF_H
#define PACER_CORE_PBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum { PB_VARINT = 0, PB_I64 = 1, PB_LEN = 2 };

typedef struct pbuf {
    uint8_t *p;
    size_t len, cap;
    bool failed;
} pbuf;

/* An empty buffer is all zeros: pbuf b = {0}. */
void pb_free(pbuf *b);
/* Empties the buffer, keeping its memory (and clearing `failed`). */
void pb_reset(pbuf *b);
/* Hands the bytes to the caller (who frees them) and empties the buffer.
 * NULL when a write failed; an empty message is a 1-byte allocation of
 * length 0. */
uint8_t *pb_steal(pbuf *b, size_t *ret_len);

void pb_raw(pbuf *b, const void *p, size_t n);
void pb_varint(pbuf *b, uint64_t v);
void pb_key(pbuf *b, unsigned field, unsigned wire);
/* Field of a varint type: int64 (two's complement), enum, bool. */
void pb_uint(pbuf *b, unsigned field, uint64_t v);
void pb_fixed64(pbuf *b, unsigned field, uint64_t v);
void pb_double(pbuf *b, unsigned field, double v);
void pb_bytes(pbuf *b, unsigned field, const void *p, size_t n);
/* A string field, always valid UTF-8: every byte that does not begin a
 * well-formed sequence becomes U+FFFD, as in pacer's JSON text (json.h),
 * so a string reads the same whichever way it travelled. */
void pb_string(pbuf *b, unsigned field, const char *s, size_t n);
void pb_cstr(pbuf *b, unsigned field, const char *s);
/* pb_string's bytes for s (n bytes): writes them to out (room for 3 * n
 * bytes) when it is not NULL; returns their length. */
size_t pb_utf8_clean(const char *s, size_t n, char *out);

/* A nested message: pb_open writes the key and returns a mark; what is
 * written until pb_close(mark) is the message, whose length pb_close puts
 * in front of it. Marks nest. */
size_t pb_open(pbuf *b, unsigned field);
void pb_close(pbuf *b, size_t mark);

/* Reading: a varint at *p (before end). Returns false when it runs past
 * end or past 10 bytes. */
bool pb_read_varint(const uint8_t **p, const uint8_t *end, uint64_t *ret);

/* One field as read: its number and wire type, and its value — `v` for a
 * varint or a fixed width (I64, I32), `p` and `n` for a length-delimited
 * one (pointing into the input). */
typedef struct pb_field {
    unsigned number, wire;
    uint64_t v;
    const uint8_t *p;
    size_t n;
} pb_field;

/* Reads the field at *p (before end) and moves *p past it. Returns 1, 0 at
 * the end, -1 for bytes that are not a field: a bad key or varint, a
 * field number 0, a length past the end, a group or an unknown wire type. */
int pb_read_field(const uint8_t **p, const uint8_t *end, pb_field *ret);

#endif
