/* Perfetto protobuf trace (perfetto.protos.Trace), opened by ui.perfetto.dev
 * and trace_processor. Written by hand in the protobuf wire format: only the
 * handful of fields below are needed.
 *
 *   Trace.packet (1) = TracePacket:
 *     timestamp 8, trusted_packet_sequence_id 10, track_event 11,
 *     interned_data 12, sequence_flags 13, track_descriptor 60
 *   TrackDescriptor: uuid 1, name 2, process 3 {pid 1}, thread 4 {pid 1,
 *     tid 2, thread_name 5}, parent_uuid 5
 *   TrackEvent: type 9 (1 begin, 2 end), track_uuid 11, name_iid 10
 *   InternedData: event_names 2 = EventName {iid 1, name 2}
 *
 * One packet sequence per thread: its first packet (the thread's track
 * descriptor) clears the incremental state; function names are interned per
 * sequence, so a name is written once, not per call. Begin/end packets are
 * written as calls begin and end (the tree keeps them in time order per
 * thread), so the export streams.
 */
#include <pacer/trace.h>

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define SEQ_CLEARED 1
#define SEQ_NEEDS_STATE 2

struct buf {
    uint8_t *p;
    size_t n, cap;
    bool oom;
};

struct pthread_seq {
    uint32_t pid, tid, seq;
};

struct iname {
    uint32_t seq;
    uint64_t addr;
    uint64_t iid;
};

struct perfetto {
    FILE *out;
    struct buf pkt, sub, sub2;
    struct pthread_seq *threads;
    size_t nthreads;
    struct iname *names; /* hash */
    size_t ncap, nnames;
    uint32_t next_seq;
    int err;
};

static void put(struct buf *b, const void *src, size_t n)
{
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n)
            cap *= 2;
        uint8_t *p = realloc(b->p, cap);
        if (!p) {
            b->oom = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, src, n);
    b->n += n;
}

static void varint(struct buf *b, uint64_t v)
{
    uint8_t t[10];
    size_t n = 0;
    while (v >= 0x80) {
        t[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    t[n++] = (uint8_t)v;
    put(b, t, n);
}

static void f_varint(struct buf *b, unsigned field, uint64_t v)
{
    varint(b, (uint64_t)field << 3 | 0);
    varint(b, v);
}

static void f_bytes(struct buf *b, unsigned field, const void *p, size_t n)
{
    varint(b, (uint64_t)field << 3 | 2);
    varint(b, n);
    put(b, p, n);
}

static void f_str(struct buf *b, unsigned field, const char *s)
{
    f_bytes(b, field, s, strlen(s));
}

/* Writes pkt as Trace.packet and clears it. */
static void emit(struct perfetto *p)
{
    uint8_t hdr[11];
    size_t n = 0;
    uint64_t v = p->pkt.n;
    hdr[n++] = 1 << 3 | 2;
    while (v >= 0x80) {
        hdr[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    hdr[n++] = (uint8_t)v;
    if (p->pkt.oom || p->sub.oom || p->sub2.oom)
        p->err = -ENOMEM;
    fwrite(hdr, 1, n, p->out);
    fwrite(p->pkt.p, 1, p->pkt.n, p->out);
    p->pkt.n = 0;
}

static uint64_t thread_uuid(uint32_t pid, uint32_t tid)
{
    return (uint64_t)pid << 32 | tid | UINT64_C(1) << 63;
}

static void on_process(void *ud, const struct pt_file_header *h)
{
    struct perfetto *p = ud;
    p->sub.n = 0;
    p->sub2.n = 0;
    f_varint(&p->sub2, 1, h->pid);
    f_varint(&p->sub, 1, h->pid);
    f_bytes(&p->sub, 3, p->sub2.p, p->sub2.n);
    f_bytes(&p->pkt, 60, p->sub.p, p->sub.n);
    emit(p);
}

static uint32_t seq_of(struct perfetto *p, const pt_thread_info *t)
{
    for (size_t i = p->nthreads; i-- > 0;)
        if (p->threads[i].tid == t->tid && p->threads[i].pid == t->pid)
            return p->threads[i].seq;
    struct pthread_seq *n = realloc(p->threads, (p->nthreads + 1) * sizeof *n);
    if (!n) {
        p->err = -ENOMEM;
        return 0;
    }
    p->threads = n;
    uint32_t seq = ++p->next_seq;
    n[p->nthreads++] = (struct pthread_seq){t->pid, t->tid, seq};

    /* Thread track, first packet of its sequence. */
    p->sub.n = 0;
    p->sub2.n = 0;
    f_varint(&p->sub2, 1, t->pid);
    f_varint(&p->sub2, 2, t->tid);
    if (t->name[0])
        f_str(&p->sub2, 5, t->name);
    f_varint(&p->sub, 1, thread_uuid(t->pid, t->tid));
    f_varint(&p->sub, 5, t->pid);
    f_bytes(&p->sub, 4, p->sub2.p, p->sub2.n);
    f_varint(&p->pkt, 10, seq);
    f_varint(&p->pkt, 13, SEQ_CLEARED);
    f_bytes(&p->pkt, 60, p->sub.p, p->sub.n);
    emit(p);
    return seq;
}

/* Returns the iid of (seq, addr); *fresh says it must be sent now. */
static uint64_t intern(struct perfetto *p, uint32_t seq, uint64_t addr, bool *fresh)
{
    *fresh = false;
    if ((p->nnames + 1) * 2 >= p->ncap) {
        size_t cap = p->ncap ? p->ncap * 2 : 1024;
        struct iname *tab = calloc(cap, sizeof *tab);
        if (!tab) {
            p->err = -ENOMEM;
            return 1;
        }
        for (size_t i = 0; i < p->ncap; i++) {
            if (!p->names[i].iid)
                continue;
            size_t j = (p->names[i].addr * 0x9E3779B97F4A7C15u ^ p->names[i].seq) & (cap - 1);
            while (tab[j].iid)
                j = (j + 1) & (cap - 1);
            tab[j] = p->names[i];
        }
        free(p->names);
        p->names = tab;
        p->ncap = cap;
    }
    size_t j = (addr * 0x9E3779B97F4A7C15u ^ seq) & (p->ncap - 1);
    while (p->names[j].iid) {
        if (p->names[j].addr == addr && p->names[j].seq == seq)
            return p->names[j].iid;
        j = (j + 1) & (p->ncap - 1);
    }
    p->names[j] = (struct iname){seq, addr, ++p->nnames};
    *fresh = true;
    return p->nnames;
}

static void on_begin(void *ud, const pt_thread_info *t, pt_frame *const *stack, size_t n)
{
    struct perfetto *p = ud;
    const pt_frame *f = stack[n - 1];
    uint32_t seq = seq_of(p, t);
    bool fresh;
    uint64_t iid = intern(p, seq, f->addr, &fresh);
    f_varint(&p->pkt, 8, f->begin_ns);
    f_varint(&p->pkt, 10, seq);
    f_varint(&p->pkt, 13, SEQ_NEEDS_STATE);
    p->sub.n = 0;
    f_varint(&p->sub, 9, 1);
    f_varint(&p->sub, 11, thread_uuid(t->pid, t->tid));
    f_varint(&p->sub, 10, iid);
    f_bytes(&p->pkt, 11, p->sub.p, p->sub.n);
    if (fresh) {
        char buf[32];
        const char *name = f->sym ? f->sym->name : buf;
        if (!f->sym)
            snprintf(buf, sizeof buf, "0x%" PRIx64, f->addr);
        p->sub.n = 0;
        p->sub2.n = 0;
        f_varint(&p->sub2, 1, iid);
        f_str(&p->sub2, 2, name);
        f_bytes(&p->sub, 2, p->sub2.p, p->sub2.n);
        f_bytes(&p->pkt, 12, p->sub.p, p->sub.n);
    }
    emit(p);
}

static void on_end(void *ud, const pt_thread_info *t, pt_frame *const *stack, size_t n)
{
    struct perfetto *p = ud;
    const pt_frame *f = stack[n - 1];
    uint32_t seq = seq_of(p, t);
    f_varint(&p->pkt, 8, f->end_ns);
    f_varint(&p->pkt, 10, seq);
    f_varint(&p->pkt, 13, SEQ_NEEDS_STATE);
    p->sub.n = 0;
    f_varint(&p->sub, 9, 2);
    f_varint(&p->sub, 11, thread_uuid(t->pid, t->tid));
    f_bytes(&p->pkt, 11, p->sub.p, p->sub.n);
    emit(p);
}

int pt_export_perfetto(const char *dir, const pt_output_options *opt, FILE *out, char *err, size_t errlen)
{
    struct perfetto p = {0};
    p.out = out;
    pt_tree_ops ops = {on_begin, on_end, NULL};
    pt_walk_stats st;
    int rc = pt_recording_walk(dir, &opt->tree, &ops, on_process, &p, &st, err, errlen);
    if (rc == 0 && p.err) {
        rc = p.err;
        snprintf(err, errlen, "out of memory");
    }
    if (rc == 0 && ferror(out)) {
        snprintf(err, errlen, "writing the export failed");
        rc = -EIO;
    }
    free(p.pkt.p);
    free(p.sub.p);
    free(p.sub2.p);
    free(p.threads);
    free(p.names);
    return rc;
}
