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
 * NAME.ptrace:
 *   header   64 bytes, uncompressed, little-endian (struct pt_file_header)
 *   body     one zstd stream. Its decompressed bytes are records:
 *              u8 type, varint payload length, payload
 *            Unknown types are skipped by length, so the format can grow.
 *
 * Record payloads (all integers are LEB128 varints, "z" = zigzag signed):
 *   PT_REC_CLOCK   tick0, ns0, ticks, ns:
 *                  ns(tick) = ns0 + (tick - tick0) * ns / ticks   (CLOCK_MONOTONIC)
 *                  Written before the first EVENTS record.
 *   PT_REC_THREAD  tid, then the thread's name (rest of payload, no NUL)
 *   PT_REC_EVENTS  tid, count, base_tick, then `count` events:
 *                    z(addr - prev_addr) << 1 | is_exit
 *                    z(tick - prev_tick)
 *                    z(sp - prev_sp)        enter and longjmp events only
 *                  prev_* start at 0, 0 and base_tick for every record, so a
 *                  record decodes on its own. One record = one runtime chunk.
 *   PT_REC_LOST    tid, count: events the runtime had to drop on that thread
 *   PT_REC_END     empty: the writer finished cleanly (absent after SIGKILL)
 *
 * Events: addr is the function's run-time address (what the compiler passes
 * to __cyg_profile_func_enter). addr == PT_ADDR_LONGJMP marks a longjmp whose
 * target frame is `sp`. sp is the instrumented function's stack pointer, in
 * 16-byte units, truncated to sp_bits (header) bits and compared modulo
 * 2^sp_bits: frames whose sp is below a longjmp's target were unwound by it.
 */
#ifndef PACER_TRACE_FORMAT_H
#define PACER_TRACE_FORMAT_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#define PT_MAGIC "PACERTRC"
#define PT_VERSION 1
#define PT_HEADER_SIZE 64

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
    uint32_t reserved0;
    uint64_t start_realtime_ns; /* wall clock at start, unix ns */
    uint64_t start_mono_ns;
    uint64_t reserved[2];
};
_Static_assert(sizeof(struct pt_file_header) == PT_HEADER_SIZE, "header size");

enum pt_record_type {
    PT_REC_CLOCK = 1,
    PT_REC_THREAD = 2,
    PT_REC_EVENTS = 3,
    PT_REC_LOST = 4,
    PT_REC_END = 5,
};

/* Pseudo function address of a longjmp event (no function lives at 1). */
#define PT_ADDR_LONGJMP 1

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

#endif
