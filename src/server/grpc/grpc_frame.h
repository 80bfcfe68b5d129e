/* gRPC's framing on HTTP/2, pure functions (no I/O, any thread): the
 * Length-Prefixed-Message of a call, grpc-timeout, and what the trailers
 * carry (grpc-message percent-encoded, grpc-status-details-bin a base64
 * google.rpc.Status with a google.rpc.RetryInfo). */
#ifndef PACER_SERVER_GRPC_FRAME_H
#define PACER_SERVER_GRPC_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The type URL of a google.rpc.RetryInfo in a google.protobuf.Any. */
#define GRPC_RETRY_INFO_TYPE "type.googleapis.com/google.rpc.RetryInfo"

/* The one message of a unary call's request stream buf[0..len): its
 * compressed flag and its bytes (pointing into buf). 0; -EFBIG when its
 * length is over max; -EBADMSG with err saying why (no message, a partial
 * one, a flag other than 0 or 1, bytes after the message: a second one). */
int grpc_frame_message(const uint8_t *buf, size_t len, size_t max, bool *ret_compressed, const uint8_t **ret_msg,
                       size_t *ret_len, char *err, size_t err_size);

/* The length a message's prefix announces, once its first 5 bytes are in
 * (the layer bounds what it keeps by it). */
uint32_t grpc_frame_length(const uint8_t prefix[5]);

/* Writes the 5-byte prefix of an uncompressed message of len bytes. */
void grpc_frame_prefix(uint8_t out[5], size_t len);

/* grpc-timeout ("1*8DIGIT" and a unit of H M S m u n) in nanoseconds: 0,
 * or -EINVAL. */
int grpc_frame_timeout(const char *s, int64_t *ret_ns);

/* grpc-message's value: text percent-encoded as gRPC asks (bytes outside
 * 0x20-0x7e and '%'), into out (always terminated, cut at a whole
 * escape). */
void grpc_frame_percent(const char *text, char *out, size_t out_size);

/* grpc-status-details-bin: base64 (unpadded) of a google.rpc.Status of
 * code and message with, when retry_s > 0, a google.rpc.RetryInfo of
 * retry_s seconds in its details. malloc'd, NUL-terminated; NULL when out
 * of memory. */
char *grpc_frame_status_details(int code, const char *message, unsigned retry_s);

#endif
