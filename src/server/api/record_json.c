/* A stored record's fields as JSON (record_json.h). */
#include "record_json.h"

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
