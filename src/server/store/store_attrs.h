/* The attributes pacerd stores, read back: an OTLP KeyValue list as
 * compact JSON text, [{"key":K,"value":{TYPE:V}},…], as a client sent
 * it — valid JSON of any shape. One reader for every user (the read APIs'
 * attribute filters and index, the dashboard's reads, the analysis): it
 * takes the members it knows with the types it expects, skips anything
 * else, and stops at the first syntax error. Any thread. */
#ifndef PACER_SERVER_STORE_ATTRS_H
#define PACER_SERVER_STORE_ATTRS_H

#include "store.h"

#include <pacer/base/json.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define STORE_ATTR_MAX_ITEMS 64 /* the string values of an array attribute kept */

/* One attribute, its strings borrowed from the reader's buffer until the
 * callback returns. */
typedef struct store_attr {
    size_t index; /* its place in the list */
    const char *key;
    size_t key_len;
    enum { SA_OTHER, SA_STRING, SA_INT, SA_DOUBLE, SA_BOOL, SA_ARRAY } type;
    /* SA_STRING: the string; SA_INT, SA_DOUBLE, SA_BOOL: the value's
     * canonical text (store_attrs_hash's: an integer in decimal, a double
     * as the shortest %.17g or an integral one as an integer, NaN,
     * Infinity, -Infinity, "true", "false") */
    const char *text;
    size_t len;
    int64_t i; /* SA_INT (a JSON number, or a string that is one integer) */
    double d;  /* SA_DOUBLE */
    /* SA_ARRAY: the string values among its first STORE_ATTR_MAX_ITEMS elements */
    size_t n_items;
    const char *items[STORE_ATTR_MAX_ITEMS];
    size_t item_lens[STORE_ATTR_MAX_ITEMS];
    char num[40]; /* the canonical text of a number */
} store_attr;

/* Calls fn with each attribute of the list at r (the reader stops after
 * it, or at its first syntax error), until fn returns false. The reader
 * unescapes in place: its buffer is written. */
void store_attrs_read(jread *r, bool (*fn)(void *ctx, const store_attr *a), void *ctx);

/* The same over json (len bytes, read from a copy). */
void store_attrs_each(const char *json, size_t len, bool (*fn)(void *ctx, const store_attr *a), void *ctx);

/* One KeyValue object at r into *ret: false when it has no key or no
 * value this reader knows. */
bool store_attrs_read_one(jread *r, store_attr *ret);

/* Calls fn with each string value of the attributes named key (a string,
 * or the strings of an array); after the first attribute of that key
 * when first. */
void store_attrs_strings(const char *json, size_t len, const char *key, bool first,
                        void (*fn)(void *ctx, const char *s, size_t n), void *ctx);

/* The hash under which span_attr_keys indexes an attribute: of the key and
 * the value's canonical text. */
uint64_t store_attrs_hash(const char *key, size_t key_len, const char *text, size_t len);

/* Whether the attribute list (len bytes) has every filter's key with a
 * value the filter's text matches, as store_span_query says. */
bool store_attrs_match(const char *json, size_t len, const store_attr_filter *filters, size_t n);

/* The canonical text a filter's value is compared in: numbers as they
 * are stored, so that "3" finds 3, 3.0 and "3"; other text as it is. */
void store_attrs_filter_text(const store_attr_filter *f, char *out, size_t size);

#endif
