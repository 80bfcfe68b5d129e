/* Fuzzes the trace file reader (src/tracefile/reader.c): any bytes must give
 * events or a clear error, never a crash, a hang or unbounded memory.
 * Seeds: tests/fuzz/corpus/trace/ (a real recording and damaged copies). */
#include <pacer/trace.h>

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pt_reader *r;
    char err[256];
    if (pt_reader_open_mem(data, size, &r, err, sizeof err) < 0)
        return 0;
    pt_event ev;
    uint64_t n = 0;
    while (pt_reader_next(r, &ev) > 0 && n++ < 10000000) {
        if (ev.kind == PT_EV_THREAD && ev.name_len)
            (void)ev.name[ev.name_len - 1];
    }
    (void)pt_reader_error(r);
    pt_reader_free(r);
    return 0;
}
