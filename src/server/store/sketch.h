/* DDSketch: a mergeable quantile sketch with bounded relative error.
 *
 * Every positive value x falls in bucket i = ceil(log_gamma(x)) with
 * gamma = (1 + a) / (1 - a); a bucket covers (gamma^(i-1), gamma^i] and
 * answers 2 gamma^i / (gamma + 1), which is within a relative error a of
 * every value in it. pacerd uses a = 0.01 (SKETCH_ALPHA). Values at or below
 * SKETCH_MIN_VALUE (including zero) are counted in a zero bucket that
 * answers 0. Negative values and NaN are not accepted (sketch_add ignores
 * them and returns -EINVAL): every metric pacerd keeps is a duration.
 *
 * Two sketches merge by adding bucket counts, so the merge of per-day
 * sketches equals the sketch of all the values (exactly, bucket for bucket).
 * The sum is kept in whole nanoseconds (each value rounded to the
 * nanosecond, then added as an integer), so that it, too, is the same
 * however the values were split and merged: a mean does not depend on the
 * order of additions, nor on which store or tier summed them.
 *
 * Buckets are a dense array of counts starting at index `offset`. At most
 * SKETCH_MAX_BINS buckets are kept; beyond that the lowest buckets collapse
 * into one (DDSketch's collapsing-lowest store), which loses accuracy only on
 * the low quantiles of data spanning more than 1e17:1 — never for durations
 * in milliseconds.
 *
 * A sketch is not thread-safe; callers own and lock it.
 */
#ifndef PACER_SERVER_SKETCH_H
#define PACER_SERVER_SKETCH_H

#include <stddef.h>
#include <stdint.h>

#define SKETCH_ALPHA 0.01
#define SKETCH_MIN_VALUE 1e-9
#define SKETCH_MAX_BINS 4096

typedef struct sketch {
    uint64_t count;       /* every value added, zero bucket included */
    uint64_t zero_count;
    __int128 sum_ns;      /* the values, each rounded to the nanosecond, summed exactly (saturating) */
    double min, max;      /* exact, over the values added */
    int32_t offset;       /* bucket index of bins[0] */
    uint32_t n_bins;      /* used */
    uint32_t cap_bins;    /* allocated */
    uint64_t *bins;
} sketch;

/* Initialises an empty sketch (no allocation). */
void sketch_init(sketch *s);
/* Frees the buckets; the sketch is empty and reusable afterwards. */
void sketch_reset(sketch *s);

/* Adds one value. Returns 0, -EINVAL for a negative or non-finite value
 * (not added), -ENOMEM when the buckets could not grow (not added). */
int sketch_add(sketch *s, double value);

/* Adds every value of src into dst. Returns 0 or -ENOMEM (dst unchanged). */
int sketch_merge(sketch *dst, const sketch *src);

/* The q-quantile (0 <= q <= 1) of the values added: the value of rank
 * floor(q * (count - 1)) in sorted order, within SKETCH_ALPHA relative
 * error; the lowest and highest ranks answer the exact min and max.
 * Returns 0 for an empty sketch. */
double sketch_quantile(const sketch *s, double q);

/* The sum of the values in milliseconds (from sum_ns). */
double sketch_sum(const sketch *s);

/* Serialises to a malloc'd buffer (compact: varint counts; for a sketch
 * with few of its bins used, those with the gaps between; for a sketch of
 * one value, that value alone). Returns 0 and stores the buffer and its
 * size, or -ENOMEM. */
int sketch_encode(const sketch *s, uint8_t **ret_buf, size_t *ret_len);

/* Parses what sketch_encode produced into an empty (initialised) sketch.
 * Returns 0, or -EBADMSG for a buffer that is not a valid encoding (the
 * sketch is left empty), or -ENOMEM. Never reads outside buf[0..len). */
int sketch_decode(sketch *s, const uint8_t *buf, size_t len);

/* sketch_merge of what sketch_encode wrote into buf, without decoding it
 * first (a query merges thousands). 0, -EBADMSG for a buffer that is not
 * an encoding (dst may then hold part of it: throw it away), or -ENOMEM
 * (dst unchanged). */
int sketch_merge_encoded(sketch *dst, const uint8_t *buf, size_t len);

#endif
