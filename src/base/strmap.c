/* A table keyed by strings (strmap.h). */
#include <pacer/base/hash.h>
#include <pacer/base/strmap.h>

#include <stdlib.h>
#include <string.h>

static strmap_slot *find(const strmap *m, const void *key, size_t len, uint64_t h)
{
    for (size_t i = h & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        strmap_slot *s = &m->slots[i];
        if (!s->key || (s->hash == h && s->len == len && memcmp(s->key, key, len) == 0))
            return s;
    }
}

void *strmap_get(const strmap *m, const void *key, size_t len)
{
    if (!m->n)
        return NULL;
    strmap_slot *s = find(m, key, len, fnv1a64(FNV1A64_INIT, key, len));
    return s->key ? s->value : NULL;
}

static bool grow(strmap *m)
{
    size_t cap = m->cap ? 2 * m->cap : 16;
    strmap_slot *slots = calloc(cap, sizeof *slots);
    if (!slots)
        return false;
    strmap old = *m;
    m->slots = slots;
    m->cap = cap;
    for (size_t i = 0; i < old.cap; i++)
        if (old.slots[i].key)
            *find(m, old.slots[i].key, old.slots[i].len, old.slots[i].hash) = old.slots[i];
    free(old.slots);
    return true;
}

void **strmap_put(strmap *m, const void *key, size_t len, const char **ret_key)
{
    uint64_t h = fnv1a64(FNV1A64_INIT, key, len);
    strmap_slot *s = m->cap ? find(m, key, len, h) : NULL;
    if (!s || !s->key) {
        if (2 * (m->n + 1) > m->cap) {
            if (!grow(m))
                return NULL;
            s = find(m, key, len, h);
        }
        char *k = malloc(len + 1);
        if (!k)
            return NULL;
        if (len)
            memcpy(k, key, len);
        k[len] = 0;
        *s = (strmap_slot){k, len, h, NULL};
        m->n++;
    }
    if (ret_key)
        *ret_key = s->key;
    return &s->value;
}

bool strmap_next(const strmap *m, size_t *pos, const strmap_slot **ret)
{
    for (size_t i = *pos; i < m->cap; i++)
        if (m->slots[i].key) {
            *ret = &m->slots[i];
            *pos = i + 1;
            return true;
        }
    *pos = m->cap;
    return false;
}

void strmap_free(strmap *m, void (*free_value)(void *value))
{
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i].key) {
            if (free_value && m->slots[i].value)
                free_value(m->slots[i].value);
            free(m->slots[i].key);
        }
    free(m->slots);
    memset(m, 0, sizeof *m);
}

size_t strmap_key(char *buf, size_t size, const char *const *parts, size_t n)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        const char *p = parts[i] ? parts[i] : "";
        size_t k = strlen(p);
        if (k + 1 > size - o)
            return 0;
        memcpy(buf + o, p, k);
        o += k;
        buf[o++] = 0;
    }
    return o;
}
