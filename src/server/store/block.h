/* Blocks: many rows of one table, column by column (block.c).
 *
 * The store keeps the rows of pacer's record tables (page loads, start-ups,
 * requests) in blocks once they are in the rollups: the rows of one app and
 * one UTC day, sorted by time, each column encoded on its own — a constant,
 * a dictionary of the distinct values, deltas from the previous row or from
 * another column, or the values one after the other — whichever is
 * smallest. A page load takes about 50 bytes this way, against 160 as an
 * SQLite row (plus the index that read it by time).
 *
 * A value keeps the SQLite type it had (NULL, INTEGER, REAL, TEXT, BLOB)
 * and its exact content: a REAL that is a whole number of thousandths is
 * written as that integer and read back as the same double; other REALs as
 * their 8 bytes.
 *
 * Wire format (all integers LEB128 varints unless said otherwise):
 *   'B' 1                      magic and version
 *   n_rows n_cols              n_cols counts the rowid, which is column 0
 *   len[0] … len[n_cols-1]     byte length of each column's section
 *   section[0] … section[n_cols-1]
 * A section starts with its mode:
 *   0 CONST  value             every row holds value
 *   1 PLAIN  value × n_rows
 *   2 DICT   m, value × m, then n_rows indexes of ceil(log2 m) bits each,
 *            packed from the lowest bit of the first byte on
 *   3 DELTA  zigzag(v0), zigzag(v[i] - v[i-1]) × (n_rows - 1); all INTEGER
 *   4 REF    c, zigzag(v[i] - ref[i]) × n_rows, ref being column c < this
 *            one, itself all INTEGER; all INTEGER
 *   5 FIXED  a byte (SV_BLOB or SV_TEXT), length L, then n_rows × L bytes:
 *            values of one type and one length (ids)
 *   6 MILLI  per row 0 (NULL) or zigzag(k) + 1, the REAL k / 1000.0
 *            (milliseconds)
 * A value is a tag t, then: t & 7 = 0 NULL; 1 INTEGER zigzag(v) = t >> 3;
 * 2 REAL, thousandths zigzag(k) = t >> 3, value k / 1000.0; 3 REAL, 8 bytes
 * (IEEE 754, little-endian) follow; 4 TEXT of t >> 3 bytes that follow;
 * 5 BLOB likewise; 6 INTEGER, 8 bytes follow; 7 TEXT of lowercase hex
 * digits, t >> 3 bytes follow that it spells.
 *
 * Decoding checks every length against the buffer: a damaged block is
 * -EBADMSG, never a read outside it (tests/fuzz/fuzz-block.c).
 */
#ifndef PACER_SERVER_STORE_BLOCK_H
#define PACER_SERVER_STORE_BLOCK_H

#include <stddef.h>
#include <stdint.h>

#include "store.h"

#define BLOCK_MAX_ROWS 65536
#define BLOCK_MAX_COLS (STORE_MAX_COLS + 1) /* the rowid, then a table's columns */

/* Encodes n rows of n_cols columns: the value of row i, column c is
 * cols[c][i] (column 0 is the rowid, all INTEGER). Text and blobs are
 * copied. Returns 0 with a malloc'd buffer in *ret, or -ENOMEM, or -EINVAL
 * (n or n_cols out of range). */
int block_encode(const store_value *const *cols, size_t n_cols, size_t n, uint8_t **ret, size_t *ret_len);

/* A parsed block header: where each column lies. Borrows data. */
typedef struct block_reader {
    const uint8_t *data;
    size_t len;
    uint32_t n_rows, n_cols;
    size_t off[BLOCK_MAX_COLS], size[BLOCK_MAX_COLS];
} block_reader;

/* Reads the header. 0, or -EBADMSG. */
int block_open(block_reader *r, const uint8_t *data, size_t len);

/* Where decoded texts live: chunks that never move, freed together by
 * block_arena_free (which leaves the arena empty and reusable). */
typedef struct block_chunk block_chunk;
typedef struct block_arena {
    block_chunk *head;
} block_arena;

/* The values of column c, one per row, into out[0 … n_rows). A text is a
 * NUL-terminated copy in *arena (n: its length); a blob points into the
 * block. 0, -EBADMSG or -ENOMEM. */

int block_column(const block_reader *r, size_t c, store_value *out, block_arena *arena);

void block_arena_free(block_arena *a);

#endif
