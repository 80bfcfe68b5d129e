/* The frame a profile line is charged to (profile_frames.h). */
#include "profile_frames.h"

#include <stdlib.h>
#include <string.h>

static bool starts(const char *s, size_t len, const char *prefix)
{
    size_t n = strlen(prefix);
    return len >= n && memcmp(s, prefix, n) == 0;
}

static bool is(const char *s, size_t len, const char *word)
{
    return strlen(word) == len && memcmp(s, word, len) == 0;
}

bool profile_frames_system_module(const char *module, size_t len)
{
    static const char *const prefixes[] = {
        /* the C library, its loader, the vDSO, the C++ runtime */
        "libc.so", "libc-", "libm.so", "libm-", "libpthread", "libdl.", "libdl-", "librt.", "librt-", "ld-linux",
        "ld64.so", "ld-2.", "linux-vdso", "linux-gate", "[vdso]", "libstdc++", "libgcc_s",
        /* GLib, GTK and what draws for it, Qt */
        "libglib-", "libgobject-", "libgio-", "libgmodule-", "libgthread-", "libgtk-", "libgtk4", "libgdk-",
        "libgdk_pixbuf", "libpango", "libcairo", "libharfbuzz", "libQt",
        /* pacer's agent: its hooks are not the app's */
        "libpacer",
    };
    for (size_t i = len; i-- > 0;)
        if (module[i] == '/') {
            len -= i + 1;
            module += i + 1;
            break;
        }
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
        if (starts(module, len, prefixes[i]))
            return true;
    return false;
}

/* By its name alone: the C library's and the toolkits' prefixes, the C
 * library's calls a stack most often ends in. */
static bool system_name(const char *s, size_t len)
{
    static const char *const prefixes[] = {
        "__", "_dl_", "_IO_", "_nl_", "pthread_", "sem_", "g_", "_g_", "gtk_", "_gtk_", "gdk_", "_gdk_", "gsk_",
        "_gsk_", "pango_", "_pango_", "cairo_", "_cairo_", "hb_", "qt_",
    };
    static const char *const words[] = {
        "_start", "start_thread", "clone", "clone3", "syscall", "poll", "ppoll", "select", "pselect", "pselect6",
        "epoll_wait", "epoll_pwait", "epoll_pwait2", "read", "readv", "pread", "pread64", "write", "writev", "pwrite",
        "pwrite64", "recv", "recvfrom", "recvmsg", "send", "sendto", "sendmsg", "accept", "accept4", "connect",
        "nanosleep", "clock_nanosleep", "usleep", "sleep", "clock_gettime", "gettimeofday", "time", "ioctl", "fcntl",
        "futex", "sched_yield", "wait", "waitpid", "wait4", "waitid", "open", "open64", "openat", "openat64",
        "close", "fsync", "fdatasync", "stat", "fstat", "lstat", "fstatat", "statx", "access", "getdents64",
        "mmap", "mmap64", "munmap", "mprotect", "madvise", "brk", "sbrk", "malloc", "calloc", "realloc", "free",
        "memcpy", "memmove", "memset", "memcmp", "strlen", "strcmp", "strncmp", "strchr", "strstr", "qsort",
        "getaddrinfo", "dlopen", "dlsym", "exit", "abort", "raise", "kill", "monitored_poll",
    };
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
        if (starts(s, len, prefixes[i]))
            return true;
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (is(s, len, words[i]))
            return true;
    /* Qt's classes in a mangled name: _ZN<len>Q…, _ZNK<len>Q… */
    if (starts(s, len, "_ZN")) {
        size_t i = 3;
        if (i < len && s[i] == 'K')
            i++;
        while (i < len && s[i] >= '0' && s[i] <= '9')
            i++;
        if (i > 3 && i < len && s[i] == 'Q')
            return true;
    }
    return false;
}

bool profile_frames_system(const char *frame, size_t len, const profile_frames_hint *hints, size_t n_hints)
{
    if (!len)
        return true;
    for (size_t i = 0; i < n_hints; i++)
        if (hints[i].len == len && memcmp(hints[i].function, frame, len) == 0)
            return !hints[i].in_app && hints[i].module &&
                   profile_frames_system_module(hints[i].module, strlen(hints[i].module));
    if (frame[0] == '[' || starts(frame, len, "0x"))
        return true; /* a linker stub, the vDSO, the kernel; an address without a module */
    for (size_t i = len; i-- > 1;)
        if (frame[i] == '+' && i + 2 < len && frame[i + 1] == '0' && frame[i + 2] == 'x')
            return profile_frames_system_module(frame, i); /* MODULE+0xOFFSET */
    return system_name(frame, len);
}

bool profile_frames_read(const char *line, size_t len, const profile_frames_hint *hints, size_t n_hints,
                         profile_frames_line *ret)
{
    size_t sp = len;
    while (sp > 0 && line[sp - 1] != ' ')
        sp--;
    if (sp < 2 || sp == len)
        return false; /* no count, or no stack before it */
    long long count = 0;
    for (size_t i = sp; i < len; i++) {
        if (line[i] < '0' || line[i] > '9' || count > 1000000000)
            return false;
        count = count * 10 + (line[i] - '0');
    }
    if (count <= 0 || count > 1000000000)
        return false;
    /* the frames from the innermost: line[start..stop) each */
    *ret = (profile_frames_line){.count = count};
    size_t stop = sp - 1;
    for (;;) {
        size_t start = stop;
        while (start > 0 && line[start - 1] != ';')
            start--;
        const char *f = line + start;
        size_t fl = stop - start;
        if (!ret->leaf) {
            if (!fl)
                return false;
            ret->leaf = ret->frame = f;
            ret->leaf_len = ret->frame_len = fl;
        }
        if (fl && !profile_frames_system(f, fl, hints, n_hints)) {
            ret->frame = f;
            ret->frame_len = fl;
            return true;
        }
        if (start == 0)
            return true; /* every frame a system one: the leaf */
        stop = start - 1;
    }
}
