/* libFuzzer target for the page config parser: any input either parses into
 * a config whose every accessor works, or fails with a "LINE:COLUMN: ..."
 * message. ASan and UBSan (the fuzz build's flags) catch the rest. */
#include <pacer/config.h>

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void walk(pacer_config *cfg)
{
    size_t n_pages = pacer_config_page_count(cfg);
    for (size_t i = 0; i <= n_pages; i++) {
        const char *id = pacer_config_page_id(cfg, i);
        if ((id == NULL) != (i == n_pages))
            abort();
        (void)pacer_config_page_is_main(cfg, i);
        size_t n_apis = pacer_config_page_api_count(cfg, i);
        for (size_t j = 0; j <= n_apis; j++) {
            const char *api = pacer_config_page_api(cfg, i, j);
            if ((api == NULL) != (j == n_apis) || (api && !*api))
                abort();
        }
        if (id) {
            if (!*id)
                abort();
            /* Every configured id finds a page (the first with that id
             * under the matching rules, which ids are unique for). */
            if (pacer_config_find_page(cfg, id) != (long)i)
                abort();
        }
    }
    size_t n_splash = pacer_config_splash_count(cfg);
    for (size_t i = 0; i < n_splash; i++)
        if (!pacer_config_is_splash(cfg, pacer_config_splash(cfg, i)))
            abort();
    if (pacer_config_splash(cfg, n_splash))
        abort();
    uint32_t limits[] = {pacer_config_jank_ms(cfg), pacer_config_hang_ms(cfg), pacer_config_page_deadline_ms(cfg)};
    for (size_t i = 0; i < 3; i++)
        if (limits[i] < 1 || limits[i] > 3600000)
            abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *error = NULL;
    pacer_config *cfg = pacer_config_parse((const char *)data, size, &error);
    if (cfg) {
        if (error)
            abort();
        pacer_config *again = pacer_config_ref(cfg);
        walk(again);
        pacer_config_unref(again);
        pacer_config_unref(cfg);
        return 0;
    }
    if (!error || !*error || error[0] < '1' || error[0] > '9')
        abort();
    free(error);
    return 0;
}
