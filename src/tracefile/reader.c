/* Reader of one .ptrace file (trace_format.h): header check, the body
 * (plain, or a zstd stream), records, events. Reads versions 1 and 2.
 *
 * Memory is bounded: the input is read in ZSTD_DStreamInSize() pieces, the
 * body's bytes are kept only for the record being decoded (at most
 * PT_MAX_PAYLOAD), and events are decoded one at a time from it.
 * Every length and count is checked against what is left, so a damaged or
 * hostile file yields an error naming the offset, never a crash.
 * A stream that simply stops (process killed) ends quietly:
 * pt_reader_complete() tells the caller.
 */
#include <pacer/trace.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

struct pt_reader {
    FILE *f;                 /* file source, or NULL */
    const uint8_t *mem;      /* memory source */
    size_t mem_size, mem_pos;
    char *path;

    struct pt_file_header hdr;
    bool zstd;               /* the body is a zstd stream */
    ZSTD_DCtx *dctx;
    uint8_t *in;
    size_t in_cap;
    ZSTD_inBuffer zin;
    bool in_eof, stream_ended, frame_open;

    uint8_t *dbuf;           /* decompressed bytes [dpos, dlen) */
    size_t dpos, dlen, dcap;
    uint64_t doff;           /* decompressed offset of dbuf[0] */

    /* the EVENTS (v1) or CHUNK (v2) record being decoded */
    const uint8_t *ep, *eend;
    uint32_t etid;
    uint64_t eleft, prev_addr, prev_tick, prev_sp;
    uint64_t fn_base;
    bool chunk;              /* ep..eend are v2 events, decoded until eend */
    uint64_t gap;            /* a gap to report before the chunk's events */
    uint64_t rec_off;

    bool have_clock, complete, failed;
    uint64_t tick0, ns0, ticks, ns;
    uint64_t events;
    char err[256];
};

static int fail(pt_reader *r, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(pt_reader *r, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = snprintf(r->err, sizeof r->err, "%s: ", r->path ? r->path : "trace");
    if (n < 0 || (size_t)n >= sizeof r->err)
        n = 0;
    vsnprintf(r->err + n, sizeof r->err - (size_t)n, fmt, ap);
    va_end(ap);
    r->failed = true;
    return code;
}

static size_t src_read(pt_reader *r, void *buf, size_t n)
{
    if (r->f)
        return fread(buf, 1, n, r->f);
    size_t left = r->mem_size - r->mem_pos;
    if (n > left)
        n = left;
    memcpy(buf, r->mem + r->mem_pos, n);
    r->mem_pos += n;
    return n;
}

static int open_common(pt_reader *r, pt_reader **ret, char *err, size_t errlen)
{
    int rc;
    if (src_read(r, &r->hdr, sizeof r->hdr) != sizeof r->hdr) {
        rc = fail(r, -EBADMSG, "too short for a pacer trace (%zu-byte header)", sizeof r->hdr);
        goto out;
    }
    if (memcmp(r->hdr.magic, PT_MAGIC, 8) != 0) {
        rc = fail(r, -EBADMSG, "not a pacer trace (bad magic)");
        goto out;
    }
    if (r->hdr.version < PT_VERSION_MIN || r->hdr.version > PT_VERSION) {
        rc = fail(r, -EPROTONOSUPPORT, "trace format version %u; this pacer reads versions %u to %u",
                  r->hdr.version, PT_VERSION_MIN, PT_VERSION);
        goto out;
    }
    bool v1 = r->hdr.version == 1;
    if ((v1 ? r->hdr.header_size != PT_HEADER_SIZE
            : r->hdr.header_size < PT_HEADER_SIZE || r->hdr.header_size > PT_HEADER_MAX) ||
        r->hdr.sp_bits == 0 || r->hdr.sp_bits > 32 ||
        (r->hdr.clock != PT_CLOCK_TSC && r->hdr.clock != PT_CLOCK_MONOTONIC) ||
        (!v1 && (r->hdr.flags & ~PT_FLAG_ZSTD))) {
        rc = fail(r, -EBADMSG, "damaged header");
        goto out;
    }
    /* Version 1 has no flags field (it was reserved, 0): always zstd. */
    r->zstd = v1 || (r->hdr.flags & PT_FLAG_ZSTD);
    for (size_t left = r->hdr.header_size - PT_HEADER_SIZE; left > 0;) {
        uint8_t skip[512];
        size_t k = left < sizeof skip ? left : sizeof skip;
        if (src_read(r, skip, k) != k) {
            rc = fail(r, -EBADMSG, "cut short inside its %u-byte header", r->hdr.header_size);
            goto out;
        }
        left -= k;
    }
    r->dctx = r->zstd ? ZSTD_createDCtx() : NULL;
    r->in_cap = ZSTD_DStreamInSize();
    r->in = r->zstd ? malloc(r->in_cap) : NULL;
    r->dcap = 1 << 17;
    r->dbuf = malloc(r->dcap);
    if ((r->zstd && (!r->dctx || !r->in)) || !r->dbuf) {
        rc = fail(r, -ENOMEM, "out of memory");
        goto out;
    }
    /* Bounds zstd's window, so a hostile frame cannot ask for gigabytes. */
    if (r->zstd)
        ZSTD_DCtx_setParameter(r->dctx, ZSTD_d_windowLogMax, 27);
    r->zin.src = r->in;
    *ret = r;
    return 0;
out:
    if (err && errlen)
        snprintf(err, errlen, "%s", r->err);
    pt_reader_free(r);
    return rc;
}

int pt_reader_open_file(const char *path, pt_reader **ret, char *err, size_t errlen)
{
    pt_reader *r = calloc(1, sizeof *r);
    if (!r)
        return -ENOMEM;
    r->path = strdup(path);
    r->f = fopen(path, "rb");
    if (!r->f) {
        int e = errno;
        if (err && errlen)
            snprintf(err, errlen, "%s: %s", path, strerror(e));
        pt_reader_free(r);
        return -e;
    }
    return open_common(r, ret, err, errlen);
}

int pt_reader_open_mem(const void *data, size_t size, pt_reader **ret, char *err, size_t errlen)
{
    pt_reader *r = calloc(1, sizeof *r);
    if (!r)
        return -ENOMEM;
    r->mem = data;
    r->mem_size = size;
    return open_common(r, ret, err, errlen);
}

void pt_reader_free(pt_reader *r)
{
    if (!r)
        return;
    if (r->f)
        fclose(r->f);
    ZSTD_freeDCtx(r->dctx);
    free(r->in);
    free(r->dbuf);
    free(r->path);
    free(r);
}

const char *pt_reader_error(const pt_reader *r)
{
    return r->err;
}

const struct pt_file_header *pt_reader_header(const pt_reader *r)
{
    return &r->hdr;
}

bool pt_reader_complete(const pt_reader *r)
{
    return r->complete;
}

uint64_t pt_reader_event_count(const pt_reader *r)
{
    return r->events;
}

/* Makes at least `want` decompressed bytes available at dbuf+dpos.
 * 1 when they are, 0 when the stream ended first, -errno on damage. */
static int fill(pt_reader *r, size_t want)
{
    if (r->dlen - r->dpos >= want)
        return 1;
    if (r->dpos > 0) {
        memmove(r->dbuf, r->dbuf + r->dpos, r->dlen - r->dpos);
        r->doff += r->dpos;
        r->dlen -= r->dpos;
        r->dpos = 0;
    }
    if (want > r->dcap) {
        size_t cap = r->dcap;
        while (cap < want)
            cap *= 2;
        uint8_t *n = realloc(r->dbuf, cap);
        if (!n)
            return fail(r, -ENOMEM, "out of memory");
        r->dbuf = n;
        r->dcap = cap;
    }
    while (r->dlen < want && !r->zstd) {
        if (r->in_eof)
            return 0;
        size_t n = src_read(r, r->dbuf + r->dlen, r->dcap - r->dlen);
        if (n == 0) {
            r->in_eof = true;
            if (r->f && ferror(r->f))
                return fail(r, -EIO, "read error");
            return 0;
        }
        r->dlen += n;
    }
    while (r->dlen < want) {
        if (r->zin.pos == r->zin.size) {
            if (r->in_eof)
                return 0;
            size_t n = src_read(r, r->in, r->in_cap);
            if (n == 0) {
                r->in_eof = true;
                if (r->f && ferror(r->f))
                    return fail(r, -EIO, "read error");
                return 0;
            }
            r->zin.size = n;
            r->zin.pos = 0;
        }
        ZSTD_outBuffer out = {r->dbuf, r->dcap, r->dlen};
        size_t hint = ZSTD_decompressStream(r->dctx, &out, &r->zin);
        if (ZSTD_isError(hint))
            return fail(r, -EBADMSG, "compressed data damaged near decoded offset %llu (%s)",
                        (unsigned long long)(r->doff + r->dlen), ZSTD_getErrorName(hint));
        r->dlen = out.pos;
    }
    return 1;
}

static int get_varint(pt_reader *r, const uint8_t **p, const uint8_t *end, uint64_t *v, const char *what)
{
    if (pt_get_varint(p, end, v) < 0)
        return fail(r, -EBADMSG, "record at decoded offset %llu: bad %s", (unsigned long long)r->rec_off, what);
    return 0;
}

static uint64_t to_ns(const pt_reader *r, uint64_t tick)
{
    __int128 d = (__int128)(int64_t)(tick - r->tick0) * (__int128)r->ns / (__int128)r->ticks;
    return r->ns0 + (uint64_t)(int64_t)d;
}

/* Decodes the next event of the current CHUNK record (version 2). */
static int next_chunk_event(pt_reader *r, pt_event *ev)
{
    uint64_t h = 0, v = 0;
    const uint8_t *p = r->ep;
    if (pt_get_pv(&p, r->eend, &h) < 0)
        return fail(r, -EBADMSG, "record at decoded offset %llu: event cut short", (unsigned long long)r->rec_off);
    unsigned kind = (unsigned)(h & 3);
    uint64_t tick = r->prev_tick + (h >> 2);
    memset(ev, 0, sizeof *ev);
    if (kind == PT_CK_ENTER || kind == PT_CK_LONGJMP) {
        if (r->eend - p < 2)
            return fail(r, -EBADMSG, "record at decoded offset %llu: event cut short",
                        (unsigned long long)r->rec_off);
        ev->sp = (uint64_t)p[0] | (uint64_t)p[1] << 8;
        p += 2;
    }
    if (kind == PT_CK_ENTER) {
        if (pt_get_pv(&p, r->eend, &v) < 0)
            return fail(r, -EBADMSG, "record at decoded offset %llu: event cut short",
                        (unsigned long long)r->rec_off);
        ev->addr = r->fn_base + (uint64_t)pt_unzigzag(v);
        ev->kind = PT_EV_ENTER;
    } else if (kind == PT_CK_EXIT) {
        ev->kind = PT_EV_EXIT; /* addr 0: the innermost open call */
    } else if (kind == PT_CK_LONGJMP) {
        ev->kind = PT_EV_LONGJMP;
    } else {
        return fail(r, -EBADMSG, "record at decoded offset %llu: bad event kind", (unsigned long long)r->rec_off);
    }
    r->ep = p;
    r->prev_tick = tick;
    ev->tid = r->etid;
    ev->ns = to_ns(r, tick);
    r->events++;
    return 1;
}

/* Decodes the next event of the current EVENTS record (version 1). */
static int next_event(pt_reader *r, pt_event *ev)
{
    uint64_t a = 0, t = 0, s = 0;
    int rc;
    if ((rc = get_varint(r, &r->ep, r->eend, &a, "event")) < 0 ||
        (rc = get_varint(r, &r->ep, r->eend, &t, "event time")) < 0)
        return rc;
    bool is_exit = a & 1;
    uint64_t addr = r->prev_addr + (uint64_t)pt_unzigzag(a >> 1);
    uint64_t tick = r->prev_tick + (uint64_t)pt_unzigzag(t);
    if (!is_exit) {
        if ((rc = get_varint(r, &r->ep, r->eend, &s, "event stack")) < 0)
            return rc;
        r->prev_sp += (uint64_t)pt_unzigzag(s);
    }
    r->prev_addr = addr;
    r->prev_tick = tick;
    r->eleft--;
    memset(ev, 0, sizeof *ev);
    ev->tid = r->etid;
    ev->ns = to_ns(r, tick);
    ev->addr = addr;
    if (is_exit) {
        ev->kind = PT_EV_EXIT;
    } else {
        ev->kind = addr == PT_ADDR_LONGJMP ? PT_EV_LONGJMP : PT_EV_ENTER;
        ev->sp = r->prev_sp;
    }
    r->events++;
    return 1;
}

int pt_reader_next(pt_reader *r, pt_event *ev)
{
    if (r->failed)
        return -EBADMSG;
    for (;;) {
        if (r->chunk) {
            if (r->gap) {
                memset(ev, 0, sizeof *ev);
                ev->kind = PT_EV_LOST;
                ev->tid = r->etid;
                ev->count = r->gap;
                ev->gap = true;
                r->gap = 0;
                return 1;
            }
            if (r->ep < r->eend)
                return next_chunk_event(r, ev);
            r->chunk = false;
            r->ep = NULL;
        }
        if (r->eleft > 0)
            return next_event(r, ev);
        if (r->ep && r->ep != r->eend)
            return fail(r, -EBADMSG, "record at decoded offset %llu: %zu bytes after its last event",
                        (unsigned long long)r->rec_off, (size_t)(r->eend - r->ep));
        r->ep = NULL;
        if (r->complete)
            return 0;

        /* Record header: type + varint length. Version 2 pads with zero
         * bytes. */
        int rc = fill(r, 1 + PT_VARINT_MAX);
        if (rc < 0)
            return rc;
        if (r->hdr.version >= 2) {
            while (r->dpos < r->dlen && r->dbuf[r->dpos] == 0)
                r->dpos++;
            if (r->dpos == r->dlen) {
                if (rc == 0)
                    return 0;
                continue;
            }
            if ((rc = fill(r, 1 + PT_VARINT_MAX)) < 0)
                return rc;
        }
        if (r->dlen == r->dpos)
            return 0; /* the stream stopped between records */
        r->rec_off = r->doff + r->dpos;
        const uint8_t *p = r->dbuf + r->dpos, *end = r->dbuf + r->dlen;
        uint8_t type = *p++;
        uint64_t len;
        if (pt_get_varint(&p, end, &len) < 0) {
            if (rc == 0)
                return 0; /* cut inside a record header: killed mid-write */
            return fail(r, -EBADMSG, "record at decoded offset %llu: bad length", (unsigned long long)r->rec_off);
        }
        if (len > PT_MAX_PAYLOAD)
            return fail(r, -EBADMSG, "record at decoded offset %llu: length %llu exceeds the %u-byte limit",
                        (unsigned long long)r->rec_off, (unsigned long long)len, PT_MAX_PAYLOAD);
        size_t hl = (size_t)(p - (r->dbuf + r->dpos));
        rc = fill(r, hl + (size_t)len);
        if (rc <= 0)
            return rc; /* 0: the last record was cut off */
        const uint8_t *pay = r->dbuf + r->dpos + hl, *pend = pay + len;
        r->dpos += hl + (size_t)len;

        uint64_t a = 0, b = 0, c = 0, d = 0;
        switch (type) {
        case PT_REC_CLOCK:
            if ((rc = get_varint(r, &pay, pend, &a, "clock")) < 0 || (rc = get_varint(r, &pay, pend, &b, "clock")) < 0 ||
                (rc = get_varint(r, &pay, pend, &c, "clock")) < 0 || (rc = get_varint(r, &pay, pend, &d, "clock")) < 0)
                return rc;
            if (c == 0 || d == 0 || c > (UINT64_C(1) << 62) || d > (UINT64_C(1) << 62))
                return fail(r, -EBADMSG, "record at decoded offset %llu: bad clock rate", (unsigned long long)r->rec_off);
            r->tick0 = a, r->ns0 = b, r->ticks = c, r->ns = d;
            r->have_clock = true;
            break;
        case PT_REC_THREAD:
            if ((rc = get_varint(r, &pay, pend, &a, "thread id")) < 0)
                return rc;
            memset(ev, 0, sizeof *ev);
            ev->kind = PT_EV_THREAD;
            ev->tid = (uint32_t)a;
            ev->name = (const char *)pay;
            ev->name_len = (size_t)(pend - pay);
            return 1;
        case PT_REC_LOST:
            if ((rc = get_varint(r, &pay, pend, &a, "thread id")) < 0 || (rc = get_varint(r, &pay, pend, &b, "count")) < 0)
                return rc;
            memset(ev, 0, sizeof *ev);
            ev->kind = PT_EV_LOST;
            ev->tid = (uint32_t)a;
            ev->count = b;
            return 1;
        case PT_REC_EVENTS:
            if (r->hdr.version >= 2)
                break;
            if (!r->have_clock)
                return fail(r, -EBADMSG, "record at decoded offset %llu: events before the clock record",
                            (unsigned long long)r->rec_off);
            if ((rc = get_varint(r, &pay, pend, &a, "thread id")) < 0 || (rc = get_varint(r, &pay, pend, &b, "count")) < 0 ||
                (rc = get_varint(r, &pay, pend, &c, "base time")) < 0)
                return rc;
            if (b == 0 || b > (uint64_t)(pend - pay) / 2)
                return fail(r, -EBADMSG, "record at decoded offset %llu: %llu events cannot fit in %zu bytes",
                            (unsigned long long)r->rec_off, (unsigned long long)b, (size_t)(pend - pay));
            r->etid = (uint32_t)a;
            r->eleft = b;
            r->prev_addr = 0;
            r->prev_sp = 0;
            r->prev_tick = c;
            r->ep = pay;
            r->eend = pend;
            break;
        case PT_REC_CHUNK: {
            if (r->hdr.version < 2)
                break;
            if (!r->have_clock)
                return fail(r, -EBADMSG, "record at decoded offset %llu: events before the clock record",
                            (unsigned long long)r->rec_off);
            uint64_t tid = 0, base = 0, fnb = 0, bytes = 0, gap = 0, skip = 0;
            if ((rc = get_varint(r, &pay, pend, &tid, "thread id")) < 0 ||
                (rc = get_varint(r, &pay, pend, &base, "base time")) < 0 ||
                (rc = get_varint(r, &pay, pend, &fnb, "address base")) < 0 ||
                (rc = get_varint(r, &pay, pend, &bytes, "byte count")) < 0 ||
                (rc = get_varint(r, &pay, pend, &gap, "gap")) < 0 ||
                (rc = get_varint(r, &pay, pend, &skip, "filler")) < 0)
                return rc;
            if (skip > (uint64_t)(pend - pay) || bytes > (uint64_t)(pend - pay) - skip)
                return fail(r, -EBADMSG, "record at decoded offset %llu: %llu event bytes do not fit in it",
                            (unsigned long long)r->rec_off, (unsigned long long)bytes);
            r->etid = (uint32_t)tid;
            r->prev_tick = base;
            r->fn_base = fnb;
            r->gap = gap;
            r->ep = pay + skip;
            r->eend = r->ep + bytes;
            r->chunk = true;
            break;
        }
        case PT_REC_END:
            r->complete = true;
            break;
        default:
            break; /* newer record type: skipped */
        }
    }
}
