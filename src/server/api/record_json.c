/* A stored record's fields as JSON (record_json.h). */
#include "record_json.h"
#include "dash_parse.h"

#include <stdio.h>

void record_json_field(jbuf *b, const pacer_field *f, const store_value *v)
{
    switch (f->type) {
    case PACER_TYPE_STRING:
        if (v->type == SV_TEXT) {
            jbuf_key(b, f->name);
            jbuf_strn(b, v->p, v->n);
        }
        break;
    case PACER_TYPE_INT:
    case PACER_TYPE_ID:
        if (v->type == SV_INT)
            jbuf_kv_i64(b, f->name, v->i);
        break;
    case PACER_TYPE_BOOL:
        if (v->type == SV_INT)
            jbuf_kv_bool(b, f->name, v->i != 0);
        break;
    case PACER_TYPE_MS:
        if (v->type == SV_REAL || v->type == SV_INT)
            jbuf_kv_double(b, f->name, v->type == SV_REAL ? v->d : (double)v->i);
        break;
    default:
        break;
    }
}

static void hex_json(jbuf *b, const char *key, const store_value *v)
{
    if (v->type != SV_BLOB || v->n == 0 || v->n > 32)
        return;
    char hex[65];
    for (size_t i = 0; i < v->n; i++)
        snprintf(hex + 2 * i, 3, "%02x", ((const unsigned char *)v->p)[i]);
    jbuf_kv_str(b, key, hex);
}

void record_json_write(jbuf *b, const pacer_record_type *type, const store_row *row, bool evidence)
{
    const store_table_desc *t = store_layout_table(row->table);
    jbuf_open(b, '{');
    jbuf_kv_str(b, "type", type->name);
    for (size_t i = 0; i < row->n; i++) {
        const store_column *c = &t->cols[i];
        const store_value *v = &row->cols[i];
        if (v->type == SV_NULL)
            continue;
        if (c->source == SRC_COMMON || c->source == SRC_FIELD) {
            if (c->field)
                record_json_field(b, c->field, v);
            continue;
        }
        if (!evidence)
            continue;
        switch (c->source) {
        case SRC_TRACE_ID: hex_json(b, "trace_id", v); break;
        case SRC_SPAN_ID: hex_json(b, "span_id", v); break;
        case SRC_EVENTS:
            if (v->type == SV_TEXT)
                dash_parse_apis(b, v->p, v->n);
            break;
        case SRC_EXTRA:
            if (v->type == SV_TEXT)
                dash_parse_extra(b, v->p, v->n);
            break;
        case SRC_PATTERN:
            if (v->type == SV_TEXT) {
                jbuf_key(b, "pattern");
                jbuf_strn(b, v->p, v->n);
            }
            break;
        default: break;
        }
    }
    jbuf_close(b, '}');
}
