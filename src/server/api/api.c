/* What the API handlers share (api.h). */
#include "api.h"

#include <errno.h>

void api_answer(http_response *rs, jbuf *b, int r, const char *failed)
{
    if (r < 0 || b->failed) {
        jbuf_free(b);
        http_error(rs, 503, "%s", r == -ENOMEM || b->failed ? "out of memory" : failed);
        return;
    }
    http_json(rs, 200, b);
}
