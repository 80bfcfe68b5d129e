/* libFuzzer target for what the ClickHouse store parses: its URL
 * (ch_client_url_parse, from the command line or a file) and ClickHouse's answers
 * in RowBinary (every table's rows, rollup rows, the values a percentile
 * query reads). Any input is parsed or refused without a read out of
 * bounds (ASan); a URL parsed never shows its password; a row read has its
 * strings NUL-terminated at their length. */
#include "store/clickhouse/ch_int.h"

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_row(const ch_row *row)
{
    for (size_t i = 0; i < row->row.n; i++) {
        const store_value *v = &row->row.cols[i];
        if (v->type == SV_TEXT)
            assert(strlen(v->p) <= v->n || v->n == 0 || memchr(v->p, 0, v->n));
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* the first line as a URL */
    size_t line = 0;
    while (line < size && line < 4096 && data[line] != '\n')
        line++;
    char *url = malloc(line + 1);
    if (!url)
        return 0;
    memcpy(url, data, line);
    url[line] = 0;
    ch_url u;
    char err[256];
    if (!memchr(url, 0, line) && ch_client_url_parse(url, &u, err, sizeof err) == 0) {
        assert(u.base && u.database && u.shown);
        if (u.password) {
            char *secret = malloc(strlen(u.password) + 3);
            if (secret) {
                strcpy(secret, ":");
                strcat(secret, u.password);
                strcat(secret, "@");
                assert(!strstr(u.shown, secret));
                free(secret);
            }
        }
        ch_client_url_clear(&u);
    }
    free(url);
    /* the whole input as the rows of each table */
    for (enum store_table tb = 0; tb < TABLE_COUNT; tb++) {
        rb_reader r;
        rb_reader_init(&r, data, size);
        ch_row row;
        for (int n = 0; n < 64 && rb_more(&r) && ch_layout_decode_row(ch_layout_table(tb), &r, &row); n++) {
            check_row(&row);
            ch_layout_row_clear(&row);
        }
    }
    rb_reader r;
    rb_reader_init(&r, data, size);
    ch_srow s;
    for (int n = 0; n < 64 && rb_more(&r); n++) {
        bool ok = ch_layout_read_srow(&r, &s);
        if (ok) {
            for (size_t i = 0; i < STORE_MAX_METRICS; i++)
                (void)sketch_quantile(&s.m[i], 0.5);
        }
        ch_layout_srow_reset(&s);
        if (!ok)
            break;
    }
    for (enum store_kind k = 0; k < KIND_COUNT; k++) {
        rb_reader_init(&r, data, size);
        char name[256];
        bool named, failed, excluded;
        double m[STORE_MAX_METRICS];
        for (int n = 0; n < 64 && rb_more(&r) &&
                        ch_layout_decode_values(k, &r, name, sizeof name, &named, &failed, &excluded, m);
             n++)
            assert(strlen(name) < sizeof name);
    }
    return 0;
}
