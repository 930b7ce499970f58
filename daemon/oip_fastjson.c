/*
 * arenaflowd OIP request headers: the tensor data taken out before the JSON parse.
 *
 * A JSON inference request is mostly numbers in the inputs' "data" arrays, and a JSON DOM of
 * them (one allocated value per number, each parsed through the locale dance of jansson's
 * strtod) costs several times the round of a small model. So before jansson parses the header,
 * one pass over the text finds every value of "data" in an object of the top-level "inputs"
 * array that is an array of only numbers, true/false, brackets, commas and white space, notes
 * its span and input index, and writes a copy of the text with each such span replaced by 0.
 * jansson parses the copy; the binder reads a noted span straight into the tensor
 * (af__oip_text_read, the same element rules and messages as af__oip_json_read).
 *
 * The pass only ever declines: inside strings (escapes followed) nothing matches; a span with
 * anything else (a string such as "nan", null, an object), a number that is not JSON's grammar,
 * more nesting than it tracks or more spans than it keeps, stays in the text for jansson, which
 * then decides (and reports malformed JSON as before). Keys are matched as raw text, so an
 * escaped key just takes the slow path. Pure function of its input: any thread.
 */
#include "daemon/oip_int.h"

#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 64

static int is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* The end of a JSON string starting at s[i] == '"', or 0 when it does not end. */
static size_t skip_string(const char *s, size_t n, size_t i)
{
    for (i++; i < n; i++) {
        if (s[i] == '\\')
            i++;
        else if (s[i] == '"')
            return i + 1;
    }
    return 0;
}

/* JSON's number grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? over s[i..end). */
static int is_number(const char *s, size_t i, size_t end)
{
    if (i < end && s[i] == '-')
        i++;
    if (i >= end || s[i] < '0' || s[i] > '9')
        return 0;
    if (s[i] == '0')
        i++;
    else
        while (i < end && s[i] >= '0' && s[i] <= '9')
            i++;
    if (i < end && s[i] == '.') {
        if (++i >= end || s[i] < '0' || s[i] > '9')
            return 0;
        while (i < end && s[i] >= '0' && s[i] <= '9')
            i++;
    }
    if (i < end && (s[i] == 'e' || s[i] == 'E')) {
        if (++i < end && (s[i] == '+' || s[i] == '-'))
            i++;
        if (i >= end || s[i] < '0' || s[i] > '9')
            return 0;
        while (i < end && s[i] >= '0' && s[i] <= '9')
            i++;
    }
    return i == end;
}

/* The end of an array at s[i] == '[' made only of numbers, true/false, brackets, commas and
 * white space, checked as JSON (jansson never sees the span): tokens by their grammar, brackets
 * balanced, a value after every '[' or ',' and none after a value; 0 when it is not such an
 * array. */
static size_t data_span(const char *s, size_t n, size_t i)
{
    int depth = 0, want_value = 1, opened = 0;
    for (; i < n; i++) {
        char c = s[i];
        if (is_ws(c))
            continue;
        if (c == '[') {
            if (!want_value || ++depth > MAX_DEPTH)
                return 0;
            opened = 1; /* a value or ']' follows */
            continue;
        }
        int was_opened = opened;
        opened = 0;
        if (c == ']') {
            if (want_value && !was_opened)
                return 0; /* "[1,]", "[1, ]" */
            want_value = 0;
            if (--depth == 0)
                return i + 1;
            continue;
        }
        if (c == ',') {
            if (want_value)
                return 0;
            want_value = 1;
            continue;
        }
        if (!want_value)
            return 0;
        size_t k = i;
        while (k < n && !is_ws(s[k]) && s[k] != ',' && s[k] != ']' && s[k] != '[')
            k++;
        if (!((k - i == 4 && !memcmp(s + i, "true", 4)) ||
              (k - i == 5 && !memcmp(s + i, "false", 5)) || is_number(s, i, k)))
            return 0;
        want_value = 0;
        i = k - 1;
    }
    return 0;
}

static int key_is(const char *s, size_t at, size_t end, const char *key)
{
    size_t l = strlen(key);
    return end - at == l + 2 && memcmp(s + at + 1, key, l) == 0;
}

int af__oip_fast_split(const char *s, size_t n, char **out, size_t *out_n, af__span_t *spans,
                       int max, int *n_spans)
{
    char stack[MAX_DEPTH];
    int depth = 0, in_inputs = 0, after_key = 0;
    size_t key_at = 0, key_end = 0, last = 0, w = 0;
    long input = -1;
    char *t = NULL;
    *n_spans = 0;
    *out = NULL;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '"') {
            size_t e = skip_string(s, n, i);
            if (!e)
                break;
            if (depth > 0 && stack[depth - 1] == '{' && !after_key)
                key_at = i, key_end = e; /* an object's key; its ':' follows */
            i = e - 1;
            continue;
        }
        if (c == ':') {
            after_key = 1;
            continue;
        }
        int value_of = after_key && !is_ws(c);
        int data_key = value_of && depth == 3 && in_inputs && key_is(s, key_at, key_end, "data");
        if (value_of)
            after_key = 0;
        if (data_key && c == '[' && *n_spans < max) {
            size_t e = data_span(s, n, i);
            if (e) {
                if (!t && !(t = malloc(n + 1)))
                    return -1;
                memcpy(t + w, s + last, i - last); /* the text up to the span, then "0" */
                w += i - last;
                t[w++] = '0';
                last = e;
                spans[(*n_spans)++] = (af__span_t){input, i, e};
                i = e - 1;
                continue;
            }
        }
        if (c == '{' || c == '[') {
            if (depth == MAX_DEPTH)
                break;
            if (c == '[' && value_of && depth == 1 && key_is(s, key_at, key_end, "inputs"))
                in_inputs = 1;
            if (c == '{' && depth == 2 && in_inputs)
                input++;
            stack[depth++] = c;
        } else if (c == '}' || c == ']') {
            if (depth > 0 && --depth == 1)
                in_inputs = 0;
        } else if (c == ',') {
            after_key = 0;
        }
    }
    if (!t)
        return 0;
    memcpy(t + w, s + last, n - last);
    w += n - last;
    t[w] = 0;
    *out = t;
    *out_n = w;
    return 0;
}
