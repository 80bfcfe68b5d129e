/* Unit tests for the event reader and writer (src/core/event.c). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <pacer/event.h>

#define ERR_LEN 256

/* One parse with its own scratch and message buffers. The line is copied
 * into a heap block of exactly its length (no NUL), so that an overread is
 * caught by the sanitizer build. */
typedef struct parsed {
    int rc;
    pacer_event ev;
    char *scratch;
    char err[ERR_LEN];
} parsed;

static void parse_bytes(parsed *p, const char *line, size_t len)
{
    char *copy = malloc(len ? len : 1);
    p->scratch = malloc(len + 1);
    if (!copy || !p->scratch)
        abort();
    memcpy(copy, line, len);
    memset(&p->ev, 0xa5, sizeof(p->ev));
    p->rc = pacer_event_parse(copy, len, p->scratch, &p->ev, p->err, sizeof(p->err));
    free(copy);
}

static void parse(parsed *p, const char *line)
{
    parse_bytes(p, line, strlen(line));
}

static void parsed_free(parsed *p)
{
    free(p->scratch);
    p->scratch = NULL;
}

static void expect_ok(const char *line, pacer_event *ret, parsed *p)
{
    parse(p, line);
    if (p->rc != 0)
        fail_msg("parse of %s failed: %s", line, p->err);
    *ret = p->ev;
}

static void expect_error(const char *line, const char *msg)
{
    parsed p;
    parse(&p, line);
    if (p.rc != -EINVAL)
        fail_msg("parse of %s: expected -EINVAL, got %d", line, p.rc);
    assert_string_equal(p.err, msg);
    assert_null(strchr(p.err, '\n'));
    parsed_free(&p);
}

static void test_event_names(void **state)
{
    (void)state;
    static const char *const names[] = {
        "launch",    "agent_init",  "main",        "app_created", "page_create", "page_view_created",
        "page_draw", "page_select", "page_scroll", "page_destroy", "api_start",  "api_end",
        "page_show", "handoff",     "record",      "toolkit",     "first_frame",
    };
    for (int t = PACER_EV_FIRST; t <= PACER_EV_LAST; t++)
        assert_string_equal(pacer_event_name((pacer_event_type)t), names[t - PACER_EV_FIRST]);
    assert_null(pacer_event_name((pacer_event_type)0));
    assert_null(pacer_event_name((pacer_event_type)(PACER_EV_LAST + 1)));
    assert_null(pacer_event_name((pacer_event_type)-1));
}

static void test_parse_every_type(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        pacer_event_type type;
    } marks[] = {
        {"launch", PACER_EV_LAUNCH},
        {"agent_init", PACER_EV_AGENT_INIT},
        {"main", PACER_EV_MAIN},
        {"app_created", PACER_EV_APP_CREATED},
        {"handoff", PACER_EV_HANDOFF},
    };
    static const struct {
        const char *name;
        pacer_event_type type;
    } pages[] = {
        {"page_view_created", PACER_EV_PAGE_VIEW_CREATED},
        {"page_draw", PACER_EV_PAGE_DRAW},
        {"page_select", PACER_EV_PAGE_SELECT},
        {"page_scroll", PACER_EV_PAGE_SCROLL},
        {"page_destroy", PACER_EV_PAGE_DESTROY},
        {"page_show", PACER_EV_PAGE_SHOW},
    };
    char line[256];
    pacer_event ev;
    parsed p;

    for (size_t i = 0; i < sizeof(marks) / sizeof(marks[0]); i++) {
        snprintf(line, sizeof(line), "{\"t\": 1000, \"ev\": \"%s\"}", marks[i].name);
        expect_ok(line, &ev, &p);
        assert_int_equal(ev.type, marks[i].type);
        assert_int_equal(ev.t_ns, 1000);
        assert_int_equal(ev.page, 0);
        assert_null(ev.class_name);
        assert_null(ev.url);
        assert_int_equal(ev.req, 0);
        assert_int_equal(ev.status, 0);
        parsed_free(&p);
    }
    for (size_t i = 0; i < sizeof(pages) / sizeof(pages[0]); i++) {
        snprintf(line, sizeof(line), "{\"ev\":\"%s\",\"page\":42,\"t\":7}", pages[i].name);
        expect_ok(line, &ev, &p);
        assert_int_equal(ev.type, pages[i].type);
        assert_int_equal(ev.t_ns, 7);
        assert_int_equal(ev.page, 42);
        assert_null(ev.class_name);
        parsed_free(&p);
    }

    expect_ok("{\"t\":5,\"ev\":\"page_create\",\"page\":9,\"class\":\"MainWindow\",\"kind\":\"window\"}",
              &ev, &p);
    assert_int_equal(ev.type, PACER_EV_PAGE_CREATE);
    assert_int_equal(ev.t_ns, 5);
    assert_int_equal(ev.page, 9);
    assert_string_equal(ev.class_name, "MainWindow");
    assert_int_equal(ev.kind, PACER_PAGE_WINDOW);
    assert_null(ev.url);
    parsed_free(&p);

    expect_ok("{\"kind\":\"page\",\"class\":\"Settings\",\"page\":1,\"ev\":\"page_create\",\"t\":0}",
              &ev, &p);
    assert_int_equal(ev.kind, PACER_PAGE_PAGE);
    assert_string_equal(ev.class_name, "Settings");
    assert_int_equal(ev.t_ns, 0);
    parsed_free(&p);

    expect_ok("{\"t\":10,\"ev\":\"api_start\",\"url\":\"https://x.test/a?b=1\",\"req\":3}", &ev, &p);
    assert_int_equal(ev.type, PACER_EV_API_START);
    assert_string_equal(ev.url, "https://x.test/a?b=1");
    assert_int_equal(ev.req, 3);
    assert_int_equal(ev.status, 0);
    parsed_free(&p);

    expect_ok("{\"t\":11,\"ev\":\"api_end\",\"url\":\"https://x.test/a\",\"req\":3,\"status\":404}", &ev,
              &p);
    assert_int_equal(ev.type, PACER_EV_API_END);
    assert_string_equal(ev.url, "https://x.test/a");
    assert_int_equal(ev.req, 3);
    assert_int_equal(ev.status, 404);
    parsed_free(&p);

    expect_ok("{\"t\":11,\"ev\":\"api_end\",\"url\":\"u\",\"req\":0,\"status\":-7}", &ev, &p);
    assert_int_equal(ev.status, -7);
    parsed_free(&p);
}

static void test_parse_whitespace_and_extras(void **state)
{
    (void)state;
    pacer_event ev;
    parsed p;

    expect_ok(" \t{ \"t\" : 1 ,\r\n \"ev\" :\t\"main\" } \r\n", &ev, &p);
    assert_int_equal(ev.type, PACER_EV_MAIN);
    parsed_free(&p);

    /* Vocabulary members the event does not use are ignored, whatever their
     * value; unknown members of every kind too. */
    expect_ok("{\"t\":1,\"ev\":\"launch\",\"page\":\"x\",\"url\":[],\"status\":1.5,\"extra\":null,"
              "\"b\":true,\"c\":false,\"d\":-0.5e+10,\"e\":\"\\u00e9\",\"f\":{}}",
              &ev, &p);
    assert_int_equal(ev.type, PACER_EV_LAUNCH);
    assert_int_equal(ev.page, 0);
    assert_null(ev.url);
    assert_int_equal(ev.status, 0);
    parsed_free(&p);

    /* -0 is zero. */
    expect_ok("{\"t\":-0,\"ev\":\"page_draw\",\"page\":-0}", &ev, &p);
    assert_int_equal(ev.t_ns, 0);
    assert_int_equal(ev.page, 0);
    parsed_free(&p);

    /* Escaped member names and event names are decoded before matching. */
    expect_ok("{\"\\u0074\":3,\"e\\u0076\":\"page\\u005fdraw\",\"pag\\u0065\":4}", &ev, &p);
    assert_int_equal(ev.type, PACER_EV_PAGE_DRAW);
    assert_int_equal(ev.t_ns, 3);
    assert_int_equal(ev.page, 4);
    parsed_free(&p);
}

static void test_parse_unknown_nested(void **state)
{
    (void)state;
    pacer_event ev;
    parsed p;

    expect_ok("{\"t\":1,\"x\":{\"a\":[1,2,{\"b\":null,\"t\":\"no\",\"ev\":3}],\"c\":\"\\ud83d\\ude00\"},"
              "\"ev\":\"page_scroll\",\"y\":[true,false,null,-1.5e-3,[],{},[[{}]]],\"page\":8}",
              &ev, &p);
    assert_int_equal(ev.type, PACER_EV_PAGE_SCROLL);
    assert_int_equal(ev.page, 8);
    parsed_free(&p);

    /* Errors inside skipped values are still errors. */
    expect_error("{\"t\":1,\"ev\":\"main\",\"x\":{\"a\" 1}}",
                 "invalid JSON at column 29: expected ':' after member name");
    expect_error("{\"t\":1,\"ev\":\"main\",\"x\":[1 2]}",
                 "invalid JSON at column 27: expected ',' or ']' after array element");
    expect_error("{\"t\":1,\"ev\":\"main\",\"x\":[1,]}",
                 "invalid JSON at column 27: expected a value, got ']'");
    expect_error("{\"t\":1,\"ev\":\"main\",\"x\":{\"a\":1,}}",
                 "invalid JSON at column 31: expected member name");
    expect_error("{\"t\":1,\"ev\":\"main\",\"x\":\"\\q\"}",
                 "invalid JSON at column 25: invalid escape: backslash followed by 'q'");
}

/* A line with an unknown member nested `levels` deep (the event object
 * itself is level 1). */
static char *nested_line(int levels)
{
    size_t cap = 64 + 6 * (size_t)levels;
    char *s = malloc(cap);
    size_t n = 0;
    if (!s)
        abort(); /* not assert_non_null: GCC must see that s is not NULL below */
    n += (size_t)sprintf(s + n, "{\"t\":1,\"ev\":\"main\",\"x\":");
    for (int i = 1; i < levels; i++) {
        if (i % 2)
            s[n++] = '[';
        else
            n += (size_t)sprintf(s + n, "{\"k\":");
    }
    s[n++] = '0';
    for (int i = levels - 1; i >= 1; i--)
        s[n++] = (i % 2) ? ']' : '}';
    s[n++] = '}';
    s[n] = '\0';
    return s;
}

static void test_parse_nesting_limit(void **state)
{
    (void)state;
    pacer_event ev;
    parsed p;
    char *line = nested_line(64);

    expect_ok(line, &ev, &p);
    assert_int_equal(ev.type, PACER_EV_MAIN);
    parsed_free(&p);
    free(line);

    line = nested_line(65);
    parse(&p, line);
    assert_int_equal(p.rc, -EINVAL);
    assert_non_null(strstr(p.err, "nesting deeper than 64 levels"));
    assert_int_equal(strncmp(p.err, "invalid JSON at column ", 23), 0);
    parsed_free(&p);
    free(line);

    /* Far deeper than the limit: rejected without deep recursion. */
    line = nested_line(100000);
    parse(&p, line);
    assert_int_equal(p.rc, -EINVAL);
    assert_non_null(strstr(p.err, "nesting deeper than 64 levels"));
    parsed_free(&p);
    free(line);
}

static void test_parse_escapes(void **state)
{
    (void)state;
    pacer_event ev;
    parsed p;

    expect_ok("{\"t\":1,\"ev\":\"page_create\",\"page\":1,\"kind\":\"page\","
              "\"class\":\"q\\\"b\\\\s\\/b\\bf\\fn\\nr\\rt\\t\"}",
              &ev, &p);
    assert_string_equal(ev.class_name, "q\"b\\s/b\bf\fn\nr\rt\t");
    parsed_free(&p);

    /* \u escapes of every UTF-8 length, upper and lower case hex, a
     * surrogate pair, and raw UTF-8 passing through. */
    expect_ok("{\"t\":1,\"ev\":\"api_start\",\"req\":1,"
              "\"url\":\"\\u0041\\u00E9\\u20ac\\uD83D\\uDE00|\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\x7f\"}",
              &ev, &p);
    assert_string_equal(ev.url, "A\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80|\xc3\xa9\xe2\x82\xac"
                                "\xf0\x9f\x98\x80\x7f");
    parsed_free(&p);

    /* The highest code point. */
    expect_ok("{\"t\":1,\"ev\":\"api_start\",\"req\":1,\"url\":\"\\udbff\\udfff\xf4\x8f\xbf\xbf\"}",
              &ev, &p);
    assert_string_equal(ev.url, "\xf4\x8f\xbf\xbf\xf4\x8f\xbf\xbf");
    parsed_free(&p);

    static const struct {
        const char *line;
        const char *msg;
    } bad[] = {
        {"{\"t\":1,\"ev\":\"a\\x\"}", "invalid JSON at column 15: invalid escape: backslash followed by 'x'"},
        {"{\"t\":1,\"ev\":\"a\\\x01\"}",
         "invalid JSON at column 15: invalid escape: backslash followed by byte 0x01"},
        {"{\"t\":1,\"ev\":\"\\u12G4\"}", "invalid JSON at column 14: invalid \\u escape: expected 4 hex digits"},
        {"{\"t\":1,\"ev\":\"\\u12\"}", "invalid JSON at column 14: invalid \\u escape: expected 4 hex digits"},
        {"{\"t\":1,\"ev\":\"\\ud800\"}", "invalid JSON at column 14: unpaired high surrogate \\ud800"},
        {"{\"t\":1,\"ev\":\"\\ud800x\"}", "invalid JSON at column 14: unpaired high surrogate \\ud800"},
        {"{\"t\":1,\"ev\":\"\\ud800\\u0041\"}", "invalid JSON at column 14: unpaired high surrogate \\ud800"},
        {"{\"t\":1,\"ev\":\"\\ud800\\ud800\"}", "invalid JSON at column 14: unpaired high surrogate \\ud800"},
        {"{\"t\":1,\"ev\":\"\\ud800\\uzzzz\"}", "invalid JSON at column 20: invalid \\u escape: expected 4 hex digits"},
        {"{\"t\":1,\"ev\":\"\\udc00\"}", "invalid JSON at column 14: unpaired low surrogate \\udc00"},
        {"{\"t\":1,\"ev\":\"a\tb\"}",
         "invalid JSON at column 15: control character 0x09 in string (must be escaped)"},
        {"{\"t\":1,\"ev\":\"a\nb\"}",
         "invalid JSON at column 15: control character 0x0a in string (must be escaped)"},
        {"{\"t\":1,\"ev\":\"\xc0\x80\"}", "invalid JSON at column 14: invalid UTF-8 (byte 0xc0) in string"},
        {"{\"t\":1,\"ev\":\"\xed\xa0\x80\"}", "invalid JSON at column 14: invalid UTF-8 (byte 0xed) in string"},
        {"{\"t\":1,\"ev\":\"\xe0\x80\xaf\"}", "invalid JSON at column 14: invalid UTF-8 (byte 0xe0) in string"},
        {"{\"t\":1,\"ev\":\"\xf4\x90\x80\x80\"}", "invalid JSON at column 14: invalid UTF-8 (byte 0xf4) in string"},
        {"{\"t\":1,\"ev\":\"\xf5\x80\x80\x80\"}", "invalid JSON at column 14: invalid UTF-8 (byte 0xf5) in string"},
        {"{\"t\":1,\"ev\":\"\x80\"}", "invalid JSON at column 14: invalid UTF-8 (byte 0x80) in string"},
        {"{\"t\":1,\"ev\":\"\xc3\"}", "invalid JSON at column 14: invalid UTF-8 (byte 0xc3) in string"},
        {"{\"t\":1,\"ev\":\"\xe2\x82\"}", "invalid JSON at column 14: invalid UTF-8 (byte 0xe2) in string"},
        {"{\"t\":1,\"ev\":\"abc", "invalid JSON at column 17: unterminated string (opened at column 13)"},
        {"{\"t\":1,\"ev\":\"abc\\", "invalid JSON at column 18: unterminated string (opened at column 13)"},
        /* Member names are strings like any other. */
        {"{\"\\ud800\":1}", "invalid JSON at column 3: unpaired high surrogate \\ud800"},
        /* A NUL cannot live in a C string. */
        {"{\"t\":1,\"ev\":\"page_create\",\"page\":1,\"kind\":\"page\",\"class\":\"a\\u0000b\"}",
         "field \"class\" must not contain \\u0000"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        expect_error(bad[i].line, bad[i].msg);

    /* Invalid UTF-8 truncated by `len`: the bytes after it must not count. */
    parse_bytes(&p, "{\"t\":1,\"ev\":\"\xe2\x82\xac\"}", 15);
    assert_int_equal(p.rc, -EINVAL);
    assert_string_equal(p.err, "invalid JSON at column 14: invalid UTF-8 (byte 0xe2) in string");
    parsed_free(&p);
}

static void test_parse_syntax_errors(void **state)
{
    (void)state;
    static const struct {
        const char *line;
        const char *msg;
    } bad[] = {
        {"", "invalid JSON at column 1: expected '{', got an empty line"},
        {"   ", "invalid JSON at column 4: expected '{', got an empty line"},
        {"[1]", "invalid JSON at column 1: expected '{' at start of event"},
        {"\"t\"", "invalid JSON at column 1: expected '{' at start of event"},
        {"{", "invalid JSON at column 2: expected member name"},
        {"{\"t\":1,}", "invalid JSON at column 8: expected member name"},
        {"{t:1}", "invalid JSON at column 2: expected member name"},
        {"{\"t\" 1}", "invalid JSON at column 6: expected ':' after member name"},
        {"{\"t\":1,\"ev\":\"main\" \"x\":1}", "invalid JSON at column 20: expected ',' or '}' after member"},
        {"{\"t\":1,\"ev\":\"main\"", "invalid JSON at column 19: expected ',' or '}' after member"},
        {"{\"t\":}", "invalid JSON at column 6: expected a value, got '}'"},
        {"{\"t\":", "invalid JSON at column 6: expected a value, got end of line"},
        {"{\"t\":+1}", "invalid JSON at column 6: expected a value, got '+'"},
        {"{\"t\":.5}", "invalid JSON at column 6: expected a value, got '.'"},
        {"{\"t\":\x01}", "invalid JSON at column 6: expected a value, got byte 0x01"},
        {"{\"t\":-}", "invalid JSON at column 7: expected a digit after '-'"},
        {"{\"t\":-a}", "invalid JSON at column 7: expected a digit after '-'"},
        {"{\"t\":01}", "invalid JSON at column 7: leading zeros are not allowed in numbers"},
        {"{\"t\":1.}", "invalid JSON at column 8: expected a digit after '.'"},
        {"{\"t\":1.e3}", "invalid JSON at column 8: expected a digit after '.'"},
        {"{\"t\":1e}", "invalid JSON at column 8: expected a digit in the exponent"},
        {"{\"t\":1e+}", "invalid JSON at column 9: expected a digit in the exponent"},
        {"{\"t\":1x}", "invalid JSON at column 7: expected ',' or '}' after member"},
        {"{\"t\":tru}", "invalid JSON at column 6: invalid literal (expected true, false or null)"},
        {"{\"t\":nul", "invalid JSON at column 6: invalid literal (expected true, false or null)"},
        {"{\"t\":True}", "invalid JSON at column 6: expected a value, got 'T'"},
        {"{\"t\":1,\"ev\":\"main\"}x", "invalid JSON at column 20: unexpected characters after the object"},
        {"{\"t\":1,\"ev\":\"main\"} {}", "invalid JSON at column 21: unexpected characters after the object"},
        {"{\"t\":1,\"ev\":\"main\"}\n{\"t\":2}", "invalid JSON at column 21: unexpected characters after the object"},
        {"{\"t\":1,\"ev\":\"main\"}}", "invalid JSON at column 20: unexpected characters after the object"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        expect_error(bad[i].line, bad[i].msg);

    /* A NUL byte inside the line is just a byte. */
    parsed p;
    parse_bytes(&p, "{\"t\":1,\"ev\":\"main\"}\0", 20);
    assert_int_equal(p.rc, -EINVAL);
    assert_string_equal(p.err, "invalid JSON at column 20: unexpected characters after the object");
    parsed_free(&p);
}

static void test_parse_field_errors(void **state)
{
    (void)state;
    static const struct {
        const char *line;
        const char *msg;
    } bad[] = {
        {"{}", "field \"ev\" is missing"},
        {"{\"t\":1}", "field \"ev\" is missing"},
        {"{\"t\":1,\"ev\":3}", "field \"ev\" must be a string"},
        {"{\"t\":1,\"ev\":null}", "field \"ev\" must be a string"},
        {"{\"t\":1,\"ev\":\"foo\"}", "unknown event \"foo\""},
        {"{\"t\":1,\"ev\":\"\"}", "unknown event \"\""},
        {"{\"t\":1,\"ev\":\"Launch\"}", "unknown event \"Launch\""},
        {"{\"t\":1,\"ev\":\"a\\\"\\\\\\n\\u0000\xc3\xa9\"}", "unknown event \"a\\\"\\\\\\x0a\\x00\\xc3\\xa9\""},
        {"{\"t\":1,\"ev\":\"0123456789012345678901234567890123456789012345678901234567890\"}",
         "unknown event \"012345678901234567890123456789012345678901234567...\""},
        {"{\"ev\":\"launch\"}", "missing field \"t\" for event \"launch\""},
        {"{\"t\":1,\"ev\":\"page_draw\"}", "missing field \"page\" for event \"page_draw\""},
        {"{\"t\":1,\"ev\":\"page_create\",\"class\":\"A\",\"kind\":\"page\"}",
         "missing field \"page\" for event \"page_create\""},
        {"{\"t\":1,\"ev\":\"page_create\",\"page\":1,\"kind\":\"page\"}",
         "missing field \"class\" for event \"page_create\""},
        {"{\"t\":1,\"ev\":\"page_create\",\"page\":1,\"class\":\"A\"}",
         "missing field \"kind\" for event \"page_create\""},
        {"{\"t\":1,\"ev\":\"api_start\",\"req\":1}", "missing field \"url\" for event \"api_start\""},
        {"{\"t\":1,\"ev\":\"api_start\",\"url\":\"u\"}", "missing field \"req\" for event \"api_start\""},
        {"{\"t\":1,\"ev\":\"api_end\",\"url\":\"u\",\"req\":1}",
         "missing field \"status\" for event \"api_end\""},
        {"{\"t\":1,\"ev\":\"toolkit\"}", "missing field \"class\" for event \"toolkit\""},
        {"{\"t\":1,\"ev\":\"first_frame\"}", "missing field \"source\" for event \"first_frame\""},
        {"{\"t\":1,\"ev\":\"first_frame\",\"source\":\"\"}", "field \"source\" must be a non-empty string"},
        {"{\"t\":-1,\"ev\":\"main\"}", "field \"t\" must be a non-negative integer"},
        {"{\"t\":1.0,\"ev\":\"main\"}", "field \"t\" must be a non-negative integer"},
        {"{\"t\":1e3,\"ev\":\"main\"}", "field \"t\" must be a non-negative integer"},
        {"{\"t\":\"1\",\"ev\":\"main\"}", "field \"t\" must be a non-negative integer"},
        {"{\"t\":null,\"ev\":\"main\"}", "field \"t\" must be a non-negative integer"},
        {"{\"t\":[1],\"ev\":\"main\"}", "field \"t\" must be a non-negative integer"},
        {"{\"t\":1,\"ev\":\"page_draw\",\"page\":-1}", "field \"page\" must be an unsigned integer"},
        {"{\"t\":1,\"ev\":\"page_draw\",\"page\":1.0}", "field \"page\" must be an unsigned integer"},
        {"{\"t\":1,\"ev\":\"page_draw\",\"page\":1e3}", "field \"page\" must be an unsigned integer"},
        {"{\"t\":1,\"ev\":\"page_draw\",\"page\":\"7\"}", "field \"page\" must be an unsigned integer"},
        {"{\"t\":1,\"ev\":\"page_draw\",\"page\":true}", "field \"page\" must be an unsigned integer"},
        {"{\"t\":1,\"ev\":\"api_start\",\"url\":\"u\",\"req\":-5}", "field \"req\" must be an unsigned integer"},
        {"{\"t\":1,\"ev\":\"api_end\",\"url\":\"u\",\"req\":1,\"status\":200.0}",
         "field \"status\" must be an integer"},
        {"{\"t\":1,\"ev\":\"api_end\",\"url\":\"u\",\"req\":1,\"status\":\"200\"}",
         "field \"status\" must be an integer"},
        {"{\"t\":1,\"ev\":\"page_create\",\"page\":1,\"class\":\"\",\"kind\":\"page\"}",
         "field \"class\" must be a non-empty string"},
        {"{\"t\":1,\"ev\":\"page_create\",\"page\":1,\"class\":7,\"kind\":\"page\"}",
         "field \"class\" must be a non-empty string"},
        {"{\"t\":1,\"ev\":\"page_create\",\"page\":1,\"class\":\"A\",\"kind\":\"Page\"}",
         "field \"kind\" must be \"window\" or \"page\""},
        {"{\"t\":1,\"ev\":\"page_create\",\"page\":1,\"class\":\"A\",\"kind\":1}",
         "field \"kind\" must be \"window\" or \"page\""},
        {"{\"t\":1,\"ev\":\"api_start\",\"url\":\"\",\"req\":1}", "field \"url\" must be a non-empty string"},
        {"{\"t\":1,\"ev\":\"api_start\",\"url\":null,\"req\":1}", "field \"url\" must be a non-empty string"},
        {"{\"t\":1,\"ev\":\"main\",\"t\":2}", "duplicate field \"t\" at column 20"},
        {"{\"t\":1,\"ev\":\"main\",\"ev\":\"main\"}", "duplicate field \"ev\" at column 20"},
        {"{\"t\":1,\"ev\":\"main\",\"page\":1,\"page\":1}", "duplicate field \"page\" at column 29"},
        {"{\"t\":1,\"ev\":\"main\",\"x\":1,\"x\":2,\"\\u0074\":2}", "duplicate field \"t\" at column 32"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        expect_error(bad[i].line, bad[i].msg);

    /* Duplicates of unknown members are the caller's business, not ours. */
    pacer_event ev;
    parsed p;
    expect_ok("{\"t\":1,\"ev\":\"main\",\"x\":1,\"x\":{\"y\":1,\"y\":2}}", &ev, &p);
    parsed_free(&p);
}

static void test_parse_number_limits(void **state)
{
    (void)state;
    pacer_event ev;
    parsed p;

    expect_ok("{\"t\":9223372036854775807,\"ev\":\"page_draw\",\"page\":18446744073709551615}", &ev, &p);
    assert_int_equal(ev.t_ns, INT64_MAX);
    assert_true(ev.page == UINT64_MAX);
    parsed_free(&p);

    expect_ok("{\"t\":0,\"ev\":\"api_end\",\"url\":\"u\",\"req\":18446744073709551615,"
              "\"status\":2147483647}",
              &ev, &p);
    assert_true(ev.req == UINT64_MAX);
    assert_int_equal(ev.status, 2147483647);
    parsed_free(&p);

    expect_ok("{\"t\":0,\"ev\":\"api_end\",\"url\":\"u\",\"req\":0,\"status\":-2147483648}", &ev, &p);
    assert_int_equal(ev.status, INT32_MIN);
    parsed_free(&p);

    /* Huge numbers in members that do not matter are fine. */
    expect_ok("{\"t\":0,\"ev\":\"main\",\"x\":123456789012345678901234567890e999999,"
              "\"page\":-99999999999999999999999}",
              &ev, &p);
    parsed_free(&p);

    expect_error("{\"t\":9223372036854775808,\"ev\":\"main\"}",
                 "field \"t\" is out of range (maximum 9223372036854775807)");
    expect_error("{\"t\":99999999999999999999999,\"ev\":\"main\"}",
                 "field \"t\" is out of range (maximum 9223372036854775807)");
    expect_error("{\"t\":-9223372036854775808,\"ev\":\"main\"}", "field \"t\" must be a non-negative integer");
    expect_error("{\"t\":-99999999999999999999999,\"ev\":\"main\"}",
                 "field \"t\" must be a non-negative integer");
    expect_error("{\"t\":1,\"ev\":\"page_draw\",\"page\":18446744073709551616}",
                 "field \"page\" is out of range (maximum 18446744073709551615)");
    expect_error("{\"t\":1,\"ev\":\"page_draw\",\"page\":18446744073709551620}",
                 "field \"page\" is out of range (maximum 18446744073709551615)");
    expect_error("{\"t\":1,\"ev\":\"api_start\",\"url\":\"u\",\"req\":100000000000000000000}",
                 "field \"req\" is out of range (maximum 18446744073709551615)");
    expect_error("{\"t\":1,\"ev\":\"api_end\",\"url\":\"u\",\"req\":1,\"status\":2147483648}",
                 "field \"status\" is out of range (-2147483648 to 2147483647)");
    expect_error("{\"t\":1,\"ev\":\"api_end\",\"url\":\"u\",\"req\":1,\"status\":-2147483649}",
                 "field \"status\" is out of range (-2147483648 to 2147483647)");
    expect_error("{\"t\":1,\"ev\":\"api_end\",\"url\":\"u\",\"req\":1,\"status\":-99999999999999999999999}",
                 "field \"status\" is out of range (-2147483648 to 2147483647)");
}

static void test_parse_not_nul_terminated(void **state)
{
    (void)state;
    /* The bytes after `len` would make the line invalid if they were read. */
    static const char text[] = "{\"t\":12,\"ev\":\"page_select\",\"page\":5}\"garbage";
    size_t len = strlen(text) - strlen("\"garbage");
    parsed p;

    p.scratch = malloc(len + 1);
    assert_non_null(p.scratch);
    p.rc = pacer_event_parse(text, len, p.scratch, &p.ev, p.err, sizeof(p.err));
    assert_int_equal(p.rc, 0);
    assert_int_equal(p.ev.type, PACER_EV_PAGE_SELECT);
    assert_int_equal(p.ev.page, 5);
    parsed_free(&p);

    /* Cut inside a number, a string and a literal: every prefix either parses
     * or fails, and none reads past its end (heap copies in parse_bytes). */
    static const char full[] =
        "{\"t\":1234,\"ev\":\"api_end\",\"url\":\"h\\u00e9\\ud83d\\ude00\",\"req\":2,\"status\":-1,\"x\":[true,null]}";
    for (size_t n = 0; n <= strlen(full); n++) {
        parse_bytes(&p, full, n);
        assert_int_equal(p.rc, n == strlen(full) ? 0 : -EINVAL);
        if (p.rc < 0)
            assert_true(p.err[0] != '\0');
        parsed_free(&p);
    }
}

static void test_parse_arguments(void **state)
{
    (void)state;
    char scratch[8];
    char err[ERR_LEN];
    pacer_event ev;

    assert_int_equal(pacer_event_parse(NULL, 3, scratch, &ev, err, sizeof(err)), -EINVAL);
    assert_true(err[0] != '\0');
    assert_int_equal(pacer_event_parse("{}", 2, NULL, &ev, err, sizeof(err)), -EINVAL);
    assert_int_equal(pacer_event_parse("{}", 2, scratch, NULL, err, sizeof(err)), -EINVAL);
    /* No message buffer, or a tiny one: still safe. */
    assert_int_equal(pacer_event_parse("{}", 2, scratch, &ev, NULL, 0), -EINVAL);
    err[0] = 'x';
    assert_int_equal(pacer_event_parse("{", 1, scratch, &ev, err, 1), -EINVAL);
    assert_int_equal(err[0], '\0');
    assert_int_equal(pacer_event_parse("{}", 2, scratch, &ev, err, 5), -EINVAL);
    assert_string_equal(err, "fiel");
    /* An empty line with a NULL pointer is just an empty line. */
    assert_int_equal(pacer_event_parse(NULL, 0, scratch, &ev, err, sizeof(err)), -EINVAL);
    assert_string_equal(err, "invalid JSON at column 1: expected '{', got an empty line");
}

static void test_format_canonical(void **state)
{
    (void)state;
    char buf[256];
    pacer_event ev = {.t_ns = 123, .type = PACER_EV_PAGE_CREATE, .page = 7, .class_name = "X",
                      .kind = PACER_PAGE_WINDOW};
    int n = pacer_event_format(&ev, buf, sizeof(buf));
    const char *want = "{\"t\":123,\"ev\":\"page_create\",\"page\":7,\"class\":\"X\",\"kind\":\"window\"}\n";
    assert_int_equal(n, (int)strlen(want));
    assert_string_equal(buf, want);

    /* Fields other types carry are not written. */
    pacer_event launch = {.t_ns = 1, .type = PACER_EV_LAUNCH, .page = 3, .url = "u", .status = 2};
    n = pacer_event_format(&launch, buf, sizeof(buf));
    assert_string_equal(buf, "{\"t\":1,\"ev\":\"launch\"}\n");
    assert_int_equal(n, 22);

    pacer_event end = {.t_ns = INT64_MAX, .type = PACER_EV_API_END, .url = "https://a/b", .req = UINT64_MAX,
                       .status = INT32_MIN};
    pacer_event_format(&end, buf, sizeof(buf));
    assert_string_equal(buf, "{\"t\":9223372036854775807,\"ev\":\"api_end\",\"url\":\"https://a/b\","
                             "\"req\":18446744073709551615,\"status\":-2147483648}\n");

    pacer_event start = {.t_ns = 0, .type = PACER_EV_API_START, .url = "u", .req = 0};
    pacer_event_format(&start, buf, sizeof(buf));
    assert_string_equal(buf, "{\"t\":0,\"ev\":\"api_start\",\"url\":\"u\",\"req\":0}\n");

    pacer_event draw = {.t_ns = 9, .type = PACER_EV_PAGE_DRAW, .page = 4};
    pacer_event_format(&draw, buf, sizeof(buf));
    assert_string_equal(buf, "{\"t\":9,\"ev\":\"page_draw\",\"page\":4}\n");
}

static void test_format_escapes(void **state)
{
    (void)state;
    char buf[256];
    pacer_event ev = {.t_ns = 1, .type = PACER_EV_PAGE_CREATE, .page = 1, .kind = PACER_PAGE_PAGE,
                      .class_name = "a\"b\\c\n\r\t\b\f\x01\x1f\x7f/\xc3\xa9"};
    pacer_event_format(&ev, buf, sizeof(buf));
    assert_string_equal(buf, "{\"t\":1,\"ev\":\"page_create\",\"page\":1,"
                             "\"class\":\"a\\\"b\\\\c\\n\\r\\t\\b\\f\\u0001\\u001f\x7f/\xc3\xa9\","
                             "\"kind\":\"page\"}\n");

    /* Invalid UTF-8 cannot round-trip: each bad byte becomes U+FFFD. */
    ev.class_name = "a\xff\xc3(\xed\xa0\x80z";
    pacer_event_format(&ev, buf, sizeof(buf));
    assert_string_equal(buf, "{\"t\":1,\"ev\":\"page_create\",\"page\":1,"
                             "\"class\":\"a\\ufffd\\ufffd(\\ufffd\\ufffd\\ufffdz\",\"kind\":\"page\"}\n");
    parsed p;
    pacer_event back;
    expect_ok(buf, &back, &p);
    assert_string_equal(back.class_name, "a\xef\xbf\xbd\xef\xbf\xbd(\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbdz");
    parsed_free(&p);
}

static void test_format_invalid(void **state)
{
    (void)state;
    char buf[64];
    pacer_event ok = {.t_ns = 1, .type = PACER_EV_PAGE_CREATE, .page = 1, .class_name = "C",
                      .kind = PACER_PAGE_PAGE};
    pacer_event ev;

    assert_int_equal(pacer_event_format(NULL, buf, sizeof(buf)), -EINVAL);

    ev = ok;
    ev.type = (pacer_event_type)0;
    strcpy(buf, "junk");
    assert_int_equal(pacer_event_format(&ev, buf, sizeof(buf)), -EINVAL);
    assert_string_equal(buf, "");
    ev.type = (pacer_event_type)(PACER_EV_LAST + 1);
    assert_int_equal(pacer_event_format(&ev, buf, sizeof(buf)), -EINVAL);

    ev = ok;
    ev.t_ns = -1;
    assert_int_equal(pacer_event_format(&ev, buf, sizeof(buf)), -EINVAL);
    ev = ok;
    ev.class_name = NULL;
    assert_int_equal(pacer_event_format(&ev, buf, sizeof(buf)), -EINVAL);
    ev.class_name = "";
    assert_int_equal(pacer_event_format(&ev, buf, sizeof(buf)), -EINVAL);
    ev = ok;
    ev.kind = (pacer_page_kind)2;
    assert_int_equal(pacer_event_format(&ev, buf, sizeof(buf)), -EINVAL);

    pacer_event api = {.t_ns = 1, .type = PACER_EV_API_START, .req = 1};
    assert_int_equal(pacer_event_format(&api, buf, sizeof(buf)), -EINVAL);
    api.url = "";
    assert_int_equal(pacer_event_format(&api, buf, sizeof(buf)), -EINVAL);
    api.type = PACER_EV_API_END;
    assert_int_equal(pacer_event_format(&api, buf, sizeof(buf)), -EINVAL);

    /* A page event does not need class or url. */
    pacer_event draw = {.t_ns = 1, .type = PACER_EV_PAGE_DESTROY, .page = 2, .kind = (pacer_page_kind)9};
    assert_true(pacer_event_format(&draw, buf, sizeof(buf)) > 0);
}

static void test_format_buffer_too_small(void **state)
{
    (void)state;
    pacer_event ev = {.t_ns = 123456, .type = PACER_EV_API_END, .url = "https://x/\xe2\x82\xac\"q",
                      .req = 77, .status = 503};
    char full[256];
    int need = pacer_event_format(&ev, full, sizeof(full));
    assert_true(need > 0);
    assert_int_equal((size_t)need, strlen(full));
    assert_int_equal(full[need - 1], '\n');

    /* Size query without a buffer. */
    assert_int_equal(pacer_event_format(&ev, NULL, 0), need);

    for (size_t cap = 1; cap <= (size_t)need + 1; cap++) {
        char *buf = malloc(cap); /* exact size: overruns show in the sanitizer build */
        assert_non_null(buf);
        memset(buf, 'Z', cap);
        assert_int_equal(pacer_event_format(&ev, buf, cap), need);
        size_t got = cap - 1 < (size_t)need ? cap - 1 : (size_t)need;
        assert_int_equal(strlen(buf), got);
        assert_memory_equal(buf, full, got);
        free(buf);
    }
    /* buf_len 0: the buffer is not touched. */
    char one = 'Z';
    assert_int_equal(pacer_event_format(&ev, &one, 0), need);
    assert_int_equal(one, 'Z');
}

static int same_str(const char *a, const char *b)
{
    if (!a || !b)
        return a == b;
    return strcmp(a, b) == 0;
}

static void test_round_trip(void **state)
{
    (void)state;
    static const char *const strs[] = {
        "C", "MainWindow", "with \"quotes\" and \\", "ctl\x01\x02\n\t\x1f\x7f",
        "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf", "/slash/ path?q=1&r=\xe4\xb8\xad",
    };
    static const int64_t times[] = {0, 1, 999999999, INT64_MAX};
    static const uint64_t ids[] = {0, 1, 4294967296u, UINT64_MAX};
    static const int statuses[] = {200, 0, -1, INT32_MAX, INT32_MIN};
    char line[512];

    for (int t = PACER_EV_FIRST; t <= PACER_EV_LAST; t++) {
        for (size_t i = 0; i < 4; i++) {
            pacer_event ev = {.t_ns = times[i], .type = (pacer_event_type)t};
            const char *s = strs[(i + (size_t)t) % (sizeof(strs) / sizeof(strs[0]))];
            if ((t >= PACER_EV_PAGE_CREATE && t <= PACER_EV_PAGE_DESTROY) || t == PACER_EV_PAGE_SHOW)
                ev.page = ids[i];
            if (t == PACER_EV_PAGE_CREATE) {
                ev.class_name = s;
                ev.kind = (i % 2) ? PACER_PAGE_PAGE : PACER_PAGE_WINDOW;
            }
            if (t == PACER_EV_TOOLKIT)
                ev.class_name = s;
            if (t == PACER_EV_FIRST_FRAME)
                ev.source = s;
            if (t == PACER_EV_API_START || t == PACER_EV_API_END) {
                ev.url = s;
                ev.req = ids[3 - i];
            }
            if (t == PACER_EV_API_END)
                ev.status = statuses[(i + (size_t)t) % 5];
            static const char *const records[] = {
                "{\"type\":\"jank\",\"duration_ms\":812.5}", "{}",
                "{\"type\":\"net\",\"url\":\"a b\\\"c\",\"x\":[1,{\"y\":null}]}", "{\"type\":\"x\"}"};
            if (t == PACER_EV_RECORD) {
                ev.record = records[i];
                ev.record_len = strlen(records[i]);
            }

            int n = pacer_event_format(&ev, line, sizeof(line));
            assert_true(n > 0 && (size_t)n < sizeof(line));
            /* Parse without the newline and with it. */
            for (int nl = 0; nl < 2; nl++) {
                parsed p;
                parse_bytes(&p, line, (size_t)n - (nl ? 0 : 1));
                if (p.rc != 0)
                    fail_msg("round trip of %s failed: %s", line, p.err);
                assert_int_equal(p.ev.type, ev.type);
                assert_int_equal(p.ev.t_ns, ev.t_ns);
                assert_true(p.ev.page == ev.page);
                assert_true(same_str(p.ev.class_name, ev.class_name));
                assert_int_equal(p.ev.kind, ev.kind);
                assert_true(same_str(p.ev.url, ev.url));
                assert_true(same_str(p.ev.source, ev.source));
                assert_true(p.ev.req == ev.req);
                assert_int_equal(p.ev.status, ev.status);
                assert_int_equal(p.ev.record_len, ev.record_len);
                if (ev.record)
                    assert_memory_equal(p.ev.record, ev.record, ev.record_len);
                parsed_free(&p);
            }
        }
    }
}

/* A record event hands back its object without the whitespace outside
 * strings; the object must be one; page and start-up records are refused
 * by the model, not the reader. */
static void test_record_event(void **state)
{
    (void)state;
    pacer_event ev;
    parsed p;
    expect_ok("{\"t\": 5, \"ev\": \"record\", \"record\": { \"type\" : \"net\", \"url\": \"/a b\",\n"
              " \"x\": [ 1 , 2 ] }, \"page\": 3}",
              &ev, &p);
    assert_int_equal(ev.type, PACER_EV_RECORD);
    assert_int_equal(ev.t_ns, 5);
    assert_int_equal(ev.page, 0); /* not a member of this event */
    static const char want[] = "{\"type\":\"net\",\"url\":\"/a b\",\"x\":[1,2]}";
    assert_int_equal(ev.record_len, strlen(want));
    assert_memory_equal(ev.record, want, strlen(want));
    char line[256];
    int n = pacer_event_format(&ev, line, sizeof line);
    assert_string_equal(line, "{\"t\":5,\"ev\":\"record\",\"record\":{\"type\":\"net\",\"url\":\"/a b\",\"x\":[1,2]}}\n");
    assert_int_equal(n, (int)strlen(line));
    parsed_free(&p);

    expect_error("{\"t\":1,\"ev\":\"record\"}", "missing field \"record\" for event \"record\"");
    expect_error("{\"t\":1,\"ev\":\"record\",\"record\":[1]}",
                 "field \"record\" must be an object (a record of docs/records.md)");
    expect_error("{\"t\":1,\"ev\":\"record\",\"record\":\"{}\"}",
                 "field \"record\" must be an object (a record of docs/records.md)");
    expect_error("{\"t\":1,\"ev\":\"record\",\"record\":{\"a\":}}", "invalid JSON at column 36: expected a value, got '}'");

    pacer_event bad = {.type = PACER_EV_RECORD, .t_ns = 1};
    assert_int_equal(pacer_event_format(&bad, line, sizeof line), -EINVAL);
    bad.record = "[1]";
    bad.record_len = 3;
    assert_int_equal(pacer_event_format(&bad, line, sizeof line), -EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_event_names),
        cmocka_unit_test(test_parse_every_type),
        cmocka_unit_test(test_parse_whitespace_and_extras),
        cmocka_unit_test(test_parse_unknown_nested),
        cmocka_unit_test(test_parse_nesting_limit),
        cmocka_unit_test(test_parse_escapes),
        cmocka_unit_test(test_parse_syntax_errors),
        cmocka_unit_test(test_parse_field_errors),
        cmocka_unit_test(test_parse_number_limits),
        cmocka_unit_test(test_parse_not_nul_terminated),
        cmocka_unit_test(test_parse_arguments),
        cmocka_unit_test(test_format_canonical),
        cmocka_unit_test(test_format_escapes),
        cmocka_unit_test(test_format_invalid),
        cmocka_unit_test(test_format_buffer_too_small),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_record_event),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
