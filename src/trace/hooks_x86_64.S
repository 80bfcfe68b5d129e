/* The -finstrument-functions hooks on x86-64: the hot path of libpacer-trace.
 *
 * Each hook appends one event to its thread's chunk (hooks.c, pt_tls): a
 * tick read with rdtsc and, for an enter, the function and its stack
 * pointer, encoded as trace_format.h's PT_REC_CHUNK events so that the
 * chunk goes to the file untouched. No locks, no allocation, no system
 * calls, no function calls; no branch that depends on the data except
 * "the tick delta needs more than two bytes".
 *
 * Signal safety comes from rseq (restartable sequences). Everything from
 * reading pt_tls.pos to the one 16-byte store that commits {pos, last} is
 * a critical section registered with the kernel: if the thread is
 * preempted or a signal is delivered in it, the kernel resumes the thread
 * at the hook's abort label, which starts the hook again from its entry.
 * So a signal handler's hooks append their events after every committed
 * event and before the interrupted one, and nothing half-written is ever
 * committed (an abandoned attempt only wrote past pos). The bytes an
 * event's stores write past its end are scratch, overwritten by the next.
 *
 *   1. Before the section, the hook stores its descriptor's address in
 *      glibc's struct rseq (its rseq_cs field sits pt_rseq_delta bytes
 *      from pt_tls; until hooks.c has checked rseq, pt_rseq_delta points
 *      at pt_tls.scratch and limit is 0, so the store is harmless).
 *   2. pos >= limit: no chunk, a full chunk, tracing off, or the portable
 *      path in use: leave the section and tail-call hooks.c's slow path.
 *   3. The descriptor's range begins at the hook's long-delta block, which
 *      sits before the hook's entry so that it lies inside the range while
 *      the common path runs straight through; the abort label (preceded by
 *      the kernel's signature) lies after the range.
 *
 * The slow path and everything else are C (hooks.c); pt_rseq_append below
 * is the same critical section for it, taking a tick read by the caller.
 */
#include "tls.h"

#define RSEQ_SIG 0x53053053
#define RSEQ_CS_OFFSET 8 /* offsetof(struct rseq, rseq_cs) */

/* \val (< 2^61) -> its PV encoding in \val; its length in \len. */
.macro PV val, len
    mov \val, \len
    or $1, \len
    bsr \len, \len
    add $11, \len
    shr $3, \len
    shl $3, \val
    lea -1(\val,\len), \val
.endm

/* Deltas of 2^59 ticks or more are recorded as 0 (a clock that stepped
 * back); \scratch is clobbered. */
.macro CLAMP_DELTA d, scratch
    mov \d, \scratch
    shr $59, \scratch
    jz 1f
    xor \d, \d
1:
.endm

/* Commits {pos = \p, last = %rax} with one store, the section's last
 * instruction. */
.macro COMMIT p
    movq \p, %xmm0
    movq %rax, %xmm1
    punpcklqdq %xmm1, %xmm0
    movdqa %xmm0, %fs:PT_TLS_POS(%r8)
.endm

    .section .data.rel.ro,"aw"
    .balign 32
.Lcs_enter:
    .long 0, 0
    .quad .Lenter_start, .Lenter_post - .Lenter_start, .Lenter_abort
    .balign 32
.Lcs_exit:
    .long 0, 0
    .quad .Lexit_start, .Lexit_post - .Lexit_start, .Lexit_abort
    .balign 32
.Lcs_append:
    .long 0, 0
    .quad .Lappend_start, .Lappend_post - .Lappend_start, .Lappend_abort

    .text

/* ---- void __cyg_profile_func_enter(void *fn, void *call_site) ----
 * rdi = fn; rsi = the instrumented function's stack pointer >> 4 (its rsp
 * before it called this hook); r8 = pt_tls's TLS offset; rcx = pos;
 * rax = tick; rdx = delta; r10 = z(fn - fn_base). */
    .p2align 5
    .cfi_startproc
.Lenter_start:
    CLAMP_DELTA %rdx, %r9
    shl $2, %rdx                /* head: delta << 2 | PT_KIND_ENTER */
    PV %rdx, %r9
    mov %rdx, (%rcx)
    add %r9, %rcx
    jmp .Lenter_tail

    .globl __cyg_profile_func_enter
    .type __cyg_profile_func_enter, @function
__cyg_profile_func_enter:
    lea 8(%rsp), %rsi
    shr $4, %rsi
    mov pt_tls@gottpoff(%rip), %r8
    mov pt_rseq_delta(%rip), %r9
    lea .Lcs_enter(%rip), %rax
    mov %rax, %fs:(%r8,%r9)
    mov %fs:PT_TLS_POS(%r8), %rcx
    cmp %fs:PT_TLS_LIMIT(%r8), %rcx
    jae .Lenter_slow
    mov %rdi, %r10
    sub %fs:PT_TLS_FN_BASE(%r8), %r10
    mov %r10, %r9
    sar $63, %r9
    add %r10, %r10
    xor %r9, %r10
    rdtsc
    shl $32, %rdx
    or %rdx, %rax
    mov %rax, %rdx
    sub %fs:PT_TLS_LAST(%r8), %rdx
    cmp $0x7ff, %rdx
    ja .Lenter_start
    shl $5, %rdx                /* (delta << 2 | PT_KIND_ENTER) << 3 | (2 - 1) */
    or $1, %rdx
    mov %dx, (%rcx)
    add $2, %rcx
.Lenter_tail:
    mov %si, (%rcx)
    PV %r10, %r9
    mov %r10, 2(%rcx)
    lea 2(%rcx,%r9), %rcx
    COMMIT %rcx
.Lenter_post:
    ret
.Lenter_slow:
    jmp pt_slow_enter           /* (fn, sp >> 4) */
    .byte 0x0f, 0xb9, 0x3d
    .long RSEQ_SIG
.Lenter_abort:
    jmp __cyg_profile_func_enter
    .cfi_endproc
    .size __cyg_profile_func_enter, .-__cyg_profile_func_enter

/* ---- void __cyg_profile_func_exit(void *fn, void *call_site) ---- */
    .p2align 5
    .cfi_startproc
.Lexit_start:
    CLAMP_DELTA %rdx, %r9
    shl $2, %rdx
    or $PT_KIND_EXIT, %rdx
    PV %rdx, %r9
    mov %rdx, (%rcx)
    add %r9, %rcx
    jmp .Lexit_tail

    .globl __cyg_profile_func_exit
    .type __cyg_profile_func_exit, @function
__cyg_profile_func_exit:
    mov pt_tls@gottpoff(%rip), %r8
    mov pt_rseq_delta(%rip), %r9
    lea .Lcs_exit(%rip), %rax
    mov %rax, %fs:(%r8,%r9)
    mov %fs:PT_TLS_POS(%r8), %rcx
    cmp %fs:PT_TLS_LIMIT(%r8), %rcx
    jae .Lexit_slow
    rdtsc
    shl $32, %rdx
    or %rdx, %rax
    mov %rax, %rdx
    sub %fs:PT_TLS_LAST(%r8), %rdx
    cmp $0x7ff, %rdx
    ja .Lexit_start
    shl $5, %rdx                /* (delta << 2 | PT_KIND_EXIT) << 3 | (2 - 1) */
    or $9, %rdx
    mov %dx, (%rcx)
    add $2, %rcx
.Lexit_tail:
    COMMIT %rcx
.Lexit_post:
    ret
.Lexit_slow:
    jmp pt_slow_exit            /* (fn) */
    .byte 0x0f, 0xb9, 0x3d
    .long RSEQ_SIG
.Lexit_abort:
    jmp __cyg_profile_func_exit
    .cfi_endproc
    .size __cyg_profile_func_exit, .-__cyg_profile_func_exit

/* ---- int pt_rseq_append(uint64_t kind, uint64_t fn, uint64_t sp16, uint64_t tick) ----
 * The slow path's append: one event of `kind` (PT_KIND_*) at `tick`, which
 * the caller read. Returns 0 when committed, 1 when the chunk has no room
 * (pos >= end), 2 when the caller must read the clock again and retry: the
 * section was interrupted, or an event later than `tick` was committed
 * meanwhile (a signal handler's, between the caller's clock read and the
 * section). */
    .globl pt_rseq_append
    .hidden pt_rseq_append
    .type pt_rseq_append, @function
    .p2align 5
pt_rseq_append:
    .cfi_startproc
    mov pt_tls@gottpoff(%rip), %r8
    mov pt_rseq_delta(%rip), %r9
    lea .Lcs_append(%rip), %rax
    mov %rax, %fs:(%r8,%r9)
    mov %rcx, %rax
.Lappend_start:
    mov %fs:PT_TLS_POS(%r8), %r10
    cmp %fs:PT_TLS_END(%r8), %r10
    jae .Lappend_full
    mov %rax, %rcx
    sub %fs:PT_TLS_LAST(%r8), %rcx
    jb .Lappend_retry
    CLAMP_DELTA %rcx, %r9
    shl $2, %rcx
    or %rdi, %rcx
    PV %rcx, %r9
    mov %rcx, (%r10)
    add %r9, %r10
    cmp $PT_KIND_EXIT, %rdi
    je .Lappend_commit
    mov %dx, (%r10)
    add $2, %r10
    cmp $PT_KIND_ENTER, %rdi
    jne .Lappend_commit
    mov %rsi, %rcx
    sub %fs:PT_TLS_FN_BASE(%r8), %rcx
    mov %rcx, %r11
    sar $63, %r11
    add %rcx, %rcx
    xor %r11, %rcx
    PV %rcx, %r9
    mov %rcx, (%r10)
    add %r9, %r10
.Lappend_commit:
    COMMIT %r10
.Lappend_post:
    xor %eax, %eax
    ret
.Lappend_full:
    mov $1, %eax
    ret
.Lappend_retry:
    mov $2, %eax
    ret
    .byte 0x0f, 0xb9, 0x3d
    .long RSEQ_SIG
.Lappend_abort:
    mov $2, %eax
    ret
    .cfi_endproc
    .size pt_rseq_append, .-pt_rseq_append

    .section .note.GNU-stack,"",@progbits
