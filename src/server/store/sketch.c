/* DDSketch (sketch.h): dense buckets, collapsing the lowest when full. */
#include "sketch.h"

#include <errno.h>
#include <stdbool.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* gamma = (1 + a) / (1 - a); log_gamma(x) = log(x) * inv_log_gamma. */
static double gamma_v, inv_log_gamma;

static void constants(void)
{
    if (gamma_v == 0) {
        double g = (1 + SKETCH_ALPHA) / (1 - SKETCH_ALPHA);
        inv_log_gamma = 1.0 / log(g);
        gamma_v = g; /* written last: a racing reader recomputes the same */
    }
}

void sketch_init(sketch *s)
{
    memset(s, 0, sizeof *s);
    constants();
}

void sketch_reset(sketch *s)
{
    free(s->bins);
    sketch_init(s);
}

static int32_t index_of(double x)
{
    double l = ceil(log(x) * inv_log_gamma);
    if (l > 1e9) /* unreachable for finite doubles (|l| < 36000); keeps the cast defined */
        l = 1e9;
    if (l < -1e9)
        l = -1e9;
    return (int32_t)l;
}

static double value_of(int32_t i)
{
    return 2.0 * pow(gamma_v, i) / (gamma_v + 1.0);
}

/* Makes the buckets cover [lo, hi], collapsing indices below the lowest
 * kept one into it when the span exceeds SKETCH_MAX_BINS. Stores the lowest
 * kept index (values below it are counted there). Returns 0 or -ENOMEM with
 * the sketch unchanged. */
static int reserve(sketch *s, int32_t lo, int32_t hi, int32_t *ret_floor)
{
    if (s->n_bins) {
        int32_t cur_hi = s->offset + (int32_t)s->n_bins - 1;
        if (s->offset < lo)
            lo = s->offset;
        if (cur_hi > hi)
            hi = cur_hi;
    }
    int64_t span = (int64_t)hi - lo + 1;
    if (span > SKETCH_MAX_BINS) {
        lo = hi - SKETCH_MAX_BINS + 1;
        span = SKETCH_MAX_BINS;
    }
    if (s->n_bins && lo == s->offset && (uint32_t)span == s->n_bins) {
        *ret_floor = lo;
        return 0;
    }
    uint32_t n = (uint32_t)span;
    uint64_t *bins = calloc(n, sizeof *bins);
    if (!bins)
        return -ENOMEM;
    for (uint32_t i = 0; i < s->n_bins; i++) {
        int32_t idx = s->offset + (int32_t)i;
        if (idx < lo)
            idx = lo;
        bins[idx - lo] += s->bins[i];
    }
    free(s->bins);
    s->bins = bins;
    s->cap_bins = n;
    s->n_bins = n;
    s->offset = lo;
    *ret_floor = lo;
    return 0;
}

#define SUM_MAX ((__int128)1 << 120) /* sums saturate here (far beyond any duration) */

static __int128 add_sat(__int128 a, __int128 b)
{
    return a > SUM_MAX - b ? SUM_MAX : a + b;
}

static void note_value(sketch *s, double v)
{
    if (s->count == 0 || v < s->min)
        s->min = v;
    if (s->count == 0 || v > s->max)
        s->max = v;
    double ns = nearbyint(v * 1e6); /* v >= 0 and finite */
    s->sum_ns = add_sat(s->sum_ns, ns < 1e36 ? (__int128)ns : SUM_MAX);
    s->count++;
}

double sketch_sum(const sketch *s)
{
    return (double)s->sum_ns / 1e6;
}

int sketch_add(sketch *s, double value)
{
    if (!(value >= 0) || isinf(value))
        return -EINVAL;
    if (value <= SKETCH_MIN_VALUE) {
        s->zero_count++;
        note_value(s, value);
        return 0;
    }
    int32_t i = index_of(value);
    if (s->n_bins && i >= s->offset && i < s->offset + (int32_t)s->n_bins) {
        s->bins[i - s->offset]++;
    } else {
        int32_t floor_idx;
        int r = reserve(s, i, i, &floor_idx);
        if (r < 0)
            return r;
        s->bins[(i < floor_idx ? floor_idx : i) - s->offset]++;
    }
    note_value(s, value);
    return 0;
}

int sketch_merge(sketch *dst, const sketch *src)
{
    if (src->count == 0)
        return 0;
    if (src->n_bins) {
        int32_t floor_idx;
        int r = reserve(dst, src->offset, src->offset + (int32_t)src->n_bins - 1, &floor_idx);
        if (r < 0)
            return r;
        for (uint32_t k = 0; k < src->n_bins; k++) {
            int32_t i = src->offset + (int32_t)k;
            dst->bins[(i < floor_idx ? floor_idx : i) - dst->offset] += src->bins[k];
        }
    }
    if (dst->count == 0 || src->min < dst->min)
        dst->min = src->min;
    if (dst->count == 0 || src->max > dst->max)
        dst->max = src->max;
    dst->sum_ns = add_sat(dst->sum_ns, src->sum_ns);
    dst->count += src->count;
    dst->zero_count += src->zero_count;
    return 0;
}

double sketch_quantile(const sketch *s, double q)
{
    if (s->count == 0)
        return 0;
    if (!(q >= 0))
        q = 0;
    if (q > 1)
        q = 1;
    uint64_t rank = (uint64_t)floor(q * (double)(s->count - 1));
    if (rank == 0)
        return s->min; /* the extremes are known exactly */
    if (rank >= s->count - 1)
        return s->max;
    double v = s->max;
    if (rank < s->zero_count) {
        v = 0;
    } else {
        uint64_t cum = s->zero_count;
        for (uint32_t k = 0; k < s->n_bins; k++) {
            cum += s->bins[k];
            if (cum > rank) {
                v = value_of(s->offset + (int32_t)k);
                break;
            }
        }
    }
    /* The exact extremes bound every quantile; clamping only moves the
     * estimate closer to the true value. */
    if (v < s->min)
        v = s->min;
    if (v > s->max)
        v = s->max;
    return v;
}

/* Encoding: 'D' version | varint count | varint zero_count | the sum |
 * f64 min max | zigzag varint offset | varint n_bins | the counts. The
 * sum: versions 3 and 4, varint sum_ns (low 64 bits) and varint sum_ns >>
 * 64; versions 1 and 2 (files of earlier pacerd), f64 sum in milliseconds,
 * read rounded to nanoseconds. */

static size_t put_varint(uint8_t *p, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        p[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (uint8_t)v;
    return n;
}

static int get_varint(const uint8_t *buf, size_t len, size_t *pos, uint64_t *ret)
{
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (*pos >= len)
            return -EBADMSG;
        uint8_t b = buf[(*pos)++];
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *ret = v;
            return 0;
        }
    }
    return -EBADMSG;
}

static void put_double(uint8_t *p, double d)
{
    uint64_t u;
    memcpy(&u, &d, 8);
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(u >> (8 * i));
}

static int get_double(const uint8_t *buf, size_t len, size_t *pos, double *ret)
{
    if (*pos > len || len - *pos < 8)
        return -EBADMSG;
    uint64_t u = 0;
    for (int i = 0; i < 8; i++)
        u |= (uint64_t)buf[*pos + (size_t)i] << (8 * i);
    *pos += 8;
    memcpy(ret, &u, 8);
    return 0;
}

/* Two layouts of the counts after the same header: dense (versions 1
 * and 3), the n_bins counts one after the other; sparse (versions 2 and
 * 4), for a sketch with few of its bins used (a sub-day bucket of a few
 * values), pairs (zeros skipped, count) for the bins that are not empty.
 * The smaller is written (3 or 4); all four are read. */
/* Whether s is exactly what sketch_add of its one value makes of an empty
 * sketch (then its encoding is that value alone: layout 5). */
static bool one_value(const sketch *s)
{
    if (s->count != 1 || !(s->min == s->max))
        return false;
    sketch t;
    sketch_init(&t);
    bool same = sketch_add(&t, s->min) == 0 && t.zero_count == s->zero_count && t.sum_ns == s->sum_ns &&
                t.n_bins == s->n_bins && t.offset == s->offset && (!t.n_bins || t.bins[0] == s->bins[0]);
    sketch_reset(&t);
    return same;
}

/* Layout 5: 'D', 5, the one value (8 bytes). Returns it, or -1 when buf is
 * not that layout or its value is not one sketch_add takes. */
static double value_of_one(const uint8_t *buf, size_t len)
{
    double v = -1;
    size_t pos = 2;
    if (len != 10 || get_double(buf, len, &pos, &v) < 0 || !(v >= 0) || isinf(v))
        return -1;
    return v;
}

int sketch_encode(const sketch *s, uint8_t **ret_buf, size_t *ret_len)
{
    if (one_value(s)) {
        uint8_t *one = malloc(10);
        if (!one)
            return -ENOMEM;
        one[0] = 'D';
        one[1] = 5;
        put_double(one + 2, s->min);
        *ret_buf = one;
        *ret_len = 10;
        return 0;
    }
    size_t dense = 0, sparse = 0;
    uint8_t tmp[10];
    for (uint32_t k = 0, gap = 0; k < s->n_bins; k++) {
        dense += put_varint(tmp, s->bins[k]);
        if (!s->bins[k]) {
            gap++;
            continue;
        }
        sparse += put_varint(tmp, gap) + put_varint(tmp, s->bins[k]);
        gap = 0;
    }
    bool use_sparse = sparse < dense;
    size_t cap = 2 + 10 * 4 + 16 + 5 + 5 + (use_sparse ? sparse : dense);
    uint8_t *buf = malloc(cap);
    if (!buf)
        return -ENOMEM;
    size_t n = 0;
    buf[n++] = 'D';
    buf[n++] = use_sparse ? 4 : 3;
    n += put_varint(buf + n, s->count);
    n += put_varint(buf + n, s->zero_count);
    n += put_varint(buf + n, (uint64_t)s->sum_ns);
    n += put_varint(buf + n, (uint64_t)(s->sum_ns >> 64));
    put_double(buf + n, s->min);
    put_double(buf + n + 8, s->max);
    n += 16;
    uint32_t zz = ((uint32_t)s->offset << 1) ^ (uint32_t)(s->offset >> 31);
    n += put_varint(buf + n, zz);
    n += put_varint(buf + n, s->n_bins);
    for (uint32_t k = 0, gap = 0; k < s->n_bins; k++) {
        if (!use_sparse) {
            n += put_varint(buf + n, s->bins[k]);
        } else if (!s->bins[k]) {
            gap++;
        } else {
            n += put_varint(buf + n, gap);
            n += put_varint(buf + n, s->bins[k]);
            gap = 0;
        }
    }
    *ret_buf = buf;
    *ret_len = n;
    return 0;
}

/* What comes before the counts, from pos 2 on; 0 or -EBADMSG. */
static int get_header(const uint8_t *buf, size_t len, size_t *pos, uint64_t *count, uint64_t *zero,
                      __int128 *sum_ns, double *mn, double *mx, uint64_t *zz, uint64_t *n_bins, bool *sparse)
{
    if (len < 2 || buf[0] != 'D' || buf[1] < 1 || buf[1] > 4)
        return -EBADMSG;
    bool f64_sum = buf[1] <= 2;
    *sparse = buf[1] == 2 || buf[1] == 4;
    uint64_t lo = 0, hi = 0;
    double sum = 0;
    if (get_varint(buf, len, pos, count) < 0 || get_varint(buf, len, pos, zero) < 0 ||
        (f64_sum ? get_double(buf, len, pos, &sum) < 0
                 : get_varint(buf, len, pos, &lo) < 0 || get_varint(buf, len, pos, &hi) < 0) ||
        get_double(buf, len, pos, mn) < 0 || get_double(buf, len, pos, mx) < 0 ||
        get_varint(buf, len, pos, zz) < 0 || get_varint(buf, len, pos, n_bins) < 0)
        return -EBADMSG;
    *sum_ns = f64_sum ? (sum >= 0 && sum * 1e6 < 1e36 ? (__int128)nearbyint(sum * 1e6) : 0)
                      : (__int128)((unsigned __int128)hi << 64 | lo);
    return *sum_ns < 0 || *sum_ns > SUM_MAX ? -EBADMSG : 0;
}

/* What an encoded sketch says before its buckets. */
typedef struct head {
    double one; /* a sketch of one value: it (then nothing else is set) */
    size_t pos; /* where the buckets begin */
    uint64_t count, zero, n_bins;
    __int128 sum_ns;
    double mn, mx;
    int32_t offset;
    bool sparse;
} head;

/* 1: one value (h->one); 0: a header, checked; -EBADMSG. */
static int read_head(const uint8_t *buf, size_t len, head *h)
{
    if (len >= 2 && buf[0] == 'D' && buf[1] == 5) {
        h->one = value_of_one(buf, len);
        return h->one < 0 ? -EBADMSG : 1;
    }
    uint64_t zz;
    h->pos = 2;
    if (get_header(buf, len, &h->pos, &h->count, &h->zero, &h->sum_ns, &h->mn, &h->mx, &zz, &h->n_bins,
                   &h->sparse) < 0 ||
        zz > UINT32_MAX || h->n_bins > SKETCH_MAX_BINS || h->zero > h->count)
        return -EBADMSG;
    h->offset = (int32_t)((uint32_t)(zz >> 1) ^ -(uint32_t)(zz & 1));
    if ((int64_t)h->offset + (int64_t)h->n_bins > INT32_MAX || (h->n_bins == 0) != (h->count == h->zero))
        return -EBADMSG;
    return 0;
}

int sketch_merge_encoded(sketch *dst, const uint8_t *buf, size_t len)
{
    head h;
    int hr = read_head(buf, len, &h);
    if (hr != 0)
        return hr < 0 ? hr : sketch_add(dst, h.one);
    if (h.count && !(h.mn <= h.mx))
        return -EBADMSG;
    if (h.count == 0)
        return h.pos == len ? 0 : -EBADMSG;
    int32_t floor_idx = 0;
    if (h.n_bins) {
        int r = reserve(dst, h.offset, h.offset + (int32_t)h.n_bins - 1, &floor_idx);
        if (r < 0)
            return r;
    }
    uint64_t total = h.zero;
    for (uint64_t k = 0; k < h.n_bins; k++) {
        uint64_t gap = 0, c;
        if (h.sparse && h.pos == len)
            break;
        if ((h.sparse && (get_varint(buf, len, &h.pos, &gap) < 0 || gap >= h.n_bins - k)) ||
            get_varint(buf, len, &h.pos, &c) < 0 || c > h.count - total || (h.sparse && c == 0))
            return -EBADMSG;
        k += gap;
        int32_t i = h.offset + (int32_t)k;
        dst->bins[(i < floor_idx ? floor_idx : i) - dst->offset] += c;
        total += c;
    }
    if (h.pos != len || total != h.count)
        return -EBADMSG;
    if (dst->count == 0 || h.mn < dst->min)
        dst->min = h.mn;
    if (dst->count == 0 || h.mx > dst->max)
        dst->max = h.mx;
    dst->sum_ns = add_sat(dst->sum_ns, h.sum_ns);
    dst->count += h.count;
    dst->zero_count += h.zero;
    return 0;
}

int sketch_decode(sketch *s, const uint8_t *buf, size_t len)
{
    /* the buckets of an earlier decode are used again when they are room
     * enough (a query decodes thousands of sketches into one) */
    uint64_t *keep = s->bins;
    uint32_t keep_cap = s->cap_bins;
    s->bins = NULL;
    sketch_init(s);
    head h;
    int hr = read_head(buf, len, &h);
    if (hr < 0)
        goto bad;
    if (hr > 0) {
        free(keep);
        return sketch_add(s, h.one);
    }
    uint64_t *bins = NULL;
    uint32_t cap = 0;
    if (h.n_bins && keep && keep_cap >= h.n_bins) {
        bins = keep;
        cap = keep_cap;
        memset(bins, 0, (size_t)h.n_bins * sizeof *bins);
        keep = NULL;
    } else if (h.n_bins) {
        bins = calloc(h.n_bins, sizeof *bins);
        cap = (uint32_t)h.n_bins;
        if (!bins) {
            free(keep);
            return -ENOMEM;
        }
    }
    free(keep);
    uint64_t total = h.zero;
    for (uint64_t k = 0; k < h.n_bins; k++) {
        uint64_t gap = 0;
        if (h.sparse && h.pos == len)
            break; /* the rest are empty */
        if ((h.sparse && (get_varint(buf, len, &h.pos, &gap) < 0 || gap >= h.n_bins - k)) ||
            get_varint(buf, len, &h.pos, &bins[k + gap]) < 0 || bins[k + gap] > h.count - total ||
            (h.sparse && bins[k + gap] == 0)) {
            free(bins);
            return -EBADMSG;
        }
        k += gap;
        total += bins[k];
    }
    if (h.pos != len || total != h.count || (h.count && !(h.mn <= h.mx))) {
        free(bins);
        return -EBADMSG;
    }
    s->count = h.count;
    s->zero_count = h.zero;
    s->sum_ns = h.sum_ns;
    s->min = h.mn;
    s->max = h.mx;
    s->offset = h.offset;
    s->n_bins = (uint32_t)h.n_bins;
    s->cap_bins = cap;
    s->bins = bins;
    return 0;
bad:
    free(keep); /* the buckets of the earlier decode: s is empty now */
    return -EBADMSG;
}
