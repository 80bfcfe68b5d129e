/* libFuzzer target for pacerd's config file reader (src/server/app/options.c,
 * options_read_text): any text is read or refused with "FILE:LINE: why" or
 * "FILE: why", naming the file; what was read is freed whole. */
#include "app/options.h"

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    options o;
    memset(&o, 0, sizeof o);
    char err[1024] = "";
    int r = options_read_text(&o, "/etc/pacer/pacerd.conf", (const char *)data, size, err, sizeof err);
    if (r != 0 && (r != -EINVAL || strncmp(err, "/etc/pacer/pacerd.conf:", 23) != 0 || !err[23]))
        abort();
    /* relative paths were made absolute, from the file's folder */
    const char *paths[] = {o.db, o.admin_file, o.keys_file, o.web_root, o.state};
    for (size_t i = 0; r == 0 && i < sizeof paths / sizeof paths[0]; i++)
        if (paths[i] && paths[i][0] != '/')
            abort();
    options_free(&o);
    return 0;
}
