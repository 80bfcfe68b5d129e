/* The values the store keeps in formats of its own, beside SQLite's (and
 * the blocks: block.h, the sketches: sketch.h). Each reader checks
 * every length against its buffer: a damaged value is -EBADMSG, never a
 * read outside it (tests/fuzz/fuzz-store-codec.c).
 *
 *   subday.sketches   the sketches of one sub-day group: varint n, then n
 *                     times varint metric id (subday_metrics), varint
 *                     length, the sketch (sketch_encode)
 *   trace_index.data  a chunk of a seal's trace entries, sorted by key:
 *                     varint n, then per entry varint (key - the previous
 *                     key; the first: - t_lo, the row's), varint table,
 *                     8 bytes little-endian rid
 */
#ifndef PACER_SERVER_STORE_CODEC_H
#define PACER_SERVER_STORE_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Tables a trace entry may name: below enum store_table's count. */
#define STORE_CODEC_MAX_TABLE 6

/* LEB128: reads one at *p (advancing it), false past end or after 10
 * bytes; writes one at p + *o (advancing *o; room for 10 bytes). */
bool store_codec_get_uvarint(const uint8_t **p, const uint8_t *end, uint64_t *ret);
void store_codec_put_uvarint(uint8_t *p, size_t *o, uint64_t v);

/* Calls fn for each sketch of a sub-day group's value: the id of its
 * metric and its encoding. 0, or -EBADMSG. */
int store_codec_subday_sketches(const uint8_t *blob, size_t len, void (*fn)(void *ctx, int64_t id, const uint8_t *p, size_t n),
                          void *ctx);

/* Calls fn for each entry of a trace_index chunk (whose first key is
 * t_lo) with key t. 0, or -EBADMSG. */
int store_codec_trace_chunk_find(const uint8_t *data, size_t len, int64_t t_lo, int64_t t,
                           void (*fn)(void *ctx, int tbl, int64_t rid), void *ctx);

#endif
