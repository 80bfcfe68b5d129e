/* The store's blocks (src/server/store_block.c): every value comes back
 * with its type and its exact content (integers at the ends of their
 * range, REALs that are and are not whole thousandths, -0.0, texts of hex
 * digits and others, blobs, NULLs), whichever encoding each column chose;
 * a cut or damaged block is refused, never read past its end. */
#include "store/block.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static bool same(const store_value *a, const store_value *b)
{
    if (a->type != b->type)
        return false;
    switch (a->type) {
    case SV_NULL: return true;
    case SV_INT: return a->i == b->i;
    case SV_REAL: return memcmp(&a->d, &b->d, sizeof a->d) == 0;
    case SV_TEXT: {
        size_t n = a->n ? a->n : strlen(a->p);
        return n == b->n && memcmp(a->p, b->p, n) == 0 && ((const char *)b->p)[n] == 0;
    }
    case SV_BLOB: return a->n == b->n && (a->n == 0 || memcmp(a->p, b->p, a->n) == 0);
    }
    return false;
}

enum { ROWS = 1500, COLS = 13 };
static store_value table[COLS][ROWS];
static char texts[ROWS][40];
static uint8_t blobs[ROWS][16];
static char words[ROWS][12];

static void make_table(void)
{
    unsigned seed = 7;
    int64_t ts = 1700000000000000000LL;
    for (size_t i = 0; i < ROWS; i++) {
        ts += rand_r(&seed) % 100000;
        table[0][i] = (store_value){.type = SV_INT, .i = (int64_t)(((uint64_t)19723 + 1) << 40 | (i * 7 % ROWS))};
        table[1][i] = (store_value){.type = SV_INT, .i = ts};                                   /* DELTA */
        table[2][i] = (store_value){.type = SV_INT, .i = ts + 1000000 * (rand_r(&seed) % 900)}; /* REF to 1 */
        static const double reals[] = {0.0, -0.0, 523.456, 1e-9, 1.0 / 3.0, 9e12, 1e300, -4.125, 2.5};
        table[3][i] = i % 11 == 0 ? (store_value){.type = SV_NULL}
                                  : (store_value){.type = SV_REAL, .d = reals[rand_r(&seed) % 9]};
        table[4][i] = (store_value){.type = SV_TEXT, .p = i % 3 ? "complete" : "abandoned"}; /* DICT */
        snprintf(texts[i], sizeof texts[i], i % 2 ? "%08x%08x" : "Page%u.x", rand_r(&seed), rand_r(&seed));
        table[5][i] = (store_value){.type = SV_TEXT, .p = texts[i], .n = strlen(texts[i])};
        for (int k = 0; k < 16; k++)
            blobs[i][k] = (uint8_t)rand_r(&seed);
        table[6][i] = (store_value){.type = SV_BLOB, .p = blobs[i], .n = i % 5 ? 16 : 0};
        table[7][i] = (store_value){.type = SV_INT, .i = 1}; /* CONST */
        static const int64_t ints[] = {INT64_MIN, INT64_MAX, -1, 0, 1LL << 61, -(1LL << 60)};
        table[8][i] = i % 4 ? (store_value){.type = SV_INT, .i = ints[rand_r(&seed) % 6]}
                            : (store_value){.type = SV_TEXT, .p = ""};
        /* ids of one length (FIXED), milliseconds with gaps (MILLI), three values (a 2-bit DICT) */
        table[9][i] = (store_value){.type = SV_BLOB, .p = blobs[(i * 7) % ROWS], .n = 16};
        table[10][i] = i % 7 == 3 ? (store_value){.type = SV_NULL}
                                  : (store_value){.type = SV_REAL, .d = (double)(rand_r(&seed) % 5000000) / 1000.0};
        static const char *const three[] = {"window", "page", "dialog"};
        table[11][i] = (store_value){.type = SV_TEXT, .p = three[rand_r(&seed) % 3]};
        snprintf(words[i], sizeof words[i], "w%010u", (unsigned)rand_r(&seed) % 1000000000u);
        table[12][i] = (store_value){.type = SV_TEXT, .p = words[i], .n = 11};
    }
}

static void check(const uint8_t *buf, size_t len, size_t rows)
{
    block_reader r;
    assert_int_equal(block_open(&r, buf, len), 0);
    assert_int_equal(r.n_rows, rows);
    assert_int_equal(r.n_cols, COLS);
    block_arena arena = {0};
    store_value *v = malloc(rows * sizeof *v);
    for (size_t c = 0; c < COLS; c++) {
        assert_int_equal(block_column(&r, c, v, &arena), 0);
        for (size_t i = 0; i < rows; i++)
            if (!same(&table[c][i], &v[i]))
                fail_msg("column %zu row %zu differs", c, i);
    }
    free(v);
    block_arena_free(&arena);
}

static void test_round_trip(void **state)
{
    (void)state;
    make_table();
    const store_value *cols[COLS];
    for (size_t c = 0; c < COLS; c++)
        cols[c] = table[c];
    for (size_t rows = 1; rows <= ROWS; rows = rows < 10 ? rows + 1 : rows * 3) {
        uint8_t *buf;
        size_t len;
        assert_int_equal(block_encode(cols, COLS, rows, &buf, &len), 0);
        check(buf, len, rows);
        free(buf);
    }
    uint8_t *buf;
    size_t len;
    assert_int_equal(block_encode(cols, COLS, ROWS, &buf, &len), 0);
    check(buf, len, ROWS);
    printf("%d rows of %d columns: %zu bytes (%.1f a row)\n", ROWS, COLS, len, (double)len / ROWS);
    /* each column in the encoding made for it: its mode and its size */
    block_reader r;
    assert_int_equal(block_open(&r, buf, len), 0);
    static const struct {
        size_t col;
        int mode;
        double max_per_row;
    } want[] = {
        {1, 3, 4},         /* sorted times: DELTA */
        {2, -1, 5},        /* an end time: REF to the start, or deltas of its own (-1: either) */
        {4, 2, 0.2},       /* two texts: DICT of 1 bit */
        {7, 0, 0.01},      /* CONST */
        {9, 5, 16.01},     /* 16-byte ids: FIXED, the bytes alone */
        {10, 6, 4},        /* milliseconds or NULL: MILLI */
        {11, 2, 0.3},      /* three texts: DICT of 2 bits */
    };
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
        size_t c = want[k].col;
        int mode = buf[r.off[c]];
        bool mode_ok = want[k].mode >= 0 ? mode == want[k].mode : mode == 3 || mode == 4;
        if (!mode_ok || (double)r.size[c] / ROWS > want[k].max_per_row)
            fail_msg("column %zu: mode %d, %.2f bytes a row; want mode %d, at most %.2f", c, buf[r.off[c]],
                     (double)r.size[c] / ROWS, want[k].mode, want[k].max_per_row);
    }
    free(buf);
    assert_int_equal(block_encode(cols, COLS, 0, &buf, &len), -EINVAL);
    assert_int_equal(block_encode(cols, BLOCK_MAX_COLS + 1, 1, &buf, &len), -EINVAL);
}

static void test_damage_is_refused(void **state)
{
    (void)state;
    make_table();
    const store_value *cols[COLS];
    for (size_t c = 0; c < COLS; c++)
        cols[c] = table[c];
    uint8_t *buf;
    size_t len;
    assert_int_equal(block_encode(cols, COLS, 200, &buf, &len), 0);
    block_reader r;
    block_arena arena = {0};
    store_value *v = malloc(200 * sizeof *v);
    /* every cut is refused by the header */
    for (size_t n = 0; n < len; n++) {
        uint8_t *cut = malloc(n ? n : 1);
        memcpy(cut, buf, n);
        assert_int_equal(block_open(&r, cut, n), -EBADMSG);
        free(cut);
    }
    /* flipped bytes: refused or decoded, never read past the end (ASan) */
    unsigned seed = 3;
    size_t refused = 0;
    for (int k = 0; k < 3000; k++) {
        uint8_t *bad = malloc(len);
        memcpy(bad, buf, len);
        bad[rand_r(&seed) % len] ^= (uint8_t)(1 + rand_r(&seed) % 255);
        if (block_open(&r, bad, len) == 0) {
            for (size_t c = 0; c < r.n_cols; c++)
                if (r.n_rows <= 200 && block_column(&r, c, v, &arena) < 0)
                    refused++;
        } else {
            refused++;
        }
        block_arena_free(&arena);
        free(bad);
    }
    assert_true(refused > 0);
    free(v);
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_round_trip), cmocka_unit_test(test_damage_is_refused)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
