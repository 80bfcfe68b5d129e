/* Unit tests for the page config parser (src/core/config.c). */
#include <pacer/config.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The config from seed 000, byte for byte: no root element, no indentation. */
#define SEED_XML                                                                                                       \
    "<page id=\"HomeActivity\" tag=\"1\">\n"                                                                           \
    "<api id=\"/api/config\"/>\n"                                                                                      \
    "<api id=\"/api/list\"/>\n"                                                                                        \
    "</page>\n"                                                                                                        \
    "<page id=\"com.test.MerchantFragment\" tag=\"0\">\n"                                                              \
    "<api id=\"/api/test1\"/>\n"                                                                                       \
    "</page>\n"

static pacer_config *parse_ok(const char *xml)
{
    char *error = NULL;
    pacer_config *cfg = pacer_config_parse(xml, strlen(xml), &error);
    if (!cfg)
        fail_msg("unexpected parse error: %s\n--- input ---\n%s", error, xml);
    assert_null(error);
    return cfg;
}

/* Parses xml, expecting it to fail with exactly `expected`. */
static void expect_error(const char *xml, const char *expected)
{
    char *error = NULL;
    pacer_config *cfg = pacer_config_parse(xml, strlen(xml), &error);
    if (cfg)
        fail_msg("parsed, but expected \"%s\"\n--- input ---\n%s", expected, xml);
    assert_non_null(error);
    if (strcmp(error, expected) != 0)
        fail_msg("error\n  got:      %s\n  expected: %s\n--- input ---\n%s", error, expected, xml);
    free(error);
}

/* Parses xml, expecting an error that starts with `position` ("L:C: ") and
 * contains `words`. For expat's own messages, whose wording is not ours. */
static void expect_error_at(const char *xml, const char *position, const char *words)
{
    char *error = NULL;
    pacer_config *cfg = pacer_config_parse(xml, strlen(xml), &error);
    if (cfg)
        fail_msg("parsed, but expected an error at %s\n--- input ---\n%s", position, xml);
    assert_non_null(error);
    if (strncmp(error, position, strlen(position)) != 0 || !strstr(error, words))
        fail_msg("error\n  got:      %s\n  expected: %s...%s...\n--- input ---\n%s", error, position, words, xml);
    free(error);
}

static void check_seed_config(const pacer_config *cfg)
{
    assert_int_equal(pacer_config_page_count(cfg), 2);
    assert_string_equal(pacer_config_page_id(cfg, 0), "HomeActivity");
    assert_true(pacer_config_page_is_main(cfg, 0));
    assert_int_equal(pacer_config_page_api_count(cfg, 0), 2);
    assert_string_equal(pacer_config_page_api(cfg, 0, 0), "/api/config");
    assert_string_equal(pacer_config_page_api(cfg, 0, 1), "/api/list");
    assert_string_equal(pacer_config_page_id(cfg, 1), "com.test.MerchantFragment");
    assert_false(pacer_config_page_is_main(cfg, 1));
    assert_int_equal(pacer_config_page_api_count(cfg, 1), 1);
    assert_string_equal(pacer_config_page_api(cfg, 1, 0), "/api/test1");
    assert_int_equal(pacer_config_splash_count(cfg), 0);
    assert_int_equal(pacer_config_jank_ms(cfg), PACER_DEFAULT_JANK_MS);
    assert_int_equal(pacer_config_hang_ms(cfg), PACER_DEFAULT_HANG_MS);
    assert_int_equal(pacer_config_page_deadline_ms(cfg), PACER_DEFAULT_PAGE_DEADLINE_MS);
}

/* ---- accepted inputs ---------------------------------------------------- */

static void test_seed_verbatim(void **state)
{
    pacer_config *cfg = parse_ok(SEED_XML);
    check_seed_config(cfg);
    pacer_config_unref(cfg);

    /* The fixture the CLI tests use holds the same text. */
    char *error = NULL;
    cfg = pacer_config_load(PACER_TEST_DATA "/seed000.xml", &error);
    assert_null(error);
    assert_non_null(cfg);
    check_seed_config(cfg);
    pacer_config_unref(cfg);
}

static void test_seed_with_root_and_prologue(void **state)
{
    static const char *const inputs[] = {
        "<pacer>\n" SEED_XML "</pacer>\n",
        "<?xml version=\"1.0\"?>\n" SEED_XML,
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<pacer>\n" SEED_XML "</pacer>\n",
        "<?xml version=\"1.0\"?>" SEED_XML, /* declaration and first page on one line */
        "\xEF\xBB\xBF" SEED_XML,            /* UTF-8 BOM */
        "\xEF\xBB\xBF<?xml version=\"1.0\"?>\r\n" SEED_XML,
        "<!-- pages to measure -->\n" SEED_XML "<!-- end -->\n",
        "\n\n  " SEED_XML "\n\n",
    };
    for (size_t i = 0; i < sizeof(inputs) / sizeof(inputs[0]); i++) {
        pacer_config *cfg = parse_ok(inputs[i]);
        check_seed_config(cfg);
        pacer_config_unref(cfg);
    }
}

static void test_crlf_seed(void **state)
{
    pacer_config *cfg = parse_ok("<page id=\"HomeActivity\" tag=\"1\">\r\n<api id=\"/api/config\"/>\r\n"
                                 "<api id=\"/api/list\"/>\r\n</page>\r\n"
                                 "<page id=\"com.test.MerchantFragment\" tag=\"0\">\r\n<api id=\"/api/test1\"/>\r\n"
                                 "</page>\r\n");
    check_seed_config(cfg);
    pacer_config_unref(cfg);
}

static void test_shop_fixture(void **state)
{
    char *error = NULL;
    pacer_config *cfg = pacer_config_load(PACER_TEST_DATA "/shop.xml", &error);
    assert_null(error);
    assert_non_null(cfg);
    assert_int_equal(pacer_config_page_count(cfg), 2);
    assert_string_equal(pacer_config_page_id(cfg, 0), "ShopHomeWindow");
    assert_true(pacer_config_page_is_main(cfg, 0));
    assert_string_equal(pacer_config_page_id(cfg, 1), "ShopMerchantPage");
    assert_false(pacer_config_page_is_main(cfg, 1));
    assert_int_equal(pacer_config_splash_count(cfg), 1);
    assert_string_equal(pacer_config_splash(cfg, 0), "ShopSplashWindow");
    assert_true(pacer_config_is_splash(cfg, "ShopSplashWindow"));
    assert_false(pacer_config_is_splash(cfg, "ShopHomeWindow"));
    assert_int_equal(pacer_config_jank_ms(cfg), 700);
    assert_int_equal(pacer_config_hang_ms(cfg), 5000);
    assert_int_equal(pacer_config_page_deadline_ms(cfg), 30000);
    pacer_config_unref(cfg);
}

static void test_splash_thresholds_defaults(void **state)
{
    pacer_config *cfg = parse_ok("<splash id=\"Splash1\"/>\n"
                                 "<page id=\"A\"/>\n" /* no tag: not main; no APIs */
                                 "<splash id=\"org.x.Splash2\"/>\n"
                                 "<thresholds hang-ms=\"1\" page-deadline-ms=\"3600000\"/>\n");
    assert_int_equal(pacer_config_page_count(cfg), 1);
    assert_false(pacer_config_page_is_main(cfg, 0));
    assert_int_equal(pacer_config_page_api_count(cfg, 0), 0);
    assert_null(pacer_config_page_api(cfg, 0, 0));
    assert_int_equal(pacer_config_splash_count(cfg), 2);
    assert_string_equal(pacer_config_splash(cfg, 0), "Splash1");
    assert_string_equal(pacer_config_splash(cfg, 1), "org.x.Splash2");
    assert_null(pacer_config_splash(cfg, 2));
    assert_true(pacer_config_is_splash(cfg, "Splash2"));
    assert_true(pacer_config_is_splash(cfg, "com.app.Splash1"));
    assert_false(pacer_config_is_splash(cfg, "com.other.Splash2"));
    assert_false(pacer_config_is_splash(cfg, ""));
    assert_false(pacer_config_is_splash(cfg, NULL));
    assert_int_equal(pacer_config_jank_ms(cfg), PACER_DEFAULT_JANK_MS); /* not set: default */
    assert_int_equal(pacer_config_hang_ms(cfg), 1);
    assert_int_equal(pacer_config_page_deadline_ms(cfg), 3600000);
    pacer_config_unref(cfg);

    /* Leading zeros are still a number. */
    cfg = parse_ok("<pacer><thresholds jank-ms=\"0050\"/></pacer>");
    assert_int_equal(pacer_config_jank_ms(cfg), 50);
    pacer_config_unref(cfg);
}

static void test_in_app_modules(void **state)
{
    pacer_config *cfg = parse_ok("<pacer>\n"
                                 "  <in-app module=\"libshop\"/>\n"
                                 "  <in-app module=\"/opt/shop/lib/\"/>\n"
                                 "</pacer>\n");
    assert_int_equal(pacer_config_in_app_count(cfg), 2);
    assert_string_equal(pacer_config_in_app(cfg, 0), "libshop");
    assert_string_equal(pacer_config_in_app(cfg, 1), "/opt/shop/lib/");
    assert_null(pacer_config_in_app(cfg, 2));
    pacer_config_unref(cfg);
    assert_int_equal(pacer_config_in_app_count(NULL), 0);

    expect_error_at("<pacer>\n<in-app/>\n</pacer>", "2:1: ", "missing its module attribute");
    expect_error_at("<pacer>\n<in-app module=\"\"/>\n</pacer>", "2:1: ", "module is empty");
    expect_error_at("<pacer>\n<in-app module=\"a\"/>\n<in-app module=\"a\"/>\n</pacer>", "3:1: ",
                    "duplicate in-app module \"a\" (first listed on line 2)");
    expect_error_at("<pacer>\n<in-app module=\"a\" id=\"b\"/>\n</pacer>", "2:1: ", "only module");
    expect_error_at("<pacer>\n<in-app module=\"a\"><api id=\"x\"/></in-app>\n</pacer>", "2:20: ",
                    "<in-app> takes no child elements");
}

static void test_empty_configs(void **state)
{
    static const char *const inputs[] = {"", "\n  \n", "<pacer/>", "<pacer></pacer>", "<?xml version=\"1.0\"?>"};
    for (size_t i = 0; i < sizeof(inputs) / sizeof(inputs[0]); i++) {
        pacer_config *cfg = parse_ok(inputs[i]);
        assert_int_equal(pacer_config_page_count(cfg), 0);
        assert_int_equal(pacer_config_splash_count(cfg), 0);
        assert_int_equal(pacer_config_jank_ms(cfg), PACER_DEFAULT_JANK_MS);
        pacer_config_unref(cfg);
    }

    pacer_config *cfg = pacer_config_new_empty();
    assert_non_null(cfg);
    assert_int_equal(pacer_config_page_count(cfg), 0);
    assert_int_equal(pacer_config_find_page(cfg, "HomeActivity"), -1);
    assert_int_equal(pacer_config_hang_ms(cfg), PACER_DEFAULT_HANG_MS);
    assert_int_equal(pacer_config_page_deadline_ms(cfg), PACER_DEFAULT_PAGE_DEADLINE_MS);
    pacer_config_unref(cfg);

    /* NULL text with length 0 is an empty config too. */
    cfg = pacer_config_parse(NULL, 0, NULL);
    assert_non_null(cfg);
    pacer_config_unref(cfg);
}

static void test_accessors_out_of_range(void **state)
{
    pacer_config *cfg = parse_ok(SEED_XML);
    assert_null(pacer_config_page_id(cfg, 2));
    assert_false(pacer_config_page_is_main(cfg, 2));
    assert_int_equal(pacer_config_page_api_count(cfg, 2), 0);
    assert_null(pacer_config_page_api(cfg, 2, 0));
    assert_null(pacer_config_page_api(cfg, 0, 2));
    assert_null(pacer_config_splash(cfg, 0));
    pacer_config_unref(cfg);

    assert_int_equal(pacer_config_page_count(NULL), 0);
    assert_null(pacer_config_page_id(NULL, 0));
    assert_int_equal(pacer_config_find_page(NULL, "A"), -1);
    assert_int_equal(pacer_config_jank_ms(NULL), PACER_DEFAULT_JANK_MS);
}

static void test_find_page(void **state)
{
    pacer_config *cfg = parse_ok("<page id=\"HomeActivity\"/>\n"
                                 "<page id=\"com.test.MerchantFragment\"/>\n"
                                 "<page id=\"com.a.Detail\"/>\n"
                                 "<page id=\"Detail\"/>\n"
                                 "<page id=\"ShopHomeWindow\"/>\n");
    /* Exact ids. */
    assert_int_equal(pacer_config_find_page(cfg, "HomeActivity"), 0);
    assert_int_equal(pacer_config_find_page(cfg, "com.test.MerchantFragment"), 1);
    assert_int_equal(pacer_config_find_page(cfg, "ShopHomeWindow"), 4);
    /* Full path in the config, simple class name at run time. */
    assert_int_equal(pacer_config_find_page(cfg, "MerchantFragment"), 1);
    /* Simple name in the config (the seed's HomeActivity), full class path. */
    assert_int_equal(pacer_config_find_page(cfg, "com.test.HomeActivity"), 0);
    /* An exact match wins over an earlier simple-name match. */
    assert_int_equal(pacer_config_find_page(cfg, "Detail"), 3);
    assert_int_equal(pacer_config_find_page(cfg, "com.a.Detail"), 2);
    /* com.b.Detail matches the bare "Detail", not com.a.Detail. */
    assert_int_equal(pacer_config_find_page(cfg, "com.b.Detail"), 3);
    /* Two different full paths are different classes. */
    assert_int_equal(pacer_config_find_page(cfg, "org.other.MerchantFragment"), -1);
    /* Components must match whole. */
    assert_int_equal(pacer_config_find_page(cfg, "Activity"), -1);
    assert_int_equal(pacer_config_find_page(cfg, "homeactivity"), -1);
    assert_int_equal(pacer_config_find_page(cfg, "Fragment"), -1);
    assert_int_equal(pacer_config_find_page(cfg, ""), -1);
    assert_int_equal(pacer_config_find_page(cfg, NULL), -1);
    assert_int_equal(pacer_config_find_page(cfg, "Nope"), -1);
    pacer_config_unref(cfg);
}

/* ---- errors ------------------------------------------------------------- */

static void test_error_structure(void **state)
{
    expect_error("<pacer>\n"
                 "  <page id=\"a\"/>\n"
                 "    <api id=\"/x\"/>\n"
                 "</pacer>\n",
                 "3:5: <api> outside of a <page>");
    expect_error("<api id=\"/x\"/>", "1:1: <api> outside of a <page>");
    expect_error(SEED_XML "<api id=\"/x\"/>\n", "8:1: <api> outside of a <page>");
    expect_error("<page id=\"a\">\n"
                 "  <page id=\"b\"/>\n"
                 "</page>\n",
                 "2:3: nested <page>: the <page> on line 1 is not closed yet");
    expect_error("<page id=\"a\">\n  <splash id=\"s\"/>\n</page>",
                 "2:3: <splash> inside a <page> (line 1); only <api> belongs there");
    expect_error("<page id=\"a\">\n  <thresholds jank-ms=\"5\"/>\n</page>",
                 "2:3: <thresholds> inside a <page> (line 1); only <api> belongs there");
    expect_error("<page id=\"a\">\n  <pacer/>\n</page>", "2:3: <pacer> inside a <page> (line 1); only <api> belongs there");
    expect_error("<page id=\"a\">\n<api id=\"x\">\n<api id=\"y\"/></api></page>",
                 "3:1: <api> inside <api> (line 2); <api> takes no child elements");
    expect_error("<pacer>\n<pacer/>\n</pacer>", "2:1: nested <pacer> (the root is on line 1)");
    expect_error("<pacer/>\n<pacer/>", "2:1: a second <pacer> element; there can only be one root");
    expect_error("<page id=\"a\"/>\n<pacer/>",
                 "2:1: <pacer> must enclose the whole config, but <page> on line 1 comes before it");
    expect_error("<pacer/>\n<splash id=\"s\"/>", "2:1: <splash> after </pacer>; put it inside the <pacer> element");
}

static void test_error_unknown(void **state)
{
    expect_error("<page id=\"a\">\n  <apis id=\"x\"/>\n</page>",
                 "2:3: unknown element <apis> (expected <page>, <api>, <splash>, <thresholds>, <upload>, <in-app>, <known-leak> or a <pacer> root)");
    expect_error("<config>\n" SEED_XML "</config>",
                 "1:1: unknown element <config> (expected <page>, <api>, <splash>, <thresholds>, <upload>, <in-app>, <known-leak> or a <pacer> root)");
    expect_error("\n<page id=\"a\" name=\"x\"/>", "2:1: unknown attribute \"name\" on <page> (it accepts id and tag)");
    expect_error("<page id=\"a\">\n <api id=\"x\" method=\"GET\"/></page>",
                 "2:2: unknown attribute \"method\" on <api> (it accepts only id)");
    expect_error("<splash id=\"s\" tag=\"1\"/>", "1:1: unknown attribute \"tag\" on <splash> (it accepts only id)");
    expect_error("<thresholds jank=\"5\"/>",
                 "1:1: unknown attribute \"jank\" on <thresholds> (it accepts jank-ms, hang-ms, page-deadline-ms, "
                 "slow-request-ms, large-image-bytes, frames-interval-ms and leak-grace-ms)");
    expect_error("<pacer version=\"1\"/>", "1:1: unknown attribute \"version\" on <pacer> (it takes no attributes)");
}

static void test_error_ids(void **state)
{
    expect_error("<page tag=\"1\"/>", "1:1: <page> has no id attribute");
    expect_error("<page id=\"a\">\n<api/>\n</page>", "2:1: <api> has no id attribute");
    expect_error("<splash/>", "1:1: <splash> has no id attribute");
    expect_error("<page id=\"\"/>", "1:1: <page> has an empty id");
    expect_error("<page id=\"a\">\n<api id=\"  \"/>\n</page>", "2:1: <api> has an empty id");
    expect_error("<splash id=\"\"/>", "1:1: <splash> has an empty id");
    expect_error("<page id=\"a\" tag=\"2\"/>",
                 "1:1: tag=\"2\" on <page>: use tag=\"1\" for the main page, tag=\"0\" (the default) otherwise");
    expect_error("<page id=\"a\" tag=\"\"/>",
                 "1:1: tag=\"\" on <page>: use tag=\"1\" for the main page, tag=\"0\" (the default) otherwise");
    expect_error("<page id=\"a\" tag=\"true\"/>",
                 "1:1: tag=\"true\" on <page>: use tag=\"1\" for the main page, tag=\"0\" (the default) otherwise");
}

static void test_error_duplicates(void **state)
{
    expect_error("<page id=\"HomeActivity\">\n"
                 "<api id=\"/api/config\"/>\n"
                 "</page>\n"
                 "<page id=\"Other\"/>\n"
                 "\n"
                 "\n"
                 "<page id=\"HomeActivity\"/>\n",
                 "7:1: duplicate page id \"HomeActivity\" (first defined on line 1)");
    expect_error("<page id=\"A\">\n"
                 "  <api id=\"/api/config\"/>\n"
                 "  <api id=\"/api/list\"/>\n"
                 "  <api id=\"/api/config\"/>\n"
                 "</page>\n",
                 "4:3: duplicate api \"/api/config\" in page \"A\" (first listed on line 2)");
    /* The same API in two pages is fine. */
    pacer_config *cfg = parse_ok("<page id=\"A\"><api id=\"/x\"/></page><page id=\"B\"><api id=\"/x\"/></page>");
    pacer_config_unref(cfg);
    expect_error("<splash id=\"S\"/>\n<splash id=\"S\"/>", "2:1: duplicate splash id \"S\" (first defined on line 1)");
    expect_error("<page id=\"A\" tag=\"1\"/>\n"
                 "<page id=\"B\" tag=\"0\"/>\n"
                 "<page id=\"C\" tag=\"1\"/>\n",
                 "3:1: page \"C\" has tag=\"1\", but \"A\" on line 1 is already the main page; only one page may have "
                 "tag=\"1\"");
    expect_error("<pacer>\n"
                 "  <thresholds jank-ms=\"100\"/>\n"
                 "  <thresholds hang-ms=\"100\"/>\n"
                 "</pacer>\n",
                 "3:3: more than one <thresholds> (the first is on line 2)");
}

static void test_error_thresholds(void **state)
{
    static const struct {
        const char *xml, *error;
    } cases[] = {
        {"<thresholds jank-ms=\"0\"/>", "1:1: jank-ms=\"0\" on <thresholds>"},
        {"<thresholds jank-ms=\"-5\"/>", "1:1: jank-ms=\"-5\" on <thresholds>"},
        {"<thresholds hang-ms=\"3600001\"/>", "1:1: hang-ms=\"3600001\" on <thresholds>"},
        {"<thresholds hang-ms=\"99999999999999999999\"/>", "1:1: hang-ms=\"99999999999999999999\" on <thresholds>"},
        {"<thresholds page-deadline-ms=\"\"/>", "1:1: page-deadline-ms=\"\" on <thresholds>"},
        {"<thresholds page-deadline-ms=\"30s\"/>", "1:1: page-deadline-ms=\"30s\" on <thresholds>"},
        {"\n\n  <thresholds jank-ms=\"700\" hang-ms=\" 5000\"/>", "3:3: hang-ms=\" 5000\" on <thresholds>"},
        {"<thresholds jank-ms=\"1.5\"/>", "1:1: jank-ms=\"1.5\" on <thresholds>"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char expected[256];
        snprintf(expected, sizeof(expected), "%s: use a whole number of milliseconds from 1 to 3600000", cases[i].error);
        expect_error(cases[i].xml, expected);
    }
}

static void test_upload_settings(void **state)
{
    pacer_config *cfg = parse_ok("<page id=\"A\"/>");
    assert_int_equal(pacer_config_config_poll_ms(cfg), PACER_DEFAULT_CONFIG_POLL_MS);
    assert_int_equal(pacer_config_spool_max_kb(cfg), PACER_DEFAULT_SPOOL_MAX_KB);
    pacer_config_unref(cfg);
    cfg = parse_ok("<pacer>\n<upload config-poll-ms=\"250\" spool-max-kb=\"64\"/>\n</pacer>");
    assert_int_equal(pacer_config_config_poll_ms(cfg), 250);
    assert_int_equal(pacer_config_spool_max_kb(cfg), 64);
    pacer_config_unref(cfg);
    expect_error("<upload config-poll-ms=\"99\"/>",
                 "1:1: config-poll-ms=\"99\" on <upload>: use a whole number from 100 to 86400000");
    expect_error("<upload spool-max-kb=\"16777217\"/>",
                 "1:1: spool-max-kb=\"16777217\" on <upload>: use a whole number from 64 to 16777216");
    expect_error("<upload/>\n<upload/>", "2:1: more than one <upload> (the first is on line 1)");
    expect_error("<upload every=\"1\"/>",
                 "1:1: unknown attribute \"every\" on <upload> (it accepts config-poll-ms and spool-max-kb)");
    expect_error("<page id=\"a\">\n<upload/>\n</page>", "2:1: <upload> inside a <page> (line 1); only <api> belongs there");
}

static void test_leak_settings(void **state)
{
    pacer_config *cfg = parse_ok("<page id=\"A\"/>");
    assert_int_equal(pacer_config_leak_grace_ms(cfg), PACER_DEFAULT_LEAK_GRACE_MS);
    assert_int_equal(pacer_config_known_leak_count(cfg), 0);
    assert_null(pacer_config_known_leak_id(cfg, 0));
    pacer_config_unref(cfg);
    assert_int_equal(pacer_config_leak_grace_ms(NULL), 5000);

    cfg = parse_ok("<pacer>\n<thresholds leak-grace-ms=\"1500\"/>\n"
                   "<known-leak id=\"gtk-im\" type=\"GtkIMContextSimple\"/>\n"
                   "<known-leak type=\"GtkPopoverMenu\" page=\"MyWindow\"/>\n"
                   "<known-leak function=\"FcPatternCreate\"/>\n</pacer>");
    assert_int_equal(pacer_config_leak_grace_ms(cfg), 1500);
    assert_int_equal(pacer_config_known_leak_count(cfg), 3);
    assert_string_equal(pacer_config_known_leak_id(cfg, 0), "gtk-im");
    assert_string_equal(pacer_config_known_leak_type(cfg, 0), "GtkIMContextSimple");
    assert_null(pacer_config_known_leak_function(cfg, 0));
    assert_null(pacer_config_known_leak_page(cfg, 0));
    assert_string_equal(pacer_config_known_leak_id(cfg, 1), "GtkPopoverMenu"); /* no id: the type */
    assert_string_equal(pacer_config_known_leak_page(cfg, 1), "MyWindow");
    assert_string_equal(pacer_config_known_leak_function(cfg, 2), "FcPatternCreate");
    assert_null(pacer_config_known_leak_type(cfg, 2));
    assert_null(pacer_config_known_leak_type(cfg, 3));
    pacer_config_unref(cfg);

    expect_error("<thresholds leak-grace-ms=\"0\"/>",
                 "1:1: leak-grace-ms=\"0\" on <thresholds>: use a whole number of milliseconds from 1 to 3600000");
    expect_error("\n<known-leak id=\"x\"/>",
                 "2:1: <known-leak> needs exactly one of type (a GType name, for object leaks) and function (a "
                 "function of the allocation stack, for native leaks)");
    expect_error("<known-leak type=\"A\" function=\"f\"/>",
                 "1:1: <known-leak> needs exactly one of type (a GType name, for object leaks) and function (a "
                 "function of the allocation stack, for native leaks)");
    expect_error("<known-leak type=\" \"/>", "1:1: <known-leak> has an empty type");
    expect_error("<known-leak type=\"A\" id=\"\"/>", "1:1: <known-leak> has an empty id");
    expect_error("<known-leak type=\"A\" size=\"1\"/>",
                 "1:1: unknown attribute \"size\" on <known-leak> (it accepts id, type, function and page)");
    expect_error("<page id=\"a\">\n<known-leak type=\"A\"/>\n</page>",
                 "2:1: <known-leak> inside a <page> (line 1); only <api> belongs there");
}

static void test_error_text(void **state)
{
    expect_error("<page id=\"a\">\n  HomeActivity\n</page>",
                 "2:3: unexpected text \"HomeActivity\" inside <page>; a config holds only elements and attributes");
    expect_error("<page id=\"a\"/>\nhello\n",
                 "2:1: unexpected text \"hello\"; a config holds only elements and attributes");
    expect_error("<pacer>x</pacer>",
                 "1:8: unexpected text \"x\" inside <pacer>; a config holds only elements and attributes");
    expect_error("<page id=\"a\"><![CDATA[ ok? ]]></page>",
                 "1:24: unexpected text \"ok? \" inside <page>; a config holds only elements and attributes");
    /* The seed article's text right after the config: */
    expect_error_at(SEED_XML "我们定义了一个XML配置文件", "8:1: ", "unexpected text \"我们定义了一个XML配置文件\"");
    /* Long text is cut in the message, between characters. */
    static const char long_text[] = "<page id=\"a\">ééééééééééééééééééééééééééééééééééééééééééééééééééé</page>";
    char *error = NULL;
    assert_null(pacer_config_parse(long_text, strlen(long_text), &error));
    assert_non_null(error);
    assert_non_null(strstr(error, "é...\""));
    free(error);
}

static void test_error_malformed(void **state)
{
    /* expat's message, with the user's line and column. */
    expect_error_at("<page id=\"a\">\n<api id=/api/x/>\n</page>", "2:9: ", "not well-formed");
    expect_error_at("<page id=\"a\" id=\"b\"/>", "1:14: ", "duplicate attribute");
    expect_error_at("<page id=\"a\">\n  <api id=\"x\"/>\n</pag>\n", "3:1: ",
                    "mismatched closing tag: expected </page> (opened on line 1)");
    expect_error_at("<page id=\"a\"/>\n</page>\n", "2:1: ", "closing tag without a matching opening tag");
    expect_error_at("<page id=\"a\"/>\n&nbsp;\n", "2:1: ", "undefined entity");
    expect_error_at("<page id=\"a\"/>\n<!-- unterminated\n", "2:1: ", "unclosed token");
    expect_error_at("<!DOCTYPE pacer>\n" SEED_XML, "1:1: ", "DOCTYPE");
    expect_error_at("<page id=\"a\">\x01</page>", "1:14: ", "not well-formed");
    expect_error_at("<page id=\"\xff\"/>", "1:11: ", "not well-formed");
    expect_error_at("  <?xml version=\"1.0\"?>\n<page id=\"a\"/>", "1:3: ", "declaration not at start");
    /* Unterminated XML declaration: not wrapped, reported at its start. */
    expect_error_at("<?xml version=\"1.0\" <page id=\"a\"/>", "1:1: ", "");
    /* The file ends too early: reported at its end, naming what is open. */
    expect_error("<page id=\"a\">\n  <api id=\"x\"/>\n", "3:1: end of file inside <page> (opened on line 1)");
    expect_error("<pacer>\n<page id=\"a\">\n<api id=\"x\"/></page>",
                 "3:21: end of file inside <pacer> (opened on line 1)");
    expect_error_at("<page id=\"a\">\n  <api id=\"x\"", "2:14: ", "the file ends in the middle of a tag");
    /* Closing our own wrapper does not confuse the parser. */
    expect_error_at("<page id=\"a\"/></_><page id=\"b\"/>", "1:15: ", "without a matching");
    char *error = NULL;
    assert_null(pacer_config_parse("<page id=\"a\"/>\0", 15, &error));
    assert_string_equal(error, "1:15: not well-formed (invalid token)");
    free(error);
}

/* Columns on the first line stay right whatever comes before the user's
 * first element: a declaration, a BOM, or both. */
static void test_error_columns_after_prologue(void **state)
{
    expect_error("<?xml version=\"1.0\"?><api id=\"x\"/>", "1:22: <api> outside of a <page>");
    expect_error("\xEF\xBB\xBF<api id=\"x\"/>", "1:1: <api> outside of a <page>");
    expect_error("\xEF\xBB\xBF<?xml version=\"1.0\"?> <api id=\"x\"/>", "1:23: <api> outside of a <page>");
    expect_error("<?xml version=\"1.0\"\n  encoding=\"UTF-8\"?><api id=\"x\"/>", "2:21: <api> outside of a <page>");
    expect_error("<?xml version=\"1.0\"?>\n<api id=\"x\"/>", "2:1: <api> outside of a <page>");
    expect_error("<?xml version=\"1.0\"?><page id=\"é\"><x/></page>",
                 "1:35: unknown element <x> (expected <page>, <api>, <splash>, <thresholds>, <upload>, <in-app>, <known-leak> or a <pacer> root)");
    expect_error("<?xml version=\"1.0\"?><page id=\"a\">", "1:35: end of file inside <page> (opened on line 1)");
    expect_error("\r\n\r\n<api id=\"x\"/>", "3:1: <api> outside of a <page>");
    expect_error("\r\r<api id=\"x\"/>", "3:1: <api> outside of a <page>");
}

static void test_error_size_and_files(void **state)
{
    /* More than 1 MiB of otherwise valid text. */
    size_t len = 1024 * 1024 + 1;
    char *big = malloc(len);
    assert_non_null(big);
    memset(big, ' ', len);
    char *error = NULL;
    assert_null(pacer_config_parse(big, len, &error));
    assert_non_null(error);
    assert_string_equal(error, "1:1: config is larger than 1 MiB (1048577 bytes)");
    free(error);
    /* Exactly 1 MiB is fine. */
    pacer_config *cfg = pacer_config_parse(big, len - 1, NULL);
    assert_non_null(cfg);
    pacer_config_unref(cfg);

    char path[] = "/tmp/pacer-test-config-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, big, len), (ssize_t)len);
    close(fd);
    assert_null(pacer_config_load(path, &error));
    char expected[128];
    snprintf(expected, sizeof(expected), "%s: file is larger than 1 MiB; a page config should be a few KiB", path);
    assert_string_equal(error, expected);
    free(error);

    /* Errors from a file carry its path. */
    static const char bad[] = "<pacer>\n  <page id=\"a\"/>\n    <api id=\"/x\"/>\n</pacer>\n";
    fd = open(path, O_WRONLY | O_TRUNC);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, bad, strlen(bad)), (ssize_t)strlen(bad));
    close(fd);
    assert_null(pacer_config_load(path, &error));
    snprintf(expected, sizeof(expected), "%s:3:5: <api> outside of a <page>", path);
    assert_string_equal(error, expected);
    free(error);
    assert_null(pacer_config_load(path, NULL)); /* no error wanted: fine */
    unlink(path);
    free(big);

    assert_null(pacer_config_load("/nonexistent/pacer.xml", &error));
    assert_string_equal(error, "/nonexistent/pacer.xml: No such file or directory");
    free(error);
    assert_null(pacer_config_load("/", &error));
    assert_string_equal(error, "/: Is a directory");
    free(error);

    /* Input that is not text at all. */
    static const unsigned char garbage[] = {0x00, 0xff, 0xfe, 0x3c, 0x00, 0x70, 0x01, 0x80, 0x3e};
    assert_null(pacer_config_parse((const char *)garbage, sizeof(garbage), &error));
    assert_non_null(error);
    assert_true(error[0] >= '1' && error[0] <= '9');
    free(error);
}

/* Many small elements: the duplicate checks must not be quadratic, and
 * every page must come back in order. */
static void test_large_config(void **state)
{
    enum { N = 20000 };
    size_t cap = (size_t)N * 64, len = 0;
    char *xml = malloc(cap);
    assert_non_null(xml);
    len += (size_t)sprintf(xml + len, "<pacer>\n");
    for (int i = 0; i < N; i++)
        len += (size_t)sprintf(xml + len, "<page id=\"p%d\"><api id=\"/a%d\"/></page>\n", i, i);
    len += (size_t)sprintf(xml + len, "</pacer>\n");
    pacer_config *cfg = pacer_config_parse(xml, len, NULL);
    assert_non_null(cfg);
    assert_int_equal(pacer_config_page_count(cfg), N);
    assert_string_equal(pacer_config_page_id(cfg, N - 1), "p19999");
    assert_string_equal(pacer_config_page_api(cfg, N - 1, 0), "/a19999");
    assert_int_equal(pacer_config_find_page(cfg, "com.x.p12345"), 12345);
    pacer_config_unref(cfg);

    /* One page with many APIs, the last a duplicate of the first. */
    len = (size_t)sprintf(xml, "<page id=\"P\">\n");
    for (int i = 0; i < N; i++)
        len += (size_t)sprintf(xml + len, "<api id=\"/a%d\"/>\n", i);
    len += (size_t)sprintf(xml + len, "<api id=\"/a0\"/>\n</page>\n");
    char *error = NULL;
    assert_null(pacer_config_parse(xml, len, &error));
    char expected[128];
    snprintf(expected, sizeof(expected), "%d:1: duplicate api \"/a0\" in page \"P\" (first listed on line 2)", N + 2);
    assert_string_equal(error, expected);
    free(error);
    free(xml);
}

/* ---- reference counting ------------------------------------------------- */

static void test_refcount(void **state)
{
    pacer_config *cfg = parse_ok(SEED_XML);
    assert_ptr_equal(pacer_config_ref(cfg), cfg);
    pacer_config_unref(cfg);
    /* Still alive: one reference left. */
    assert_string_equal(pacer_config_page_id(cfg, 0), "HomeActivity");
    pacer_config_unref(cfg);

    assert_null(pacer_config_ref(NULL));
    pacer_config_unref(NULL);
}

#define REF_THREADS 8
#define REF_ROUNDS 20000

static void *ref_worker(void *arg)
{
    pacer_config *cfg = arg;
    for (int i = 0; i < REF_ROUNDS; i++) {
        pacer_config *mine = pacer_config_ref(cfg);
        if (pacer_config_find_page(mine, "MerchantFragment") != 1)
            abort();
        pacer_config_unref(mine);
    }
    pacer_config_unref(cfg); /* the reference main() handed over */
    return NULL;
}

/* Threads taking and dropping references while the owner lets go: the
 * config is freed exactly once, after the last user (ASan checks the rest). */
static void test_refcount_threads(void **state)
{
    pacer_config *cfg = parse_ok(SEED_XML);
    pthread_t threads[REF_THREADS];
    for (int i = 0; i < REF_THREADS; i++)
        assert_int_equal(pthread_create(&threads[i], NULL, ref_worker, pacer_config_ref(cfg)), 0);
    pacer_config_unref(cfg);
    for (int i = 0; i < REF_THREADS; i++)
        assert_int_equal(pthread_join(threads[i], NULL), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seed_verbatim),
        cmocka_unit_test(test_seed_with_root_and_prologue),
        cmocka_unit_test(test_crlf_seed),
        cmocka_unit_test(test_shop_fixture),
        cmocka_unit_test(test_splash_thresholds_defaults),
        cmocka_unit_test(test_empty_configs),
        cmocka_unit_test(test_accessors_out_of_range),
        cmocka_unit_test(test_find_page),
        cmocka_unit_test(test_error_structure),
        cmocka_unit_test(test_error_unknown),
        cmocka_unit_test(test_in_app_modules),
        cmocka_unit_test(test_error_ids),
        cmocka_unit_test(test_error_duplicates),
        cmocka_unit_test(test_error_thresholds),
        cmocka_unit_test(test_upload_settings),
        cmocka_unit_test(test_leak_settings),
        cmocka_unit_test(test_error_text),
        cmocka_unit_test(test_error_malformed),
        cmocka_unit_test(test_error_columns_after_prologue),
        cmocka_unit_test(test_error_size_and_files),
        cmocka_unit_test(test_large_config),
        cmocka_unit_test(test_refcount),
        cmocka_unit_test(test_refcount_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
