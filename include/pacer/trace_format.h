/* The pacer trace file format: the contract between the function-trace
 * runtime (src/trace, which writes it) and the trace file reader
 * (src/tracefile, which reads it). It is public rather than private to
 * either so that neither component includes the other's internal headers,
 * and because a file format is an interface anyway: anything that reads a
 * recording reads this. It holds only what is in the files, and the varint
 * codec both sides encode it with; how the runtime packs events in memory
 * is its own business (src/trace/runtime.h). libc only; not installed.
 *
 * A recording is a directory. Each traced process (or exec image) writes
 *   NAME.ptrace   the events, NAME = pid, or pid-N when pid was taken by an
 *                 earlier image of the same process (exec keeps the pid)
 *   NAME.maps     a copy of /proc/self/maps taken at the end of the run
 *                 (at the start, replaced at the end), for symbols at export
 *
 * NAME.ptrace, version 2 (what the runtime writes):
 *   header   struct pt_file_header (64 bytes, little-endian), then
 *            header_size - 64 bytes to skip (none today)
 *   body     records: u8 type, varint payload length, payload. A zero type
 *            byte is one byte of padding, skipped (the runtime pads its
 *            writes to 4096-byte boundaries, to write with O_DIRECT).
 *            Unknown types are skipped by length, so the format can grow.
 *            With PT_FLAG_ZSTD the body is one zstd stream whose
 *            decompressed bytes are those records.
 *
 * Record payloads (integers are LEB128 varints unless said otherwise;
 * "z" = zigzag signed):
 *   PT_REC_CLOCK   tick0, ns0, ticks, ns:
 *                  ns(tick) = ns0 + (tick - tick0) * ns / ticks   (CLOCK_MONOTONIC)
 *                  Written before the first EVENTS record.
 *   PT_REC_THREAD  tid, then the thread's name (rest of payload, no NUL)
 *   PT_REC_CHUNK   one runtime chunk of one thread's events:
 *                    tid, base_tick, fn_base, bytes, gap, skip,
 *                    skip filler bytes, then `bytes` bytes of events;
 *                    whatever follows them up to the payload's end is
 *                    filler too (the chunk's padding to a block).
 *                  gap > 0: that many events of the thread were dropped
 *                  right before this chunk (no buffer could be had); the
 *                  thread's open calls end there.
 *                  Events, each starting with a PV head h:
 *                    tick = previous tick + (h >> 2)   (base_tick before the first)
 *                    h & 3 == 0  enter: u16 sp, then PV z(addr - fn_base)
 *                    h & 3 == 1  exit of the innermost open call
 *                    h & 3 == 2  longjmp: u16 sp of the target frame
 *                    h & 3 == 3  invalid
 *                  PV ("prefix varint"): n = (first byte & 7) + 1 bytes,
 *                  little-endian, value = those bytes >> 3 (at most 61
 *                  bits); pt_get_pv() reads one.
 *   PT_REC_LOST    tid, count: events the runtime dropped on that thread,
 *                  whole calls (a signal handler that ran while the
 *                  thread was switching chunks)
 *   PT_REC_END     empty: the writer finished cleanly (absent after SIGKILL)
 *
 * Version 1 (read, no longer written): header_size 64, the body always a
 * zstd stream, and instead of PT_REC_CHUNK:
 *   PT_REC_EVENTS  tid, count, base_tick, then `count` events:
 *                    z(addr - prev_addr) << 1 | is_exit
 *                    z(tick - prev_tick)
 *                    z(sp - prev_sp)        enter and longjmp events only
 *                  prev_* start at 0, 0 and base_tick for every record.
 *                  Exits carry the function's address; PT_REC_LOST counts
 *                  single events.
 *
 * Events: addr is the function's run-time address (what the compiler passes
 * to __cyg_profile_func_enter); version 1 marks a longjmp with addr ==
 * PT_ADDR_LONGJMP. sp is the instrumented function's stack pointer, in
 * 16-byte units, truncated to sp_bits (header) bits and compared modulo
 * 2^sp_bits: frames whose sp is below a longjmp's target were unwound by it.
 */
#ifndef PACER_TRACE_FORMAT_H
#define PACER_TRACE_FORMAT_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#define PT_MAGIC "PACERTRC"
#define PT_VERSION 2
#define PT_VERSION_MIN 1
#define PT_HEADER_SIZE 64       /* sizeof(struct pt_file_header); version 1's header_size */
#define PT_HEADER_MAX 4096      /* the largest header_size this reader skips */

/* pt_file_header.flags */
#define PT_FLAG_ZSTD 1u         /* the body is a zstd stream */

enum pt_clock_kind {
    PT_CLOCK_TSC = 1,       /* invariant TSC, calibrated against CLOCK_MONOTONIC */
    PT_CLOCK_MONOTONIC = 2, /* ticks are CLOCK_MONOTONIC nanoseconds */
};

struct pt_file_header {
    char magic[8];
    uint32_t version;
    uint32_t header_size;
    uint32_t pid;
    uint32_t clock;   /* enum pt_clock_kind */
    uint32_t sp_bits; /* significant bits of the sp field */
    uint32_t flags;   /* PT_FLAG_*; 0 in version 1 */
    uint64_t start_realtime_ns; /* wall clock at start, unix ns */
    uint64_t start_mono_ns;
    uint64_t reserved[2];
};
_Static_assert(sizeof(struct pt_file_header) == PT_HEADER_SIZE, "header size");

enum pt_record_type {
    PT_REC_CLOCK = 1,
    PT_REC_THREAD = 2,
    PT_REC_EVENTS = 3, /* version 1 */
    PT_REC_LOST = 4,
    PT_REC_END = 5,
    PT_REC_CHUNK = 6,  /* version 2 */
};

/* Pseudo function address of a version 1 longjmp event (no function lives
 * at 1). */
#define PT_ADDR_LONGJMP 1

/* PT_REC_CHUNK's event kinds (h & 3). */
enum pt_chunk_kind { PT_CK_ENTER = 0, PT_CK_EXIT = 1, PT_CK_LONGJMP = 2 };

/* Largest record payload the reader accepts (a chunk of 4096 events needs
 * at most ~120 KiB). */
#define PT_MAX_PAYLOAD (16u << 20)

/* ---- LEB128 varints and zigzag ---- */

#define PT_VARINT_MAX 10

static inline uint64_t pt_zigzag(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t pt_unzigzag(uint64_t v)
{
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* Writes v at p (room for PT_VARINT_MAX bytes); returns the byte after it. */
static inline uint8_t *pt_put_varint(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

/* Reads a varint from [*p, end). Returns 0 and advances *p, or -EBADMSG
 * when the input ends inside it or it is longer than 64 bits. */
static inline int pt_get_varint(const uint8_t **p, const uint8_t *end, uint64_t *ret)
{
    uint64_t v = 0;
    const uint8_t *q = *p;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (q >= end)
            return -EBADMSG;
        uint8_t b = *q++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *p = q;
            *ret = v;
            return 0;
        }
    }
    return -EBADMSG;
}

/* ---- PV: the prefix varint of PT_REC_CHUNK events ---- */

#define PT_PV_MAX_BITS 61

/* Bytes PV takes for v (< 2^61): 1 to 8. */
static inline unsigned pt_pv_len(uint64_t v)
{
    return (unsigned)(63 - __builtin_clzll(v | 1) + 11) >> 3;
}

/* Writes v (< 2^61) at p as PV. Stores 8 bytes (those past the returned
 * length are scratch); returns the length. */
static inline unsigned pt_put_pv(uint8_t *p, uint64_t v)
{
    unsigned n = pt_pv_len(v);
    uint64_t w = v << 3 | (n - 1);
    for (unsigned i = 0; i < 8; i++)
        p[i] = (uint8_t)(w >> (8 * i));
    return n;
}

/* Reads a PV from [*p, end). 0 and advances *p, or -EBADMSG when it runs
 * past end. */
static inline int pt_get_pv(const uint8_t **p, const uint8_t *end, uint64_t *ret)
{
    const uint8_t *q = *p;
    if (q >= end)
        return -EBADMSG;
    unsigned n = (q[0] & 7u) + 1;
    if ((size_t)(end - q) < n)
        return -EBADMSG;
    uint64_t w = 0;
    for (unsigned i = 0; i < n; i++)
        w |= (uint64_t)q[i] << (8 * i);
    *ret = w >> 3;
    *p = q + n;
    return 0;
}

#endif
