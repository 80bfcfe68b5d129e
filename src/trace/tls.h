/* The hot path's per-thread state, as both the C code and the x86-64
 * assembly hooks (hooks_x86_64.S) address it: byte offsets into struct
 * pt_tls (runtime.h checks them with static asserts). Plain #defines only,
 * so that the assembler can include this file. */
#ifndef PACER_TRACE_TLS_H
#define PACER_TRACE_TLS_H

#define PT_TLS_POS 0      /* uint8_t *: end of the committed events */
#define PT_TLS_LAST 8     /* uint64_t: tick of the last committed event; with pos, one 16-byte store */
#define PT_TLS_LIMIT 16   /* uint8_t *: the assembly hooks record while pos < limit */
#define PT_TLS_FN_BASE 24 /* uint64_t: enter addresses are stored relative to it */
#define PT_TLS_END 32     /* uint8_t *: room for one more event while pos < end */
#define PT_TLS_SCRATCH 40 /* uint64_t: target of the rseq_cs store until rseq is set up */

/* Largest event in bytes, counting the scratch bytes an 8-byte store may
 * write past it: the chunk's end minus this is where events stop. */
#define PT_EVENT_ROOM 24

/* Event kinds, the low two bits of an event's head (trace_format.h). */
#define PT_KIND_ENTER 0
#define PT_KIND_EXIT 1
#define PT_KIND_LONGJMP 2

#endif
