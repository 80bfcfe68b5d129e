/* libFuzzer target for the store's block decoder (src/server/store_block.c):
 * any bytes are a block or -EBADMSG, never a read outside them; a block
 * that decodes encodes again into one that decodes to the same values. */
#include "store/block.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool same(const store_value *a, const store_value *b)
{
    if (a->type != b->type)
        return false;
    switch (a->type) {
    case SV_NULL: return true;
    case SV_INT: return a->i == b->i;
    case SV_REAL: return memcmp(&a->d, &b->d, sizeof a->d) == 0;
    case SV_TEXT:
    case SV_BLOB: return a->n == b->n && (a->n == 0 || memcmp(a->p, b->p, a->n) == 0);
    }
    return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    block_reader r;
    if (block_open(&r, data, size) < 0)
        return 0;
    store_value *cols[BLOCK_MAX_COLS] = {NULL};
    block_arena arena = {0}, arena2 = {0};
    bool ok = true;
    for (size_t c = 0; c < r.n_cols && ok; c++) {
        cols[c] = malloc(r.n_rows * sizeof *cols[c]);
        ok = cols[c] && block_column(&r, c, cols[c], &arena) == 0;
    }
    uint8_t *again = NULL;
    size_t len = 0;
    if (ok && block_encode((const store_value *const *)cols, r.n_cols, r.n_rows, &again, &len) == 0) {
        block_reader r2;
        if (block_open(&r2, again, len) != 0 || r2.n_rows != r.n_rows || r2.n_cols != r.n_cols)
            abort();
        store_value *v = malloc(r.n_rows * sizeof *v);
        for (size_t c = 0; v && c < r.n_cols; c++) {
            if (block_column(&r2, c, v, &arena2) != 0)
                abort();
            for (size_t i = 0; i < r.n_rows; i++)
                if (!same(&v[i], &cols[c][i]))
                    abort();
        }
        free(v);
    }
    free(again);
    for (size_t c = 0; c < r.n_cols; c++)
        free(cols[c]);
    block_arena_free(&arena);
    block_arena_free(&arena2);
    return 0;
}
