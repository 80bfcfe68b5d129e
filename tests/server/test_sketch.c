/* DDSketch (src/server/sketch.c) against exact quantiles of the same data:
 * every quantile within 1 % relative error, merge equal to one sketch of
 * all values, encode/decode round trip, corrupt encodings rejected. */
#include "store/sketch.h"

#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static uint64_t rng = 88172645463325252ULL;

static double next_uniform(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return ((double)(rng >> 11) + 0.5) / 9007199254740992.0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Exact quantile with the sketch's rank definition. */
static double exact(const double *sorted, size_t n, double q)
{
    return sorted[(size_t)floor(q * (double)(n - 1))];
}

static void check_quantiles(const sketch *s, double *values, size_t n, const char *what)
{
    static const double qs[] = {0, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999, 1};
    qsort(values, n, sizeof *values, cmp_double);
    assert_int_equal(s->count, n);
    for (size_t i = 0; i < sizeof qs / sizeof qs[0]; i++) {
        double want = exact(values, n, qs[i]);
        double got = sketch_quantile(s, qs[i]);
        double err = want == 0 ? fabs(got) : fabs(got - want) / want;
        if (err > SKETCH_ALPHA + 1e-12)
            fail_msg("%s: q=%g: got %.6f, exact %.6f (relative error %.4f > %.2f)", what, qs[i], got, want, err,
                     SKETCH_ALPHA);
    }
}

static void test_accuracy(void **state)
{
    (void)state;
    enum { N = 50000 };
    double *v = malloc(N * sizeof *v);
    static const char *const names[] = {"uniform 0-1000 ms", "log-normal around 300 ms", "exponential",
                                        "tiny values 1e-6..1e-3 ms", "with zeros", "wide: 0.001 ms to 1e7 ms"};
    for (int dist = 0; dist < 6; dist++) {
        sketch s;
        sketch_init(&s);
        for (size_t i = 0; i < N; i++) {
            double u = next_uniform();
            switch (dist) {
            case 0: v[i] = u * 1000; break;
            case 1: v[i] = 300 * exp(0.8 * sqrt(-2 * log(u)) * cos(2 * M_PI * next_uniform())); break;
            case 2: v[i] = -50 * log(u); break;
            case 3: v[i] = 1e-6 * pow(1000, u); break;
            case 4: v[i] = i % 3 == 0 ? 0 : u * 10; break;
            case 5: v[i] = 1e-3 * pow(1e10, u); break;
            }
            assert_int_equal(sketch_add(&s, v[i]), 0);
        }
        check_quantiles(&s, v, N, names[dist]);
        sketch_reset(&s);
    }
    free(v);
}

static void test_merge_equals_single(void **state)
{
    (void)state;
    enum { N = 20000, PARTS = 7 };
    sketch all, parts[PARTS], merged;
    sketch_init(&all);
    sketch_init(&merged);
    for (int p = 0; p < PARTS; p++)
        sketch_init(&parts[p]);
    double *v = malloc(N * sizeof *v);
    for (size_t i = 0; i < N; i++) {
        /* parts hold different ranges, so merging must widen the buckets */
        size_t p = i % PARTS;
        v[i] = (1 + (double)p * 100) * (0.5 + next_uniform());
        sketch_add(&all, v[i]);
        sketch_add(&parts[p], v[i]);
    }
    for (int p = 0; p < PARTS; p++)
        assert_int_equal(sketch_merge(&merged, &parts[p]), 0);
    assert_int_equal(merged.count, all.count);
    for (double q = 0; q <= 1.0; q += 0.01)
        assert_true(sketch_quantile(&merged, q) == sketch_quantile(&all, q));
    check_quantiles(&merged, v, N, "merged");
    for (int p = 0; p < PARTS; p++)
        sketch_reset(&parts[p]);
    sketch_reset(&all);
    sketch_reset(&merged);
    free(v);
}

/* s encodes in the layout `version` and back to the same sketch; every
 * truncation and every single-byte change either decodes to a consistent
 * sketch or is rejected, never read out of bounds (ASan). */
static void check_roundtrip(sketch *s, int version)
{
    sketch t;
    sketch_init(&t);
    uint8_t *buf;
    size_t len;
    assert_int_equal(sketch_encode(s, &buf, &len), 0);
    assert_int_equal(buf[1], version);
    assert_int_equal(sketch_decode(&t, buf, len), 0);
    assert_int_equal(t.count, s->count);
    assert_int_equal(t.zero_count, s->zero_count);
    assert_true(t.sum_ns == s->sum_ns && t.min == s->min && t.max == s->max);
    for (double q = 0; q <= 1.0; q += 0.05)
        assert_true(sketch_quantile(&t, q) == sketch_quantile(s, q));
    for (size_t cut = 0; cut < len; cut++)
        assert_int_equal(sketch_decode(&t, buf, cut), -EBADMSG);
    for (size_t i = 0; i < len; i++) {
        uint8_t saved = buf[i];
        buf[i] ^= 0x5a;
        if (sketch_decode(&t, buf, len) == 0) {
            uint64_t total = t.zero_count;
            for (uint32_t k = 0; k < t.n_bins; k++)
                total += t.bins[k];
            assert_int_equal(total, t.count);
        }
        buf[i] = saved;
    }
    free(buf);
    sketch_reset(&t);
}

static void test_encode_roundtrip(void **state)
{
    (void)state;
    sketch s;
    sketch_init(&s);
    for (int i = 0; i < 1000; i++)
        sketch_add(&s, i % 10 == 0 ? 0 : 1 + i * 0.37);
    check_roundtrip(&s, 3); /* most bins used: the counts one after the other */
    sketch_reset(&s);
    /* a few values far apart (a ten-minute bucket): the bins used, with the gaps between */
    static const double few[] = {3.1, 47.0, 48.2, 512.9, 9000.0, 9001.5};
    for (size_t i = 0; i < sizeof few / sizeof few[0]; i++)
        sketch_add(&s, few[i]);
    uint8_t *buf;
    size_t len;
    assert_int_equal(sketch_encode(&s, &buf, &len), 0);
    assert_true(len < 2 + 2 + 24 + 2 + 2 + 2 * 6 + 4); /* not the ~550 bins between 3.1 and 9001.5 */
    free(buf);
    check_roundtrip(&s, 4);
    sketch_reset(&s);
    /* one value (a sparse ten minutes: most rows of a spread upload): that value alone, 10 bytes */
    static const double ones[] = {12.345, 0, 1e-12, 987654.321};
    for (size_t i = 0; i < sizeof ones / sizeof ones[0]; i++) {
        sketch_add(&s, ones[i]);
        assert_int_equal(sketch_encode(&s, &buf, &len), 0);
        assert_int_equal(len, 10);
        sketch m;
        sketch_init(&m);
        sketch_add(&m, 3.0);
        sketch_add(&m, 4000.0);
        sketch want = {0};
        sketch_init(&want);
        sketch_merge(&want, &m);
        sketch_add(&want, ones[i]);
        assert_int_equal(sketch_merge_encoded(&m, buf, len), 0); /* as sketch_add of the value */
        assert_true(m.count == want.count && m.sum_ns == want.sum_ns && m.min == want.min && m.max == want.max &&
                    m.zero_count == want.zero_count && m.offset == want.offset && m.n_bins == want.n_bins);
        for (uint32_t k = 0; k < m.n_bins; k++)
            assert_int_equal(m.bins[k], want.bins[k]);
        buf[2 + 7] = 0xff; /* a negative value (NaN here): no sketch holds it */
        assert_int_equal(sketch_decode(&m, buf, len), -EBADMSG);
        free(buf);
        sketch_reset(&m);
        sketch_reset(&want);
        check_roundtrip(&s, 5);
        sketch_reset(&s);
    }
    /* two values, or one that a collapse moved: the bins as before */
    sketch_add(&s, 5.0);
    sketch_add(&s, 5.0);
    check_roundtrip(&s, 3);
    sketch_reset(&s);
}

static size_t put_le64(uint8_t *p, double d)
{
    uint64_t u;
    memcpy(&u, &d, 8);
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(u >> (8 * i));
    return 8;
}

/* The layouts of earlier pacerd (versions 1 and 2: the sum a double in
 * milliseconds) are still read, the sum rounded to the nanosecond. */
static void test_decode_f64_sum(void **state)
{
    (void)state;
    sketch want, t;
    sketch_init(&want);
    sketch_init(&t);
    sketch_add(&want, 3.1);
    assert_int_equal(want.n_bins, 1);
    uint32_t zz = ((uint32_t)want.offset << 1) ^ (uint32_t)(want.offset >> 31);
    assert_true(zz < 128);
    for (int version = 1; version <= 2; version++) {
        uint8_t buf[64];
        size_t n = 0;
        buf[n++] = 'D';
        buf[n++] = (uint8_t)version;
        buf[n++] = 1; /* count */
        buf[n++] = 0; /* zero count */
        n += put_le64(buf + n, 3.1);
        n += put_le64(buf + n, 3.1);
        n += put_le64(buf + n, 3.1);
        buf[n++] = (uint8_t)zz;
        buf[n++] = 1; /* n_bins */
        if (version == 2)
            buf[n++] = 0; /* no gap */
        buf[n++] = 1;
        assert_int_equal(sketch_decode(&t, buf, n), 0);
        assert_int_equal(t.count, 1);
        assert_true(t.sum_ns == want.sum_ns && t.sum_ns == 3100000);
        assert_true(sketch_quantile(&t, 0.5) == sketch_quantile(&want, 0.5));
    }
    sketch_reset(&want);
    sketch_reset(&t);
}

/* The sum is whole nanoseconds: the same whatever the order of the
 * additions and merges (a double's sum is not). */
static void test_sum_exact(void **state)
{
    (void)state;
    sketch a, b, c;
    sketch_init(&a);
    sketch_init(&b);
    sketch_init(&c);
    static const double v[] = {0.1, 1e9 + 0.3, 0.2, 7.000001, 1e-3, 123.456789};
    size_t n = sizeof v / sizeof v[0];
    for (size_t i = 0; i < n; i++)
        sketch_add(&a, v[i]);
    for (size_t i = n; i-- > 0;)
        sketch_add(i % 2 ? &b : &c, v[i]);
    assert_int_equal(sketch_merge(&b, &c), 0);
    assert_true(a.sum_ns == b.sum_ns);
    assert_true(a.sum_ns == (__int128)100000 + 1000000000300000 + 200000 + 7000001 + 1000 + 123456789);
    assert_true(sketch_sum(&a) == (double)a.sum_ns / 1e6);
    sketch_reset(&a);
    sketch_reset(&b);
    sketch_reset(&c);
}

/* Merging an encoding as it is gives what decoding it and merging gives,
 * bucket for bucket, for both layouts and for sketches of other ranges;
 * a cut encoding is refused. */
static void test_merge_encoded(void **state)
{
    (void)state;
    sketch parts[3], a, b;
    for (int p = 0; p < 3; p++)
        sketch_init(&parts[p]);
    sketch_init(&a);
    sketch_init(&b);
    for (int i = 0; i < 3000; i++)
        sketch_add(&parts[i % 3], i % 3 == 2 ? 5000.0 + i : 0.5 + i * (i % 3 ? 0.01 : 3.7)); /* one sparse */
    sketch_add(&parts[2], 0);
    for (int p = 0; p < 3; p++) {
        uint8_t *buf;
        size_t len;
        assert_int_equal(sketch_encode(&parts[p], &buf, &len), 0);
        assert_int_equal(sketch_merge_encoded(&a, buf, len), 0);
        sketch t;
        sketch_init(&t);
        assert_int_equal(sketch_decode(&t, buf, len), 0);
        assert_int_equal(sketch_merge(&b, &t), 0);
        sketch_reset(&t);
        for (size_t cut = 0; cut < len; cut++) {
            sketch junk;
            sketch_init(&junk);
            assert_int_equal(sketch_merge_encoded(&junk, buf, cut), -EBADMSG);
            sketch_reset(&junk);
        }
        free(buf);
    }
    assert_int_equal(a.count, b.count);
    assert_int_equal(a.zero_count, b.zero_count);
    assert_true(a.min == b.min && a.max == b.max && a.sum_ns == b.sum_ns);
    for (double q = 0; q <= 1.0; q += 0.01)
        assert_true(sketch_quantile(&a, q) == sketch_quantile(&b, q));
    for (int p = 0; p < 3; p++)
        sketch_reset(&parts[p]);
    sketch_reset(&a);
    sketch_reset(&b);
}

static void test_edges(void **state)
{
    (void)state;
    sketch s;
    sketch_init(&s);
    assert_true(sketch_quantile(&s, 0.5) == 0);
    assert_int_equal(sketch_add(&s, -1), -EINVAL);
    assert_int_equal(sketch_add(&s, NAN), -EINVAL);
    assert_int_equal(sketch_add(&s, INFINITY), -EINVAL);
    assert_int_equal(s.count, 0);
    sketch_add(&s, 42.5);
    assert_true(sketch_quantile(&s, 0) == 42.5); /* one value: clamped to the exact min/max */
    assert_true(sketch_quantile(&s, 1) == 42.5);
    /* a range wider than the bucket limit collapses the lowest buckets but keeps the count */
    sketch_add(&s, 1e-8);
    sketch_add(&s, 1e300);
    assert_true(s.n_bins <= SKETCH_MAX_BINS);
    assert_int_equal(s.count, 3);
    assert_true(sketch_quantile(&s, 1) == 1e300);
    sketch_reset(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_accuracy),
        cmocka_unit_test(test_merge_equals_single),
        cmocka_unit_test(test_merge_encoded),
        cmocka_unit_test(test_encode_roundtrip),
        cmocka_unit_test(test_decode_f64_sum),
        cmocka_unit_test(test_sum_exact),
        cmocka_unit_test(test_edges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
