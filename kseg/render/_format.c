/* Record lines of a whole batch at once, as UTF-8 bytes: the C twin of kseg/render/lines.py.
 *
 * Formatting is >95% of a dump when done per record in Python; here one call per batch
 * walks the Record tuples and writes every line into one buffer. The tests hold the
 * output byte-identical to lines.py on fixtures, real files and generated records.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "../_crc32.h"
#include "../_sequence.h"
#include "../log/_spans.h"

enum { M_NONE = 0, M_UTF8 = 1, M_HEX = 2, M_BASE64 = 3, M_JAVA = 4 };
enum { R_OFFSET = 0, R_TIMESTAMP, R_KEY, R_VALUE, R_HEADERS, R_STORED_TS, R_ATTRIBUTES, R_MAGIC, R_CRC };
#define TEXT_WIDTH 60
#define ISO_MAX_MS 253402300799999LL

/* ------------------------------------------------------------------ output buffer */

/* The output is built in a bytes object, resized as it grows and at the end (no final copy). */
typedef struct {
    PyObject *obj;
    char *p;
    Py_ssize_t n, cap;
} Buf;

static __attribute__((noinline)) int grow_slow(Buf *b, Py_ssize_t extra);

static inline int grow(Buf *b, Py_ssize_t extra) {
    return b->n + extra <= b->cap ? 0 : grow_slow(b, extra);
}

static __attribute__((noinline)) int grow_slow(Buf *b, Py_ssize_t extra) {
    if (b->n + extra <= b->cap) return 0;
    Py_ssize_t cap = b->cap ? b->cap : 1 << 14;
    while (cap < b->n + extra) cap *= 2;
    if (!b->obj) {
        b->obj = PyBytes_FromStringAndSize(NULL, cap);
        if (!b->obj) return -1;
    } else if (_PyBytes_Resize(&b->obj, cap) < 0) {
        return -1; /* b->obj is gone */
    }
    b->p = PyBytes_AS_STRING(b->obj);
    b->cap = cap;
    return 0;
}

#define CHECK(x) do { if ((x) < 0) return -1; } while (0)

static inline __attribute__((always_inline)) int put(Buf *b, const char *s, Py_ssize_t k) {
    if (b->n + k > b->cap) CHECK(grow(b, k));
    memcpy(b->p + b->n, s, (size_t)k);
    b->n += k;
    return 0;
}
#define PUTS(b, lit) put((b), (lit), (Py_ssize_t)(sizeof(lit) - 1))

/* "00" .. "99": numbers become text two digits per division (offsets and timestamps are 7-13 digits). */
static const char DIGIT_PAIRS[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

static inline int decimal_length(unsigned long long u) {
    int n = 1;
    for (;;) {
        if (u < 10) return n;
        if (u < 100) return n + 1;
        if (u < 1000) return n + 2;
        if (u < 10000) return n + 3;
        u /= 10000;
        n += 4;
    }
}

/* v in decimal at o, which has room for 20 bytes; returns the length. */
static inline int write_i64(char *o, long long v) {
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    int sign = v < 0, len = sign + decimal_length(u);
    char *end = o + len;
    while (u >= 100) {
        unsigned r = (unsigned)(u % 100);
        u /= 100;
        end -= 2;
        memcpy(end, DIGIT_PAIRS + 2 * r, 2);
    }
    if (u >= 10) {
        end -= 2;
        memcpy(end, DIGIT_PAIRS + 2 * u, 2);
    } else {
        *--end = (char)('0' + u);
    }
    if (sign) o[0] = '-';
    return len;
}

static inline int put_i64(Buf *b, long long v) {
    CHECK(grow(b, 20));
    b->n += write_i64(b->p + b->n, v);
    return 0;
}

static int put_padded(Buf *b, long long v, int width) { /* right-aligned, as f"{v:>{width}}" */
    CHECK(grow(b, 20 + (width > 0 ? width : 0)));
    char tmp[20];
    int len = write_i64(tmp, v);
    for (; len < width; width--) b->p[b->n++] = ' ';
    memcpy(b->p + b->n, tmp, (size_t)len);
    b->n += len;
    return 0;
}

static const char HEXD[] = "0123456789abcdef";

static int put_hex(Buf *b, const unsigned char *s, Py_ssize_t n) {
    CHECK(grow(b, 2 * n));
    char *o = b->p + b->n;
    for (Py_ssize_t i = 0; i < n; i++) {
        *o++ = HEXD[s[i] >> 4];
        *o++ = HEXD[s[i] & 15];
    }
    b->n += 2 * n;
    return 0;
}

static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static int put_b64(Buf *b, const unsigned char *s, Py_ssize_t n) {
    CHECK(grow(b, (n + 2) / 3 * 4));
    char *o = b->p + b->n;
    Py_ssize_t i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t v = ((uint32_t)s[i] << 16) | ((uint32_t)s[i + 1] << 8) | s[i + 2];
        *o++ = B64[v >> 18];
        *o++ = B64[(v >> 12) & 63];
        *o++ = B64[(v >> 6) & 63];
        *o++ = B64[v & 63];
    }
    if (n - i == 1) {
        uint32_t v = (uint32_t)s[i] << 16;
        *o++ = B64[v >> 18];
        *o++ = B64[(v >> 12) & 63];
        *o++ = '=';
        *o++ = '=';
    } else if (n - i == 2) {
        uint32_t v = ((uint32_t)s[i] << 16) | ((uint32_t)s[i + 1] << 8);
        *o++ = B64[v >> 18];
        *o++ = B64[(v >> 12) & 63];
        *o++ = B64[(v >> 6) & 63];
        *o++ = '=';
    }
    b->n = o - b->p;
    return 0;
}

/* ------------------------------------------------------------------ UTF-8 */

/* Length of the valid (strict: no overlongs, surrogates or > U+10FFFF) sequence at s, or 0. */
static inline int utf8_seq(const unsigned char *s, Py_ssize_t n) {
    unsigned c = s[0];
    if (c < 0x80) return 1;
    if (c < 0xC2) return 0;
    if (c < 0xE0) return (n >= 2 && (s[1] & 0xC0) == 0x80) ? 2 : 0;
    if (c < 0xF0) {
        if (n < 3) return 0;
        unsigned c1 = s[1];
        if (c == 0xE0 && c1 < 0xA0) return 0;
        if (c == 0xED && c1 > 0x9F) return 0;
        if ((c1 & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80) return 0;
        return 3;
    }
    if (c < 0xF5) {
        if (n < 4) return 0;
        unsigned c1 = s[1];
        if (c == 0xF0 && c1 < 0x90) return 0;
        if (c == 0xF4 && c1 > 0x8F) return 0;
        if ((c1 & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80 || (s[3] & 0xC0) != 0x80) return 0;
        return 4;
    }
    return 0;
}

/* The characters that move or hide text (kseg.printable.HIDING): ALM, zero-width characters and
 * LRM/RLM, line and paragraph separators, bidi embeddings and overrides, isolates, the BOM. */
static inline int hides_text(unsigned cp) {
    return cp == 0x061C || (cp >= 0x200B && cp <= 0x200F) || (cp >= 0x2028 && cp <= 0x202E) ||
           (cp >= 0x2060 && cp <= 0x2069) || cp == 0xFEFF;
}

/* The code point of the valid UTF-8 sequence of ``len`` (2 or 3) bytes at s; 0 for 4 bytes (none hides text). */
static inline unsigned utf8_cp(const unsigned char *s, int len) {
    if (len == 2) return ((s[0] & 0x1Fu) << 6) | (s[1] & 0x3Fu);
    if (len == 3) return ((s[0] & 0x0Fu) << 12) | ((s[1] & 0x3Fu) << 6) | (s[2] & 0x3Fu);
    return 0;
}

/* Bytes that stand for themselves in a JSON string (printable ASCII but '"', '\\' and DEL). */
static unsigned char JSON_PLAIN[256];

/* Bytes that stand for themselves in the text format (printable ASCII but '"' and '\\'). */
static unsigned char TEXT_PLAIN[256];

static void tables_init(void) {
    for (int c = 0x20; c < 0x7F; c++) JSON_PLAIN[c] = c != '"' && c != '\\';
    for (int c = 0x20; c < 0x7F; c++) TEXT_PLAIN[c] = c != '"' && c != '\\';
}

/* Byte tests eight at a time (Hacker's Delight 6-1, "hasless"): exact as to whether any byte matches. */
#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL
#define ANY_BELOW(w, n) ((((w) - (n) * ONES) & ~(w) & HIGHS) != 0)

/* Whether the eight bytes at s stand for themselves in a JSON string (as JSON_PLAIN says of each). */
static inline int json_plain8(const unsigned char *s) {
    uint64_t w;
    memcpy(&w, s, 8);
    return !(w & HIGHS) && !ANY_BELOW(w, 0x20) && !ANY_BELOW(w ^ (0x7F * ONES), 1) &&
           !ANY_BELOW(w ^ ('"' * ONES), 1) && !ANY_BELOW(w ^ ('\\' * ONES), 1);
}

/* Whether the eight bytes at s stand for themselves in the text format (as TEXT_PLAIN says of each). */
static inline int text_plain8(const unsigned char *s) {
    uint64_t w;
    memcpy(&w, s, 8);
    return !(w & HIGHS) && !ANY_BELOW(w, 0x20) && !ANY_BELOW(w ^ (0x7F * ONES), 1) &&
           !ANY_BELOW(w ^ ('"' * ONES), 1) && !ANY_BELOW(w ^ ('\\' * ONES), 1);
}

/* A JSON string body as Python's json.dumps(ensure_ascii=False) writes it; -2 if not valid UTF-8. */
static int put_json_utf8(Buf *b, const unsigned char *s, Py_ssize_t n) {
    CHECK(grow(b, 6 * n + 2));
    char *o = b->p + b->n;
    Py_ssize_t i = 0;
    while (i < n) {
        unsigned c;
        for (; i + 8 <= n && json_plain8(s + i); i += 8, o += 8) memcpy(o, s + i, 8);
        while (i < n && JSON_PLAIN[c = s[i]]) {
            *o++ = (char)c;
            i++;
        }
        if (i >= n) break;
        if (c < 0x80) {
            *o++ = '\\';
            switch (c) {
                case '"': *o++ = '"'; break;
                case '\\': *o++ = '\\'; break;
                case '\n': *o++ = 'n'; break;
                case '\r': *o++ = 'r'; break;
                case '\t': *o++ = 't'; break;
                case '\b': *o++ = 'b'; break;
                case '\f': *o++ = 'f'; break;
                default:
                    *o++ = 'u'; *o++ = '0'; *o++ = '0';
                    *o++ = HEXD[c >> 4]; *o++ = HEXD[c & 15];
            }
            i++;
            continue;
        }
        int k = utf8_seq(s + i, n - i);
        if (!k) return -2;
        unsigned cp = utf8_cp(s + i, k);
        if ((cp >= 0x80 && cp < 0xA0) || hides_text(cp)) { /* JSON leaves them raw: kseg.printable.json_safe */
            *o++ = '\\'; *o++ = 'u';
            *o++ = HEXD[(cp >> 12) & 15]; *o++ = HEXD[(cp >> 8) & 15];
            *o++ = HEXD[(cp >> 4) & 15]; *o++ = HEXD[cp & 15];
        } else {
            for (int j = 0; j < k; j++) *o++ = (char)s[i + j];
        }
        i += k;
    }
    b->n = o - b->p;
    return 0;
}

/* Bytes as one line of text (lines.text_escape). With limit >= 0, a text longer than `limit`
 * characters is cut to limit - 1 of them and "…" (returns 1); else returns 0. Escapes are
 * ASCII, so each of their characters is one byte; a UTF-8 sequence is one character. */
static int put_text_escaped(Buf *b, const unsigned char *s, Py_ssize_t n, Py_ssize_t limit) {
    Py_ssize_t chars = 0, mark = -1;
    CHECK(grow(b, n));
    for (Py_ssize_t i = 0; i < n;) {
        if (i + 8 <= n && (limit < 0 || chars + 8 < limit - 1) && text_plain8(s + i)) {
            CHECK(put(b, (const char *)s + i, 8)); /* eight that need no escape and no cut */
            chars += 8;
            i += 8;
            continue;
        }
        char esc[8];
        const char *out = esc;
        int k, width;
        unsigned c = s[i];
        int len = TEXT_PLAIN[c] ? 1 : utf8_seq(s + i, n - i);
        if (TEXT_PLAIN[c]) {
            out = (const char *)s + i;
            k = width = 1;
        } else if (len == 0) { /* not UTF-8: \xNN */
            esc[0] = '\\'; esc[1] = 'x'; esc[2] = HEXD[c >> 4]; esc[3] = HEXD[c & 15];
            k = width = 4; len = 1;
        } else if (len == 1) {
            k = width = 2;
            esc[0] = '\\';
            switch (c) {
                case '\\': esc[1] = '\\'; break;
                case '"': esc[1] = '"'; break;
                case '\n': esc[1] = 'n'; break;
                case '\r': esc[1] = 'r'; break;
                case '\t': esc[1] = 't'; break;
                default:
                    if (c < 0x20 || c == 0x7F) {
                        esc[1] = 'x'; esc[2] = HEXD[c >> 4]; esc[3] = HEXD[c & 15];
                        k = width = 4;
                    } else {
                        out = (const char *)s + i; k = width = 1;
                    }
            }
        } else {
            unsigned cp = utf8_cp(s + i, len);
            if ((cp >= 0x80 && cp < 0xA0) || hides_text(cp)) {
                esc[0] = '\\'; esc[1] = 'u';
                esc[2] = HEXD[(cp >> 12) & 15]; esc[3] = HEXD[(cp >> 8) & 15];
                esc[4] = HEXD[(cp >> 4) & 15]; esc[5] = HEXD[cp & 15];
                k = width = 6;
            } else {
                out = (const char *)s + i; k = len; width = 1;
            }
        }
        if (limit >= 0) {
            if (chars < limit - 1 && chars + width >= limit - 1)
                mark = b->n + (width == 1 ? k : limit - 1 - chars);
            if (chars + width > limit) {
                if (mark < 0) mark = b->n; /* limit 0: nothing kept */
                if (mark > b->n) CHECK(put(b, out, k)); /* the cut falls inside this escape */
                b->n = mark;
                CHECK(PUTS(b, "\xe2\x80\xa6")); /* … */
                return 1;
            }
        }
        if (k == 1) {
            CHECK(grow(b, 1));
            b->p[b->n++] = *out;
        } else {
            CHECK(put(b, out, k));
        }
        chars += width;
        i += len;
    }
    return 0;
}

/* Input bytes per room check in the writers below: their output is reserved a block at a time,
 * for the worst case, so the loops over the bytes have no check of their own. */
#define UTF8_BLOCK ((Py_ssize_t)1 << 16)

/* What put_backslashreplace writes for a byte that is a whole unit on its own, by the byte: ASCII
 * as itself, a byte that can start no sequence (a continuation byte, C0, C1, F5..FF) as \xNN;
 * 4 bytes written, ESCAPED_ONE_LEN of them kept; length 0 for a lead byte, which needs the bytes
 * after it. Binary payloads are mostly such bytes: a table instead of branches the CPU cannot
 * predict. */
static unsigned char ESCAPED_ONE[256][4], ESCAPED_ONE_LEN[256];

/* Java's new String(bytes, UTF_8), written back as UTF-8, as a state machine over the bytes:
 * one table lookup a byte and no branch on the data, since binary payloads (the common case)
 * have a lead byte every few bytes at random. A state is how far into a sequence the bytes
 * read so far go, and how many of them are pending: written already as themselves, taken back
 * if the sequence fails. The JVM's rule (Unicode's maximal invalid subpart, D93b, but an
 * encoded surrogate ED A0..BF is one unit with the continuation byte after it, if any) is
 * exactly "a failed sequence is one U+FFFD for its pending bytes, and the byte that failed it
 * starts afresh". Its Python twin is kseg.decoders.jvm.java_utf8; tests/test_jvm_utf8.py holds
 * both to the JVM. */
enum {
    J_START,
    J_LAST1, J_LAST2, J_LAST3, /* one continuation byte ends it; 1, 2 or 3 bytes pending */
    J_E0, J_E1, J_ED,          /* after a three-byte lead: E0; E1..EC or EE..EF; ED */
    J_SURROGATE,               /* after ED A0..BF: a continuation makes one malformed unit of 3 */
    J_F0, J_F1, J_F4,          /* after a four-byte lead: F0, F1..F3, F4 */
    J_NEXT2,                   /* a four-byte sequence's third byte; 2 pending */
    J_STATES
};
static const unsigned char J_PENDING[J_STATES] = {0, 1, 2, 3, 1, 1, 1, 2, 1, 1, 1, 2};

/* An entry: the bytes to write (up to 6) in [0..5], in [6] how many of them (bits 0-2) and how
 * many pending bytes to take back first (bits 3-4), in [7] the next state. Written 8 bytes at
 * a time; what is past the kept ones is overwritten by what follows. */
static unsigned char JAVA_STEP[J_STATES][256][8];

static void java_put_entry(unsigned char *e, const char *bytes, int len, int back, int next) {
    memcpy(e, bytes, (size_t)len);
    e[6] = (unsigned char)(len | back << 3);
    e[7] = (unsigned char)next;
}

static void utf8_tables_init(void) {
    static const char FFFD[] = "\xEF\xBF\xBD";
    for (int c = 0; c < 256; c++) {
        if (c < 0x80) {
            ESCAPED_ONE[c][0] = (unsigned char)c;
            ESCAPED_ONE_LEN[c] = 1;
        } else if (c >= 0xC2 && c <= 0xF4) {
            ESCAPED_ONE_LEN[c] = 0;
        } else {
            ESCAPED_ONE[c][0] = '\\';
            ESCAPED_ONE[c][1] = 'x';
            ESCAPED_ONE[c][2] = (unsigned char)HEXD[c >> 4];
            ESCAPED_ONE[c][3] = (unsigned char)HEXD[c & 15];
            ESCAPED_ONE_LEN[c] = 4;
        }
    }
    /* From the start: ASCII as itself; a lead byte as itself, pending; any other byte U+FFFD. */
    for (int c = 0; c < 256; c++) {
        char self = (char)c;
        int next = c < 0x80 ? J_START : c < 0xC2 ? -1 : c < 0xE0 ? J_LAST1 : c == 0xE0 ? J_E0
            : c == 0xED ? J_ED : c < 0xF0 ? J_E1 : c == 0xF0 ? J_F0 : c < 0xF4 ? J_F1 : c == 0xF4 ? J_F4 : -1;
        if (next < 0) java_put_entry(JAVA_STEP[J_START][c], FFFD, 3, 0, J_START);
        else java_put_entry(JAVA_STEP[J_START][c], &self, 1, 0, next);
    }
    /* Within a sequence: a byte in the state's range goes on (pending, or the sequence complete);
     * any other fails the sequence: U+FFFD for what is pending, then the byte as from the start. */
    static const struct { unsigned char lo, hi, next; } GOES_ON[J_STATES] = {
        [J_LAST1] = {0x80, 0xBF, J_START}, [J_LAST2] = {0x80, 0xBF, J_START}, [J_LAST3] = {0x80, 0xBF, J_START},
        [J_E0] = {0xA0, 0xBF, J_LAST2}, [J_E1] = {0x80, 0xBF, J_LAST2}, [J_ED] = {0x80, 0x9F, J_LAST2},
        [J_SURROGATE] = {0x80, 0xBF, J_START},
        [J_F0] = {0x90, 0xBF, J_NEXT2}, [J_F1] = {0x80, 0xBF, J_NEXT2}, [J_F4] = {0x80, 0x8F, J_NEXT2},
        [J_NEXT2] = {0x80, 0xBF, J_LAST3},
    };
    for (int st = J_START + 1; st < J_STATES; st++) {
        for (int c = 0; c < 256; c++) {
            unsigned char *e = JAVA_STEP[st][c];
            char self = (char)c;
            if (c >= GOES_ON[st].lo && c <= GOES_ON[st].hi) {
                if (st == J_SURROGATE) java_put_entry(e, FFFD, 3, J_PENDING[st], J_START);
                else java_put_entry(e, &self, 1, 0, GOES_ON[st].next);
            } else if (st == J_ED && c >= 0xA0 && c <= 0xBF) {
                java_put_entry(e, &self, 1, 0, J_SURROGATE);
            } else {
                const unsigned char *fresh = JAVA_STEP[J_START][c];
                char both[6];
                memcpy(both, FFFD, 3);
                memcpy(both + 3, fresh, fresh[6] & 7);
                java_put_entry(e, both, 3 + (fresh[6] & 7), J_PENDING[st], fresh[7]);
            }
        }
    }
}

/* How many bytes of a word loaded from memory come before its first with the high bit set
 * (`high`: the word & HIGHS, not 0). */
static inline Py_ssize_t ascii_prefix(uint64_t high) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ && (defined(__GNUC__) || defined(__clang__))
    return __builtin_ctzll(high) >> 3;
#else
    unsigned char bytes[8];
    memcpy(bytes, &high, 8);
    Py_ssize_t k = 0;
    while (!bytes[k]) k++;
    return k;
#endif
}

/* Copies the ASCII bytes from s[*at] on, eight at a time, up to the first byte above 0x7F or to
 * where fewer than eight are left (the caller takes those); advances *at; returns the new end
 * of the output. Writes up to 8 bytes past what it keeps. */
static inline char *copy_ascii(const unsigned char *s, Py_ssize_t *at, Py_ssize_t end, char *o) {
    Py_ssize_t i = *at;
    uint64_t w;
    for (; i + 8 <= end; i += 8, o += 8) {
        memcpy(&w, s + i, 8);
        if (w & HIGHS) break;
        memcpy(o, &w, 8);
    }
    if (i + 8 <= end) { /* the eight with a byte above 0x7F: copied whole, kept up to it */
        memcpy(o, &w, 8);
        Py_ssize_t ascii = ascii_prefix(w & HIGHS);
        o += ascii;
        i += ascii;
    }
    *at = i;
    return o;
}

/* kafka lines: valid UTF-8 as is, other bytes \xNN (Python's "backslashreplace"). */
static int put_backslashreplace(Buf *b, const unsigned char *s, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n;) {
        Py_ssize_t end = n - i > UTF8_BLOCK ? i + UTF8_BLOCK : n;
        /* \xNN a byte at most; a sequence that starts in the block may end up to 3 bytes past
         * it (copied as is); a table entry is written whole (4 bytes) whatever of it is kept. */
        CHECK(grow(b, (end - i) * 4 + 4));
        char *o = b->p + b->n;
        while (i < end) {
            o = copy_ascii(s, &i, end, o);
            if (i >= end) break;
            unsigned c = s[i];
            unsigned k = ESCAPED_ONE_LEN[c];
            while (k) { /* bytes that are units on their own, one after another (binary data) */
                memcpy(o, ESCAPED_ONE[c], 4);
                o += k;
                if (++i >= end) break;
                c = s[i];
                k = ESCAPED_ONE_LEN[c];
            }
            if (k || i >= end) continue; /* (the block ended) */
            int len = utf8_seq(s + i, n - i);
            if (len) {
                for (int j = 0; j < len; j++) o[j] = (char)s[i + j];
                o += len;
                i += len;
            } else {
                o[0] = '\\';
                o[1] = 'x';
                o[2] = HEXD[c >> 4];
                o[3] = HEXD[c & 15];
                o += 4;
                i++;
            }
        }
        b->n = o - b->p;
    }
    return 0;
}

static int is_utf8(const unsigned char *s, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n;) {
        if (i + 8 <= n) {
            uint64_t w;
            memcpy(&w, s + i, 8);
            if (!(w & 0x8080808080808080ULL)) {
                i += 8;
                continue;
            }
        }
        if (s[i] < 0x80) {
            i++;
            continue;
        }
        int len = utf8_seq(s + i, n - i);
        if (!len) return 0;
        i += len;
    }
    return 1;
}

/* Bytes the state machine takes before put_java looks for ASCII again: enough for a sequence
 * (text goes back to eight bytes at a time soon after one), few enough that binary data spends
 * its time in the machine (measured: 2 to 6 alike on random bytes, 8 slower on accented text). */
#define J_RUN 4

/* Java's new String(bytes, UTF_8) written as UTF-8 (JAVA_STEP), all in C whatever the bytes;
 * ASCII eight bytes at a time between sequences. */
static int put_java(Buf *b, const char *text, Py_ssize_t n) {
    const unsigned char *s = (const unsigned char *)text;
    int state = J_START;
    for (Py_ssize_t i = 0; i < n;) {
        Py_ssize_t end = n - i > UTF8_BLOCK ? i + UTF8_BLOCK : n;
        /* Three bytes a byte at most, counting a failed unit's U+FFFD against its pending bytes;
         * one unit may have started in the block before (its U+FFFD, then the byte's own), and
         * an entry is written 8 bytes whole. */
        CHECK(grow(b, (end - i) * 3 + 16));
        char *o = b->p + b->n;
        while (i < end) {
            if (state == J_START) o = copy_ascii(s, &i, end, o);
            for (Py_ssize_t stop = end - i > J_RUN ? i + J_RUN : end; i < stop; i++) {
                const unsigned char *e = JAVA_STEP[state][s[i]];
                o -= e[6] >> 3;
                memcpy(o, e, 8);
                o += e[6] & 7;
                state = e[7];
            }
        }
        b->n = o - b->p;
    }
    if (state != J_START) { /* the value ended inside a sequence: one U+FFFD for what is pending */
        b->n -= J_PENDING[state];
        CHECK(put(b, "\xEF\xBF\xBD", 3));
    }
    return 0;
}

static PyObject *finish(Buf *b, int rc);

/* java_utf8(bytes) -> bytes: put_java on its own, so that tests hold it to the Python twin. */
static PyObject *java_utf8(PyObject *self, PyObject *arg) {
    Py_buffer v;
    if (PyObject_GetBuffer(arg, &v, PyBUF_SIMPLE) < 0) return NULL;
    Buf b = {0};
    int rc = put_java(&b, v.buf, v.len);
    PyBuffer_Release(&v);
    return finish(&b, rc);
}

/* ------------------------------------------------------------------ field access */

typedef struct {
    const char *p;
    Py_ssize_t n;
    Py_buffer view;
    int has_view;
} Bytes;

/* bytes (or any buffer) -> pointer and length; returns 1 for None, 0 for data, -1 on error */
static int get_bytes(PyObject *o, Bytes *out) {
    out->has_view = 0;
    if (o == Py_None) return 1;
    if (PyBytes_Check(o)) {
        out->p = PyBytes_AS_STRING(o);
        out->n = PyBytes_GET_SIZE(o);
        return 0;
    }
    if (PyObject_GetBuffer(o, &out->view, PyBUF_SIMPLE) < 0) return -1;
    out->has_view = 1;
    out->p = out->view.buf;
    out->n = out->view.len;
    return 0;
}

static void release(Bytes *b) {
    if (b->has_view) PyBuffer_Release(&b->view);
    b->has_view = 0;
}

static int get_i64(PyObject *o, long long *v) {
    int overflow = 0; /* AndOverflow: a digit loop, where PyLong_AsLongLong goes through a byte array */
    *v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow) {
        PyErr_SetString(PyExc_OverflowError, "an offset, timestamp or CRC past 64 bits");
        return -1;
    }
    if (*v == -1 && PyErr_Occurred()) return -1;
    return 0;
}

/* A header key's bytes: its UTF-8, or (non-UTF-8 bytes kept as surrogates) surrogateescape.
 * *tmp holds a new reference to free when the second was needed. 1: valid UTF-8, 0: not. */
static int header_key_bytes(PyObject *key, const char **p, Py_ssize_t *n, PyObject **tmp) {
    *tmp = NULL;
    *p = PyUnicode_AsUTF8AndSize(key, n);
    if (*p) return 1;
    PyErr_Clear();
    *tmp = PyUnicode_AsEncodedString(key, "utf-8", "surrogateescape");
    if (!*tmp) return -1;
    *p = PyBytes_AS_STRING(*tmp);
    *n = PyBytes_GET_SIZE(*tmp);
    return 0;
}

static PyObject *finish(Buf *b, int rc) {
    if (rc < 0) {
        Py_XDECREF(b->obj);
        return NULL;
    }
    if (!b->obj) return PyBytes_FromStringAndSize("", 0);
    if (_PyBytes_Resize(&b->obj, b->n) < 0) return NULL;
    return b->obj;
}

static int record_check(PyObject *r) {
    if (!PyTuple_Check(r) || PyTuple_GET_SIZE(r) < 9) {
        PyErr_SetString(PyExc_TypeError, "records must be kseg Record tuples");
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------ records */

/* CRC-32 of v0/v1 messages: kseg/_crc32.h */
static uint32_t crc_update(uint32_t crc, const unsigned char *s, Py_ssize_t n) {
    return crc32_update(crc, s, (size_t)n);
}

static uint32_t crc_be(uint32_t crc, uint64_t v, int bytes) {
    unsigned char t[8];
    for (int i = 0; i < bytes; i++) t[i] = (unsigned char)(v >> (8 * (bytes - 1 - i)));
    return crc_update(crc, t, bytes);
}

/* The CRC-32 a legacy message with these fields carries (kseg.log.encode.legacy_message_crc). */
static int legacy_crc(PyObject *r, Bytes *k, int knone, Bytes *v, int vnone, uint32_t *out) {
    long long magic, attrs, ts;
    CHECK(get_i64(PyTuple_GET_ITEM(r, R_MAGIC), &magic));
    CHECK(get_i64(PyTuple_GET_ITEM(r, R_ATTRIBUTES), &attrs));
    CHECK(get_i64(PyTuple_GET_ITEM(r, R_STORED_TS), &ts));
    if (magic != 0 && magic != 1) magic = 1;
    uint32_t c = 0xFFFFFFFFu;
    unsigned char head[2] = {(unsigned char)magic, (unsigned char)(attrs & 0xFF)};
    c = crc_update(c, head, 2);
    if (magic == 1) c = crc_be(c, (uint64_t)ts, 8);
    c = crc_be(c, knone ? 0xFFFFFFFFu : (uint32_t)k->n, 4);
    if (!knone) c = crc_update(c, (const unsigned char *)k->p, k->n);
    c = crc_be(c, vnone ? 0xFFFFFFFFu : (uint32_t)v->n, 4);
    if (!vnone) c = crc_update(c, (const unsigned char *)v->p, v->n);
    *out = c ^ 0xFFFFFFFFu;
    return 0;
}

/* One record as the writers see it: from a kseg Record tuple, or from spans over a batch's data
 * (kseg.log.records.batch_spans, kseg/log/_spans.h) with no Python object at all. */
typedef struct {
    long long off, t;
    Bytes k, v;
    int knone, vnone;
    PyObject *hs;                /* tuples: the headers sequence (a new reference) */
    const KsegHeaderSpan *hspan; /* spans: the record's headers, over data */
    Py_ssize_t nh;
    const char *data;
    int crc_none;                /* v0/v1 kafka lines: no stored CRC (a record built by hand) */
    long long stored;
    uint32_t computed;
} RView;

/* One header: its key's bytes (as stored), whether they are UTF-8 (-1: not looked at), its value. */
typedef struct {
    const char *kp;
    Py_ssize_t kn;
    int key_utf8;
    Bytes v;
    int vnone;
    PyObject *tmp;
} HView;

static void rview_release(RView *w) {
    Py_CLEAR(w->hs);
    if (w->knone >= 0) release(&w->k);
    if (w->vnone >= 0) release(&w->v);
}

/* ``legacy``: also the CRC a v0/v1 record's fields give (the kafka lines' isValid). */
static int rview_from_tuple(RView *w, PyObject *r, int legacy) {
    memset(w, 0, sizeof *w);
    w->knone = w->vnone = -1;
    CHECK(record_check(r));
    CHECK(get_i64(PyTuple_GET_ITEM(r, R_OFFSET), &w->off));
    CHECK(get_i64(PyTuple_GET_ITEM(r, R_TIMESTAMP), &w->t));
    w->knone = get_bytes(PyTuple_GET_ITEM(r, R_KEY), &w->k);
    if (w->knone < 0) return -1;
    w->vnone = get_bytes(PyTuple_GET_ITEM(r, R_VALUE), &w->v);
    if (w->vnone < 0) return -1;
    w->hs = PySequence_Fast(PyTuple_GET_ITEM(r, R_HEADERS), "headers must be a sequence");
    if (!w->hs) return -1;
    w->nh = PySequence_Fast_GET_SIZE(w->hs);
    if (legacy) {
        PyObject *crc = PyTuple_GET_ITEM(r, R_CRC);
        CHECK(legacy_crc(r, &w->k, w->knone, &w->v, w->vnone, &w->computed));
        w->crc_none = crc == Py_None;
        if (!w->crc_none) CHECK(get_i64(crc, &w->stored));
    }
    return 0;
}

static int out_of(int64_t at, int64_t len, Py_ssize_t size) {
    return at < 0 || len < -1 || at > size || (len > 0 && len > size - at);
}

static int rview_from_span(RView *w, const KsegRecordSpan *s, const char *data, Py_ssize_t size,
                           const KsegHeaderSpan *hs, Py_ssize_t nhs, int legacy) {
    memset(w, 0, sizeof *w);
    int bad = out_of(s->key_at, s->key_len, size) || out_of(s->value_at, s->value_len, size) ||
              s->first_header < 0 || s->header_count < 0 || s->first_header > nhs ||
              s->header_count > nhs - s->first_header ||
              (legacy && (s->message_at < 0 || s->message_at > s->message_end || s->message_end > size));
    for (int64_t j = s->first_header; !bad && j < s->first_header + s->header_count; j++)
        bad = out_of(hs[j].key_at, hs[j].key_len, size) || hs[j].key_len < 0 ||
              out_of(hs[j].value_at, hs[j].value_len, size);
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "spans outside the data");
        return -1;
    }
    w->off = s->offset;
    w->t = s->timestamp;
    w->knone = s->key_len < 0;
    w->k.p = data + s->key_at;
    w->k.n = w->knone ? 0 : (Py_ssize_t)s->key_len;
    w->vnone = s->value_len < 0;
    w->v.p = data + s->value_at;
    w->v.n = w->vnone ? 0 : (Py_ssize_t)s->value_len;
    w->data = data;
    w->hspan = hs + s->first_header;
    w->nh = (Py_ssize_t)s->header_count;
    if (legacy) {
        w->stored = s->stored_crc;
        w->computed = crc_update(0xFFFFFFFFu, (const unsigned char *)data + s->message_at,
                                 (Py_ssize_t)(s->message_end - s->message_at)) ^ 0xFFFFFFFFu;
    }
    return 0;
}

static int rview_header(RView *w, Py_ssize_t j, HView *h) {
    memset(h, 0, sizeof *h);
    h->key_utf8 = -1;
    if (w->hspan) {
        const KsegHeaderSpan *s = w->hspan + j;
        h->kp = w->data + s->key_at;
        h->kn = (Py_ssize_t)s->key_len;
        h->vnone = s->value_len < 0;
        h->v.p = w->data + s->value_at;
        h->v.n = h->vnone ? 0 : (Py_ssize_t)s->value_len;
        return 0;
    }
    PyObject *t = PySequence_Fast_GET_ITEM(w->hs, j);
    if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) < 2) {
        PyErr_SetString(PyExc_TypeError, "headers must be (key, value) tuples");
        return -1;
    }
    h->key_utf8 = header_key_bytes(PyTuple_GET_ITEM(t, 0), &h->kp, &h->kn, &h->tmp);
    if (h->key_utf8 < 0) return -1;
    h->vnone = get_bytes(PyTuple_GET_ITEM(t, 1), &h->v);
    return h->vnone < 0 ? -1 : 0;
}

static void hview_release(HView *h) {
    Py_CLEAR(h->tmp);
    if (h->vnone >= 0) release(&h->v);
}

/* Calls ``one`` for each record of a sequence of Record tuples, or of spans: the three writers
 * share this walk. ``legacy``: the records are v0/v1 ones and ``one`` needs their CRC. */
typedef int (*RecordWriter)(Buf *b, RView *w, void *ctx);

static int each_tuple(Buf *b, PyObject *records, int legacy, RecordWriter one, void *ctx) {
    PyObject *seq = PySequence_Fast(records, "records must be a sequence");
    if (!seq) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    int rc = grow(b, n * 400 + 256);
    for (Py_ssize_t i = 0; rc == 0 && i < n; i++) {
        RView w;
        rc = rview_from_tuple(&w, PySequence_Fast_GET_ITEM(seq, i), legacy);
        if (rc == 0) rc = one(b, &w, ctx);
        rview_release(&w);
    }
    Py_DECREF(seq);
    return rc;
}

static int each_span(Buf *b, Py_buffer *data, Py_buffer *rsp, Py_buffer *hsp, int legacy, RecordWriter one,
                     void *ctx) {
    if (rsp->len % (Py_ssize_t)sizeof(KsegRecordSpan) || hsp->len % (Py_ssize_t)sizeof(KsegHeaderSpan)) {
        PyErr_SetString(PyExc_ValueError, "spans of the wrong size");
        return -1;
    }
    Py_ssize_t n = rsp->len / (Py_ssize_t)sizeof(KsegRecordSpan);
    Py_ssize_t nhs = hsp->len / (Py_ssize_t)sizeof(KsegHeaderSpan);
    const KsegRecordSpan *rs = (const KsegRecordSpan *)rsp->buf;
    int rc = grow(b, n * 400 + 256);
    for (Py_ssize_t i = 0; rc == 0 && i < n; i++) {
        RView w;
        rc = rview_from_span(&w, rs + i, (const char *)data->buf, data->len, (const KsegHeaderSpan *)hsp->buf, nhs,
                             legacy);
        if (rc == 0) rc = one(b, &w, ctx);
    }
    return rc;
}

/* ------------------------------------------------------------------ jsonl */

static int json_field(Buf *b, const char *name, Py_ssize_t name_len, const Bytes *v, int none, int mode) {
    int rc = 0;
    CHECK(PUTS(b, "\""));
    CHECK(put(b, name, name_len));
    if (none || mode == M_NONE) return PUTS(b, "\": null");
    if (mode == M_UTF8) {
        Py_ssize_t mark = b->n;
        rc = PUTS(b, "\": \"");
        if (rc == 0) rc = put_json_utf8(b, (const unsigned char *)v->p, v->n);
        if (rc == -2) { /* not UTF-8: the exact bytes as name_b64 */
            b->n = mark;
            rc = PUTS(b, "_b64\": \"");
            if (rc == 0) rc = put_b64(b, (const unsigned char *)v->p, v->n);
        }
    } else {
        rc = PUTS(b, "\": \"");
        if (rc == 0) rc = mode == M_HEX ? put_hex(b, (const unsigned char *)v->p, v->n)
                                        : put_b64(b, (const unsigned char *)v->p, v->n);
    }
    if (rc < 0) return -1;
    return PUTS(b, "\"");
}

static int json_header_key(Buf *b, HView *h) {
    int ok = h->key_utf8 >= 0 ? h->key_utf8 : is_utf8((const unsigned char *)h->kp, h->kn);
    int rc;
    if (ok) {
        rc = PUTS(b, "\"key\": \"");
        if (rc == 0) rc = put_json_utf8(b, (const unsigned char *)h->kp, h->kn);
    } else {
        rc = PUTS(b, "\"key_b64\": \"");
        if (rc == 0) rc = put_b64(b, (const unsigned char *)h->kp, h->kn);
    }
    if (rc < 0) return -1;
    return PUTS(b, "\"");
}

typedef struct {
    const char *ts;
    Py_ssize_t tsn;
    char pos[24];
    Py_ssize_t posn;
    int kmode, vmode;
} JsonlCtx;

static int jsonl_one(Buf *b, RView *w, void *ctx) {
    JsonlCtx *c = ctx;
    CHECK(PUTS(b, "{\"type\": \"record\", \"offset\": "));
    CHECK(put_i64(b, w->off));
    CHECK(PUTS(b, ", \"timestamp\": "));
    CHECK(put_i64(b, w->t));
    CHECK(PUTS(b, ", \"timestamp_type\": \""));
    CHECK(put(b, c->ts, c->tsn));
    CHECK(PUTS(b, "\", "));
    CHECK(json_field(b, "key", 3, &w->k, w->knone, c->kmode));
    CHECK(PUTS(b, ", "));
    CHECK(json_field(b, "value", 5, &w->v, w->vnone, c->vmode));
    CHECK(PUTS(b, ", \"headers\": ["));
    for (Py_ssize_t j = 0; j < w->nh; j++) {
        HView h;
        int rc = rview_header(w, j, &h);
        if (rc == 0 && j) rc = PUTS(b, ", ");
        if (rc == 0) rc = PUTS(b, "{");
        if (rc == 0) rc = json_header_key(b, &h);
        if (rc == 0) rc = PUTS(b, ", ");
        if (rc == 0) rc = json_field(b, "value", 5, &h.v, h.vnone, c->vmode);
        if (rc == 0) rc = PUTS(b, "}");
        hview_release(&h);
        CHECK(rc);
    }
    CHECK(PUTS(b, "], \"batch_position\": "));
    CHECK(put(b, c->pos, c->posn));
    return PUTS(b, "}\n");
}

static void jsonl_ctx(JsonlCtx *c, long long position) {
    c->posn = (Py_ssize_t)snprintf(c->pos, sizeof c->pos, "%lld", position);
}

static PyObject *jsonl_records(PyObject *self, PyObject *args) {
    PyObject *records;
    long long position;
    JsonlCtx c;
    if (!PyArg_ParseTuple(args, "Os#Lii", &records, &c.ts, &c.tsn, &position, &c.kmode, &c.vmode)) return NULL;
    jsonl_ctx(&c, position);
    Buf b = {0};
    return finish(&b, each_tuple(&b, records, 0, jsonl_one, &c));
}

/* jsonl_spans(data, record_spans, header_spans, ts_name, position, kmode, vmode): jsonl_records from spans. */
static PyObject *jsonl_spans(PyObject *self, PyObject *args) {
    Py_buffer data, rsp, hsp;
    long long position;
    JsonlCtx c;
    if (!PyArg_ParseTuple(args, "y*y*y*s#Lii", &data, &rsp, &hsp, &c.ts, &c.tsn, &position, &c.kmode, &c.vmode))
        return NULL;
    jsonl_ctx(&c, position);
    Buf b = {0};
    int rc = each_span(&b, &data, &rsp, &hsp, 0, jsonl_one, &c);
    PyBuffer_Release(&data);
    PyBuffer_Release(&rsp);
    PyBuffer_Release(&hsp);
    return finish(&b, rc);
}

/* ------------------------------------------------------------------ text */

static long long iso_second = -1; /* the second whose text is in iso_text (a batch's records share it) */
static char iso_text[24];

static void put2(char *o, int v) {
    o[0] = (char)('0' + v / 10);
    o[1] = (char)('0' + v % 10);
}

static int put_iso(Buf *b, long long ms) { /* lines.iso_utc, padded to 24 */
    if (ms < 0 || ms > ISO_MAX_MS) return PUTS(b, "-                       ");
    long long secs = ms / 1000;
    if (secs != iso_second) {
        long long days = secs / 86400;
        int sod = (int)(secs % 86400);
        long long z = days + 719468;
        long long era = z / 146097;
        unsigned doe = (unsigned)(z - era * 146097);
        unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
        long long y = (long long)yoe + era * 400;
        unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        unsigned mp = (5 * doy + 2) / 153;
        unsigned d = doy - (153 * mp + 2) / 5 + 1;
        unsigned m = mp < 10 ? mp + 3 : mp - 9;
        if (m <= 2) y++;
        put2(iso_text, (int)(y / 100));
        put2(iso_text + 2, (int)(y % 100));
        iso_text[4] = '-';
        put2(iso_text + 5, (int)m);
        iso_text[7] = '-';
        put2(iso_text + 8, (int)d);
        iso_text[10] = 'T';
        put2(iso_text + 11, sod / 3600);
        iso_text[13] = ':';
        put2(iso_text + 14, sod / 60 % 60);
        iso_text[16] = ':';
        put2(iso_text + 17, sod % 60);
        iso_text[19] = '.';
        iso_text[23] = 'Z';
        iso_second = secs;
    }
    int msec = (int)(ms % 1000);
    iso_text[20] = (char)('0' + msec / 100);
    put2(iso_text + 21, msec % 100);
    return put(b, iso_text, 24);
}

/* A key or value in the text lines: cut past ``width`` characters (-1: whole) with the size after it. */
static inline int text_value_w(Buf *b, const Bytes *v, int none, int mode, Py_ssize_t width) {
    if (none) return PUTS(b, "null");
    int rc = 0, cut = 0;
    if (mode == M_NONE) {
        rc = PUTS(b, "<");
        if (rc == 0) rc = put_i64(b, v->n);
        if (rc == 0) rc = PUTS(b, " bytes>");
        return rc;
    }
    const unsigned char *s = (const unsigned char *)v->p;
    if (mode == M_UTF8) {
        rc = PUTS(b, "\"");
        if (rc == 0) rc = cut = put_text_escaped(b, s, v->n, width);
        if (rc >= 0) rc = PUTS(b, "\"");
    } else {
        /* hex / base64 are ASCII: one character per byte written */
        Py_ssize_t start = b->n;
        Py_ssize_t full = mode == M_HEX ? 2 * v->n : (v->n + 2) / 3 * 4;
        if (width >= 0 && full > width) {
            Py_ssize_t take = mode == M_HEX ? (width + 1) / 2 : (width + 3) / 4 * 3;
            rc = mode == M_HEX ? put_hex(b, s, take < v->n ? take : v->n) : put_b64(b, s, take < v->n ? take : v->n);
            if (rc == 0) {
                b->n = start + width - 1;
                rc = PUTS(b, "\xe2\x80\xa6");
                cut = 1;
            }
        } else {
            rc = mode == M_HEX ? put_hex(b, s, v->n) : put_b64(b, s, v->n);
        }
    }
    if (rc >= 0 && cut) {
        rc = PUTS(b, " (");
        if (rc == 0) rc = put_i64(b, v->n);
        if (rc == 0) rc = PUTS(b, " bytes)");
    }
    return rc < 0 ? -1 : 0;
}

static int text_value(Buf *b, const Bytes *v, int none, int mode) {
    return text_value_w(b, v, none, mode, TEXT_WIDTH);
}

typedef struct {
    int kmode, vmode;
} TextCtx;

static int text_one(Buf *b, RView *w, void *ctx) {
    TextCtx *c = ctx;
    CHECK(PUTS(b, "  "));
    CHECK(put_padded(b, w->off, 8));
    CHECK(PUTS(b, "  "));
    CHECK(put_padded(b, w->t, 13));
    CHECK(PUTS(b, "  "));
    CHECK(put_iso(b, w->t));
    CHECK(PUTS(b, "  key "));
    CHECK(text_value(b, &w->k, w->knone, c->kmode));
    CHECK(PUTS(b, "  value "));
    CHECK(text_value(b, &w->v, w->vnone, c->vmode));
    for (Py_ssize_t j = 0; j < w->nh; j++) {
        HView h;
        int rc = rview_header(w, j, &h);
        if (rc == 0) rc = j ? PUTS(b, ", ") : PUTS(b, "  headers ");
        if (rc == 0) rc = put_text_escaped(b, (const unsigned char *)h.kp, h.kn, -1) < 0 ? -1 : 0;
        if (rc == 0) rc = PUTS(b, "=");
        if (rc == 0) rc = text_value(b, &h.v, h.vnone, c->vmode);
        hview_release(&h);
        CHECK(rc);
    }
    return PUTS(b, "\n");
}

static PyObject *text_records(PyObject *self, PyObject *args) {
    PyObject *records;
    TextCtx c;
    if (!PyArg_ParseTuple(args, "Oii", &records, &c.kmode, &c.vmode)) return NULL;
    Buf b = {0};
    return finish(&b, each_tuple(&b, records, 0, text_one, &c));
}

/* text_spans(data, record_spans, header_spans, kmode, vmode): text_records from spans. */
static PyObject *text_spans(PyObject *self, PyObject *args) {
    Py_buffer data, rsp, hsp;
    TextCtx c;
    if (!PyArg_ParseTuple(args, "y*y*y*ii", &data, &rsp, &hsp, &c.kmode, &c.vmode)) return NULL;
    Buf b = {0};
    int rc = each_span(&b, &data, &rsp, &hsp, 0, text_one, &c);
    PyBuffer_Release(&data);
    PyBuffer_Release(&rsp);
    PyBuffer_Release(&hsp);
    return finish(&b, rc);
}

/* ------------------------------------------------------------------ chosen fields (dump --fields) */

/* Field codes: indexes into lines.RECORD_FIELDS. */
/* F_HEADERS_IF_ANY: the default text line's headers, shown only when there are some (lines.HEADERS_IF_ANY). */
enum { F_OFFSET = 0, F_TIMESTAMP, F_TIMESTAMP_TYPE, F_KEY, F_VALUE, F_HEADERS, F_BATCH_POSITION, F_HEADERS_IF_ANY,
       F_COUNT };

typedef struct {
    const char *ts;
    Py_ssize_t tsn;
    char pos[24];
    Py_ssize_t posn;
    int kmode, vmode;
    const char *fields;
    Py_ssize_t nf;
    Py_ssize_t width; /* text: -1 for whole values */
} FieldsCtx;

static int fields_ctx(FieldsCtx *c, long long position) {
    c->posn = (Py_ssize_t)snprintf(c->pos, sizeof c->pos, "%lld", position);
    for (Py_ssize_t i = 0; i < c->nf; i++)
        if ((unsigned char)c->fields[i] >= F_COUNT) {
            PyErr_SetString(PyExc_ValueError, "unknown field code");
            return -1;
        }
    return 0;
}

static int jsonl_fields_one(Buf *b, RView *w, void *ctx) {
    FieldsCtx *c = ctx;
    CHECK(PUTS(b, "{\"type\": \"record\""));
    for (Py_ssize_t i = 0; i < c->nf; i++) {
        switch (c->fields[i]) {
        case F_OFFSET:
            CHECK(PUTS(b, ", \"offset\": "));
            CHECK(put_i64(b, w->off));
            break;
        case F_TIMESTAMP:
            CHECK(PUTS(b, ", \"timestamp\": "));
            CHECK(put_i64(b, w->t));
            break;
        case F_TIMESTAMP_TYPE:
            CHECK(PUTS(b, ", \"timestamp_type\": \""));
            CHECK(put(b, c->ts, c->tsn));
            CHECK(PUTS(b, "\""));
            break;
        case F_KEY:
            CHECK(PUTS(b, ", "));
            CHECK(json_field(b, "key", 3, &w->k, w->knone, c->kmode));
            break;
        case F_VALUE:
            CHECK(PUTS(b, ", "));
            CHECK(json_field(b, "value", 5, &w->v, w->vnone, c->vmode));
            break;
        case F_HEADERS:
        case F_HEADERS_IF_ANY:
            CHECK(PUTS(b, ", \"headers\": ["));
            for (Py_ssize_t j = 0; j < w->nh; j++) {
                HView h;
                int rc = rview_header(w, j, &h);
                if (rc == 0 && j) rc = PUTS(b, ", ");
                if (rc == 0) rc = PUTS(b, "{");
                if (rc == 0) rc = json_header_key(b, &h);
                if (rc == 0) rc = PUTS(b, ", ");
                if (rc == 0) rc = json_field(b, "value", 5, &h.v, h.vnone, c->vmode);
                if (rc == 0) rc = PUTS(b, "}");
                hview_release(&h);
                CHECK(rc);
            }
            CHECK(PUTS(b, "]"));
            break;
        default:
            CHECK(PUTS(b, ", \"batch_position\": "));
            CHECK(put(b, c->pos, c->posn));
        }
    }
    return PUTS(b, "}\n");
}

/* jsonl_fields(records, ts_name, position, kmode, vmode, fields) -> bytes: jsonl record lines
 * with only the fields whose codes ``fields`` lists, in its order (lines.jsonl_fields). */
static PyObject *jsonl_fields(PyObject *self, PyObject *args) {
    PyObject *records;
    long long position;
    FieldsCtx c = {0};
    if (!PyArg_ParseTuple(args, "Os#Liiy#", &records, &c.ts, &c.tsn, &position, &c.kmode, &c.vmode, &c.fields,
                          &c.nf))
        return NULL;
    if (fields_ctx(&c, position) < 0) return NULL;
    Buf b = {0};
    return finish(&b, each_tuple(&b, records, 0, jsonl_fields_one, &c));
}

static int text_fields_one(Buf *b, RView *w, void *ctx) {
    FieldsCtx *c = ctx;
    Py_ssize_t start = b->n;
    int aligned = 1; /* fixed columns keep their widths while only fixed columns came before */
    for (Py_ssize_t i = 0; i < c->nf; i++) {
        if (c->fields[i] == F_HEADERS_IF_ANY && !w->nh) continue;
        CHECK(PUTS(b, "  "));
        switch (c->fields[i]) {
        case F_OFFSET:
            CHECK(aligned ? put_padded(b, w->off, 8) : put_i64(b, w->off));
            break;
        case F_TIMESTAMP:
            CHECK(aligned ? put_padded(b, w->t, 13) : put_i64(b, w->t));
            CHECK(PUTS(b, "  "));
            CHECK(put_iso(b, w->t));
            if (!aligned)
                while (b->p[b->n - 1] == ' ') b->n--; /* the ISO text unpadded */
            break;
        case F_TIMESTAMP_TYPE:
            aligned = 0;
            CHECK(put(b, c->ts, c->tsn));
            break;
        case F_KEY:
            aligned = 0;
            CHECK(PUTS(b, "key "));
            CHECK(text_value_w(b, &w->k, w->knone, c->kmode, c->width));
            break;
        case F_VALUE:
            aligned = 0;
            CHECK(PUTS(b, "value "));
            CHECK(text_value_w(b, &w->v, w->vnone, c->vmode, c->width));
            break;
        case F_HEADERS:
        case F_HEADERS_IF_ANY:
            aligned = 0;
            CHECK(PUTS(b, "headers "));
            if (!w->nh) CHECK(PUTS(b, "-"));
            for (Py_ssize_t j = 0; j < w->nh; j++) {
                HView h;
                int rc = rview_header(w, j, &h);
                if (rc == 0 && j) rc = PUTS(b, ", ");
                if (rc == 0) rc = put_text_escaped(b, (const unsigned char *)h.kp, h.kn, -1) < 0 ? -1 : 0;
                if (rc == 0) rc = PUTS(b, "=");
                if (rc == 0) rc = text_value_w(b, &h.v, h.vnone, c->vmode, c->width);
                hview_release(&h);
                CHECK(rc);
            }
            break;
        default:
            aligned = 0;
            CHECK(PUTS(b, "batch @"));
            CHECK(put(b, c->pos, c->posn));
        }
    }
    while (b->n > start && b->p[b->n - 1] == ' ') b->n--; /* a last ISO column's padding */
    return PUTS(b, "\n");
}

/* text_fields(records, ts_name, position, kmode, vmode, fields, width) -> bytes: text record lines
 * of the chosen fields, values cut past ``width`` characters (-1: whole) (lines.text_fields). */
static PyObject *text_fields(PyObject *self, PyObject *args) {
    PyObject *records;
    long long position;
    FieldsCtx c = {0};
    if (!PyArg_ParseTuple(args, "Os#Liiy#n", &records, &c.ts, &c.tsn, &position, &c.kmode, &c.vmode, &c.fields,
                          &c.nf, &c.width))
        return NULL;
    if (fields_ctx(&c, position) < 0) return NULL;
    Buf b = {0};
    return finish(&b, each_tuple(&b, records, 0, text_fields_one, &c));
}

/* ------------------------------------------------------------------ kafka */

static int kafka_payload(Buf *b, const char *label, Py_ssize_t labeln, Bytes *v, int mode) {
    CHECK(put(b, label, labeln));
    const unsigned char *s = (const unsigned char *)v->p;
    switch (mode) {
        case M_UTF8: return put_backslashreplace(b, s, v->n);
        case M_JAVA: return put_java(b, v->p, v->n);
        case M_HEX: return put_hex(b, s, v->n);
        default: return put_b64(b, s, v->n);
    }
}

typedef struct {
    const char *ts;
    Py_ssize_t tsn;
    int magic, kmode, vmode, brace, have_last;
    long long base_offset, base_seq, last;
    PyObject *gaps;
    PyObject *codec; /* plain runs: the codec's name, and whether record lines follow the batch lines */
    int records;
    const char *bf; /* Kafka 2.8's lines: the batch fields each record line repeats (NULL: later lines) */
    Py_ssize_t bfn;
} KafkaCtx;

static int kafka_one(Buf *b, RView *r, void *ctx) {
    KafkaCtx *c = ctx;
    if (c->have_last && r->off != c->last + 1) { /* a gap: (previous, this) */
        PyObject *pair = Py_BuildValue("(LL)", c->last, r->off);
        int rc = pair ? PyList_Append(c->gaps, pair) : -1;
        Py_XDECREF(pair);
        CHECK(rc);
    }
    c->last = r->off;
    c->have_last = 1;
    int valid = c->magic >= 2 || (!r->crc_none && r->stored == (long long)r->computed);
    int rc = PUTS(b, "| offset: ");
    if (rc == 0) rc = put_i64(b, r->off);
    if (c->bf) { /* Kafka 2.8: the record's validity and CRC first, the timestamp after the sizes */
        if (rc == 0) rc = valid ? PUTS(b, " isValid: true crc: ") : PUTS(b, " isValid: false crc: ");
        if (rc == 0) rc = c->magic >= 2 ? PUTS(b, "null") : r->crc_none ? PUTS(b, "None") : put_i64(b, r->stored);
    } else {
        if (rc == 0) rc = PUTS(b, " ");
        if (rc == 0) rc = put(b, c->ts, c->tsn);
        if (rc == 0) rc = PUTS(b, ": ");
        if (rc == 0) rc = put_i64(b, r->t);
    }
    if (rc == 0) rc = PUTS(b, " keySize: ");
    if (rc == 0) rc = put_i64(b, r->knone ? -1 : r->k.n);
    if (rc == 0) rc = PUTS(b, " valueSize: ");
    if (rc == 0) rc = put_i64(b, r->vnone ? -1 : r->v.n);
    if (c->bf) {
        if (rc == 0) rc = PUTS(b, " ");
        if (rc == 0) rc = put(b, c->ts, c->tsn);
        if (rc == 0) rc = PUTS(b, ": ");
        if (rc == 0) rc = put_i64(b, r->t);
        if (rc == 0) rc = put(b, c->bf, c->bfn);
    }
    if (rc == 0 && c->magic >= 2) {
        long long seq = kseg_record_sequence(c->base_seq,
                                             (int64_t)((uint64_t)r->off - (uint64_t)c->base_offset));
        rc = PUTS(b, " sequence: ");
        if (rc == 0) rc = put_i64(b, seq);
        if (rc == 0) rc = PUTS(b, " headerKeys: [");
        for (Py_ssize_t j = 0; rc == 0 && j < r->nh; j++) {
            HView h;
            rc = rview_header(r, j, &h);
            if (rc == 0 && j) rc = PUTS(b, ",");
            if (rc == 0) rc = put_java(b, h.kp, h.kn);  /* Kafka reads header keys as Java strings */
            hview_release(&h);
        }
        if (rc == 0) rc = PUTS(b, "]");
    } else if (rc == 0 && c->bf) { /* Kafka 2.8: the CRC again, then the validity */
        rc = PUTS(b, " crc: ");
        if (rc == 0) rc = r->crc_none ? PUTS(b, "None") : put_i64(b, r->stored);
        if (rc == 0) rc = valid ? PUTS(b, " isvalid: true") : PUTS(b, " isvalid: false");
    } else if (rc == 0) {
        rc = valid ? PUTS(b, " isValid: true crc: ") : PUTS(b, " isValid: false crc: ");
        if (rc == 0) rc = r->crc_none ? PUTS(b, "None") : put_i64(b, r->stored);
        if (rc == 0 && c->brace) rc = PUTS(b, "}"); /* Kafka 3.x's stray brace */
    }
    if (rc == 0 && c->kmode != M_NONE && !r->knone) rc = kafka_payload(b, " key: ", 6, &r->k, c->kmode);
    if (rc == 0 && c->vmode != M_NONE && !r->vnone) rc = kafka_payload(b, " payload: ", 10, &r->v, c->vmode);
    if (rc < 0) return -1;
    return PUTS(b, "\n");
}

static int kafka_ctx(KafkaCtx *c, PyObject *last_obj) {
    c->have_last = last_obj != Py_None;
    c->last = 0;
    return c->have_last ? get_i64(last_obj, &c->last) : 0;
}

static PyObject *kafka_records(PyObject *self, PyObject *args) {
    PyObject *records, *last_obj;
    KafkaCtx c = {.brace = 1};
    if (!PyArg_ParseTuple(args, "Os#iLLiiOO!|pz#", &records, &c.ts, &c.tsn, &c.magic, &c.base_offset, &c.base_seq,
                          &c.kmode, &c.vmode, &last_obj, &PyList_Type, &c.gaps, &c.brace, &c.bf, &c.bfn))
        return NULL;
    if (kafka_ctx(&c, last_obj) < 0) return NULL;
    Buf b = {0};
    return finish(&b, each_tuple(&b, records, c.magic < 2, kafka_one, &c));
}

/* kafka_spans(data, record_spans, header_spans, ...) -> (bytes, last offset): kafka_records from spans. */
static PyObject *kafka_spans(PyObject *self, PyObject *args) {
    Py_buffer data, rsp, hsp;
    PyObject *last_obj;
    KafkaCtx c = {.brace = 1};
    if (!PyArg_ParseTuple(args, "y*y*y*s#iLLiiOO!|pz#", &data, &rsp, &hsp, &c.ts, &c.tsn, &c.magic, &c.base_offset,
                          &c.base_seq, &c.kmode, &c.vmode, &last_obj, &PyList_Type, &c.gaps, &c.brace, &c.bf, &c.bfn))
        return NULL;
    Buf b = {0};
    int rc = kafka_ctx(&c, last_obj);
    if (rc == 0) rc = each_span(&b, &data, &rsp, &hsp, c.magic < 2, kafka_one, &c);
    PyBuffer_Release(&data);
    PyBuffer_Release(&rsp);
    PyBuffer_Release(&hsp);
    PyObject *lines = finish(&b, rc);
    if (!lines) return NULL;
    if (!c.have_last) return Py_BuildValue("(NO)", lines, Py_None);
    return Py_BuildValue("(NL)", lines, c.last);
}

/* ------------------------------------------------------------ kafka batch lines */

/* Where kseg.model.Batch keeps each field, and the attribute bits, from configure_batches(). */
static Py_ssize_t B_POSITION = -1, B_SIZE, B_MAGIC, B_BASE_OFFSET, B_CRC, B_ATTRIBUTES, B_MAX_TS, B_PLE, B_LOD,
                  B_BASE_TS, B_PID, B_EPOCH, B_BASE_SEQ, B_COUNT;
static Py_ssize_t B_LAST = -1; /* the largest of them */
static long long TRANSACTIONAL_BIT, CONTROL_BIT, DELETE_HORIZON_BIT, TIMESTAMP_TYPE_BIT, CODEC_BITS;

static PyObject *configure_batches(PyObject *self, PyObject *args) {
    PyObject *fields;
    if (!PyArg_ParseTuple(args, "O!LLLLL", &PyTuple_Type, &fields, &TRANSACTIONAL_BIT, &CONTROL_BIT,
                          &DELETE_HORIZON_BIT, &TIMESTAMP_TYPE_BIT, &CODEC_BITS))
        return NULL;
    static const struct { const char *name; Py_ssize_t *slot; } want[] = {
        {"position", &B_POSITION}, {"size", &B_SIZE}, {"magic", &B_MAGIC}, {"base_offset", &B_BASE_OFFSET},
        {"crc", &B_CRC}, {"attributes", &B_ATTRIBUTES}, {"max_timestamp", &B_MAX_TS},
        {"partition_leader_epoch", &B_PLE}, {"last_offset_delta", &B_LOD}, {"base_timestamp", &B_BASE_TS},
        {"producer_id", &B_PID}, {"producer_epoch", &B_EPOCH}, {"base_sequence", &B_BASE_SEQ},
        {"record_count", &B_COUNT},
    };
    Py_ssize_t n = PyTuple_GET_SIZE(fields);
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
        *want[k].slot = -1;
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *f = PyTuple_GET_ITEM(fields, i);
            if (PyUnicode_Check(f) && PyUnicode_CompareWithASCIIString(f, want[k].name) == 0) *want[k].slot = i;
        }
        if (*want[k].slot < 0) {
            B_POSITION = -1;
            return PyErr_Format(PyExc_ValueError, "Batch has no field %s", want[k].name);
        }
        if (*want[k].slot > B_LAST) B_LAST = *want[k].slot;
    }
    Py_RETURN_NONE;
}

static int put_field(Buf *b, PyObject *batch, Py_ssize_t at) {
    long long v;
    CHECK(get_i64(PyTuple_GET_ITEM(batch, at), &v));
    return put_i64(b, v);
}

static int put_str(Buf *b, PyObject *s) { /* as .encode("utf-8", "backslashreplace") */
    Py_ssize_t n;
    const char *p = PyUnicode_AsUTF8AndSize(s, &n);
    if (p) return put(b, p, n);
    PyErr_Clear();
    PyObject *enc = PyUnicode_AsEncodedString(s, "utf-8", "backslashreplace");
    if (!enc) return -1;
    int rc = put(b, PyBytes_AS_STRING(enc), PyBytes_GET_SIZE(enc));
    Py_DECREF(enc);
    return rc;
}

#define PUT_FIELD(label, at) do { CHECK(PUTS(b, label)); CHECK(put_field(b, batch, (at))); } while (0)

static int kafka_batch(Buf *b, PyObject *batch, int crc_valid, PyObject *ts_name, PyObject *codec_name) {
    long long magic, attrs;
    CHECK(get_i64(PyTuple_GET_ITEM(batch, B_MAGIC), &magic));
    CHECK(get_i64(PyTuple_GET_ITEM(batch, B_ATTRIBUTES), &attrs));
    if (magic >= 2) {
        long long base, lod, seq, last_seq;
        CHECK(get_i64(PyTuple_GET_ITEM(batch, B_BASE_OFFSET), &base));
        CHECK(get_i64(PyTuple_GET_ITEM(batch, B_LOD), &lod));
        CHECK(get_i64(PyTuple_GET_ITEM(batch, B_BASE_SEQ), &seq));
        last_seq = kseg_last_sequence(seq, lod);
        CHECK(PUTS(b, "baseOffset: "));
        CHECK(put_i64(b, base));
        CHECK(PUTS(b, " lastOffset: "));
        CHECK(put_i64(b, (long long)((unsigned long long)base + (unsigned long long)lod))); /* a Java long */
        PUT_FIELD(" count: ", B_COUNT);
        CHECK(PUTS(b, " baseSequence: "));
        CHECK(put_i64(b, seq));
        CHECK(PUTS(b, " lastSequence: "));
        CHECK(put_i64(b, last_seq));
        PUT_FIELD(" producerId: ", B_PID);
        PUT_FIELD(" producerEpoch: ", B_EPOCH);
        PUT_FIELD(" partitionLeaderEpoch: ", B_PLE);
        CHECK(attrs & TRANSACTIONAL_BIT ? PUTS(b, " isTransactional: true") : PUTS(b, " isTransactional: false"));
        CHECK(attrs & CONTROL_BIT ? PUTS(b, " isControl: true") : PUTS(b, " isControl: false"));
        if (attrs & DELETE_HORIZON_BIT) {
            PUT_FIELD(" deleteHorizonMs: OptionalLong[", B_BASE_TS);
            CHECK(PUTS(b, "]"));
        } else {
            CHECK(PUTS(b, " deleteHorizonMs: OptionalLong.empty"));
        }
        PUT_FIELD(" position: ", B_POSITION);
    } else {
        PUT_FIELD("offset: ", B_BASE_OFFSET);
        PUT_FIELD(" position: ", B_POSITION);
    }
    CHECK(PUTS(b, " "));
    CHECK(put_str(b, ts_name));
    PUT_FIELD(": ", B_MAX_TS);
    PUT_FIELD(" size: ", B_SIZE);
    CHECK(PUTS(b, " magic: "));
    CHECK(put_i64(b, magic));
    CHECK(PUTS(b, " compresscodec: "));
    CHECK(put_str(b, codec_name));
    PUT_FIELD(" crc: ", B_CRC);
    return crc_valid ? PUTS(b, " isvalid: true\n") : PUTS(b, " isvalid: false\n");
}

/* kafka_batch_line(batch, crc_valid, ts_name, codec_name) -> bytes: a batch's line of kafka-dump-log.sh. */
static PyObject *kafka_batch_line(PyObject *self, PyObject *args) {
    PyObject *batch, *ts_name, *codec_name;
    int crc_valid;
    if (!PyArg_ParseTuple(args, "O!pUU", &PyTuple_Type, &batch, &crc_valid, &ts_name, &codec_name)) return NULL;
    if (B_POSITION < 0) {
        PyErr_SetString(PyExc_RuntimeError, "configure_batches() first");
        return NULL;
    }
    if (PyTuple_GET_SIZE(batch) <= B_LAST) {
        PyErr_SetString(PyExc_TypeError, "a kseg Batch tuple is needed");
        return NULL;
    }
    Buf b = {0};
    int rc = grow(&b, 512);
    if (rc == 0) rc = kafka_batch(&b, batch, crc_valid, ts_name, codec_name);
    return finish(&b, rc);
}

/* ------------------------------------------------------------ runs of plain messages */

/* Uncompressed v0/v1 messages, each a batch of one record: their batch lines and record lines
 * in one call, from kseg.log.records.plain_run (the Batch tuples and their records' spans). The
 * per-message path (kafka_batch_line, the renderers' batch lines, *_records) is the reference. */
typedef int (*PlainWriter)(Buf *b, PyObject *batch, RView *w, int crc_ok, PyObject *ts_name, void *ctx);

typedef struct {
    PyObject *batches, *ts_names, *codec;
    Py_buffer data, spans;
    int records, kmode, vmode;
} PlainArgs;

/* The arguments every plain-run writer starts with: (batches, data, spans, ts_names, codec, records,
 * kmode, vmode); ts_names is (NoTimestampType, CreateTime, LogAppendTime). */
static int plain_args(PyObject *args, Py_ssize_t n, PlainArgs *a) {
    if (PyTuple_GET_SIZE(args) < n) {
        PyErr_SetString(PyExc_TypeError, "too few arguments");
        return -1;
    }
    PyObject *head = PyTuple_GetSlice(args, 0, 8);
    if (!head) return -1;
    int ok = PyArg_ParseTuple(head, "O!y*y*O!Upii", &PyList_Type, &a->batches, &a->data, &a->spans, &PyTuple_Type,
                              &a->ts_names, &a->codec, &a->records, &a->kmode, &a->vmode);
    Py_DECREF(head);
    if (!ok) return -1;
    if (B_POSITION < 0 || PyTuple_GET_SIZE(a->ts_names) != 3 ||
        a->spans.len != PyList_GET_SIZE(a->batches) * (Py_ssize_t)sizeof(KsegRecordSpan)) {
        PyErr_SetString(PyExc_ValueError, "configure_batches() first, three timestamp names, a span per batch");
        PyBuffer_Release(&a->data);
        PyBuffer_Release(&a->spans);
        return -1;
    }
    return 0;
}

static const KsegHeaderSpan NO_HEADERS[1]; /* v0/v1 messages have none */

static int each_plain(Buf *b, PlainArgs *a, PlainWriter line, void *ctx) {
    Py_ssize_t n = PyList_GET_SIZE(a->batches);
    const KsegRecordSpan *rs = (const KsegRecordSpan *)a->spans.buf;
    int rc = grow(b, n * (a->records ? 600 : 200) + 256);
    for (Py_ssize_t i = 0; rc == 0 && i < n; i++) {
        PyObject *batch = PyList_GET_ITEM(a->batches, i);
        if (!PyTuple_Check(batch) || PyTuple_GET_SIZE(batch) <= B_LAST) {
            PyErr_SetString(PyExc_TypeError, "a kseg Batch tuple is needed");
            return -1;
        }
        long long magic, attrs;
        RView w;
        CHECK(get_i64(PyTuple_GET_ITEM(batch, B_MAGIC), &magic));
        CHECK(get_i64(PyTuple_GET_ITEM(batch, B_ATTRIBUTES), &attrs));
        CHECK(rview_from_span(&w, rs + i, (const char *)a->data.buf, a->data.len, NO_HEADERS, 0, 1));
        PyObject *ts_name = PyTuple_GET_ITEM(a->ts_names, magic == 0 ? 0 : attrs & TIMESTAMP_TYPE_BIT ? 2 : 1);
        rc = line(b, batch, &w, w.stored == (long long)w.computed, ts_name, ctx);
    }
    return rc;
}

static PyObject *plain_finish(Buf *b, PlainArgs *a, int rc) {
    PyBuffer_Release(&a->data);
    PyBuffer_Release(&a->spans);
    return finish(b, rc);
}

static int kafka_plain_one(Buf *b, PyObject *batch, RView *w, int crc_ok, PyObject *ts_name, void *ctx) {
    KafkaCtx *c = ctx;
    CHECK(kafka_batch(b, batch, crc_ok, ts_name, c->codec));
    if (!c->records) return 0;
    long long magic;
    CHECK(get_i64(PyTuple_GET_ITEM(batch, B_MAGIC), &magic));
    c->magic = (int)magic;
    c->ts = PyUnicode_AsUTF8AndSize(ts_name, &c->tsn);
    if (!c->ts) return -1;
    return kafka_one(b, w, c);
}

/* kafka_plain_run(batches, data, spans, ts_names, codec, records, kmode, vmode, last, gaps, brace)
 * -> (bytes, last offset): each message's kafka-dump-log.sh batch line and, with records, its record line. */
static PyObject *kafka_plain_run(PyObject *self, PyObject *args) {
    PlainArgs a;
    PyObject *last_obj;
    KafkaCtx c = {.base_seq = -1};
    if (plain_args(args, 11, &a) < 0) return NULL;
    PyObject *tail = PyTuple_GetSlice(args, 8, PyTuple_GET_SIZE(args));
    int ok = tail && PyArg_ParseTuple(tail, "OO!p", &last_obj, &PyList_Type, &c.gaps, &c.brace);
    Py_XDECREF(tail);
    Buf b = {0};
    if (!ok) return plain_finish(&b, &a, -1);
    c.codec = a.codec;
    c.records = a.records;
    c.kmode = a.kmode;
    c.vmode = a.vmode;
    int rc = kafka_ctx(&c, last_obj);
    if (rc == 0) rc = each_plain(&b, &a, kafka_plain_one, &c);
    PyObject *lines = plain_finish(&b, &a, rc);
    if (!lines) return NULL;
    if (!c.have_last) return Py_BuildValue("(NO)", lines, Py_None);
    return Py_BuildValue("(NL)", lines, c.last);
}

typedef struct {
    const char *file, *codec;
    Py_ssize_t filen, codecn;
    int records, kmode, vmode;
} JsonlPlainCtx;

/* A jsonl batch line up to its crc_valid field (render.dump.batch_line): the fields every magic has;
 * file and codec as JSON, the last offset and count as the caller works them out. */
static int jsonl_batch_head(Buf *b, PyObject *batch, const char *file, Py_ssize_t filen, long long last,
                            long long count, const char *codec, Py_ssize_t codecn, PyObject *ts_name, int crc_ok) {
    CHECK(PUTS(b, "{\"type\": \"batch\", \"file\": "));
    CHECK(put(b, file, filen));
    PUT_FIELD(", \"position\": ", B_POSITION);
    PUT_FIELD(", \"base_offset\": ", B_BASE_OFFSET);
    CHECK(PUTS(b, ", \"last_offset\": "));
    CHECK(put_i64(b, last));
    CHECK(PUTS(b, ", \"count\": "));
    CHECK(put_i64(b, count));
    PUT_FIELD(", \"magic\": ", B_MAGIC);
    CHECK(PUTS(b, ", \"codec\": "));
    CHECK(put(b, codec, codecn));
    CHECK(PUTS(b, ", \"timestamp_type\": \""));
    CHECK(put_str(b, ts_name));
    PUT_FIELD("\", \"max_timestamp\": ", B_MAX_TS);
    PUT_FIELD(", \"size\": ", B_SIZE);
    PUT_FIELD(", \"crc\": ", B_CRC);
    return crc_ok ? PUTS(b, ", \"crc_valid\": true") : PUTS(b, ", \"crc_valid\": false");
}

static int jsonl_plain_one(Buf *b, PyObject *batch, RView *w, int crc_ok, PyObject *ts_name, void *ctx) {
    JsonlPlainCtx *c = ctx;
    long long position, base;
    JsonlCtx rc = {.kmode = c->kmode, .vmode = c->vmode};
    CHECK(get_i64(PyTuple_GET_ITEM(batch, B_POSITION), &position));
    CHECK(get_i64(PyTuple_GET_ITEM(batch, B_BASE_OFFSET), &base));
    rc.ts = PyUnicode_AsUTF8AndSize(ts_name, &rc.tsn);
    if (!rc.ts) return -1;
    CHECK(jsonl_batch_head(b, batch, c->file, c->filen, base, 1, c->codec, c->codecn, ts_name, crc_ok));
    CHECK(PUTS(b, "}\n"));
    if (!c->records) return 0;
    jsonl_ctx(&rc, position);
    return jsonl_one(b, w, &rc);
}

/* jsonl_plain_run(batches, data, spans, ts_names, codec_json, records, kmode, vmode, file_json) -> bytes:
 * each message's jsonl batch line (render.dump.batch_line) and, with records, its record line. */
static PyObject *jsonl_plain_run(PyObject *self, PyObject *args) {
    PlainArgs a;
    JsonlPlainCtx c;
    if (plain_args(args, 9, &a) < 0) return NULL;
    Buf b = {0};
    PyObject *file = PyTuple_GET_ITEM(args, 8);
    if (!PyBytes_Check(file)) {
        PyErr_SetString(PyExc_TypeError, "the file name in JSON, encoded, is bytes");
        return plain_finish(&b, &a, -1);
    }
    c.file = PyBytes_AS_STRING(file);
    c.filen = PyBytes_GET_SIZE(file);
    c.codec = PyUnicode_AsUTF8AndSize(a.codec, &c.codecn);
    if (!c.codec) return plain_finish(&b, &a, -1);
    c.records = a.records;
    c.kmode = a.kmode;
    c.vmode = a.vmode;
    return plain_finish(&b, &a, each_plain(&b, &a, jsonl_plain_one, &c));
}

static int put_hex32(Buf *b, long long v) { /* f"{v:#010x}" of a CRC */
    CHECK(grow(b, 10));
    char *o = b->p + b->n;
    o[0] = '0';
    o[1] = 'x';
    for (int k = 0; k < 8; k++) o[2 + k] = HEXD[(v >> (28 - 4 * k)) & 15];
    b->n += 10;
    return 0;
}

/* The text batch line from its codec on: "{codec}  {timestamp type} {ms}[ {ISO}]  size {n}  crc {crc} ok"
 * (or "BAD (computed {computed})"), as render.dump.TextRenderer writes it. */
static int text_batch_rest(Buf *b, PyObject *batch, PyObject *codec, PyObject *ts_name, int crc_ok,
                           long long computed) {
    long long ts, crc;
    CHECK(get_i64(PyTuple_GET_ITEM(batch, B_MAX_TS), &ts));
    CHECK(get_i64(PyTuple_GET_ITEM(batch, B_CRC), &crc));
    CHECK(put_str(b, codec));
    CHECK(PUTS(b, "  "));
    CHECK(put_str(b, ts_name));
    CHECK(PUTS(b, " "));
    CHECK(put_i64(b, ts));
    if (ts >= 0 && ts <= ISO_MAX_MS) {
        CHECK(PUTS(b, " "));
        CHECK(put_iso(b, ts));
    }
    PUT_FIELD("  size ", B_SIZE);
    CHECK(PUTS(b, "  crc "));
    CHECK(put_hex32(b, crc));
    if (crc_ok) return PUTS(b, " ok\n");
    CHECK(PUTS(b, " BAD (computed "));
    CHECK(put_hex32(b, computed));
    return PUTS(b, ")\n");
}

static int text_plain_one(Buf *b, PyObject *batch, RView *w, int crc_ok, PyObject *ts_name, void *ctx) {
    PlainArgs *a = ctx;
    PUT_FIELD("batch @", B_POSITION);
    PUT_FIELD("  offsets ", B_BASE_OFFSET);
    PUT_FIELD("..", B_BASE_OFFSET);
    PUT_FIELD("  count 1  magic ", B_MAGIC);
    CHECK(PUTS(b, "  "));
    CHECK(text_batch_rest(b, batch, a->codec, ts_name, crc_ok, (long long)w->computed));
    if (!a->records) return 0;
    TextCtx c = {.kmode = a->kmode, .vmode = a->vmode};
    return text_one(b, w, &c);
}

/* text_plain_run(batches, data, spans, ts_names, codec, records, kmode, vmode) -> bytes: each message's
 * text batch line and, with records, its record line. */
static PyObject *text_plain_run(PyObject *self, PyObject *args) {
    PlainArgs a;
    if (plain_args(args, 8, &a) < 0) return NULL;
    Buf b = {0};
    return plain_finish(&b, &a, each_plain(&b, &a, text_plain_one, &a));
}

/* ------------------------------------------------------------ runs of v2 batch lines */

/* v2 batches whose lines alone a dump shows, from kseg.log.records.v2_header_run: their lines in one
 * call. The per-batch path (the renderers' batch lines, kafka_batch_line) is the reference. */
typedef int (*HeadWriter)(Buf *b, PyObject *batch, PyObject *computed, PyObject *ts_name, PyObject *codec, void *ctx);

/* The arguments every header-run writer starts with: (batches, bad, ts_names, codecs); bad is
 * {index: the CRC computed} of the batches whose stored CRC does not match, ts_names as the plain
 * runs' and codecs the names the lines print, by codec number. */
static int each_head(Buf *b, PyObject *args, HeadWriter line, void *ctx) {
    PyObject *head = PyTuple_GetSlice(args, 0, 4), *batches, *bad, *ts_names, *codecs;
    if (!head) return -1;
    int ok = PyArg_ParseTuple(head, "O!O!O!O!", &PyList_Type, &batches, &PyDict_Type, &bad, &PyTuple_Type, &ts_names,
                              &PyTuple_Type, &codecs);
    Py_DECREF(head);
    if (!ok) return -1;
    if (B_POSITION < 0 || PyTuple_GET_SIZE(ts_names) != 3) {
        PyErr_SetString(PyExc_ValueError, "configure_batches() first, three timestamp names");
        return -1;
    }
    Py_ssize_t n = PyList_GET_SIZE(batches), nbad = PyDict_GET_SIZE(bad);
    int rc = grow(b, n * 400 + 256);
    for (Py_ssize_t i = 0; rc == 0 && i < n; i++) {
        PyObject *batch = PyList_GET_ITEM(batches, i), *computed = NULL;
        long long magic, attrs;
        if (!PyTuple_Check(batch) || PyTuple_GET_SIZE(batch) <= B_LAST) {
            PyErr_SetString(PyExc_TypeError, "a kseg Batch tuple is needed");
            return -1;
        }
        CHECK(get_i64(PyTuple_GET_ITEM(batch, B_MAGIC), &magic));
        CHECK(get_i64(PyTuple_GET_ITEM(batch, B_ATTRIBUTES), &attrs));
        long long codec = attrs & CODEC_BITS;
        if (magic != 2 || codec >= PyTuple_GET_SIZE(codecs)) {
            PyErr_SetString(PyExc_ValueError, "a v2 batch of a codec the names cover is needed");
            return -1;
        }
        if (nbad) {
            PyObject *at = PyLong_FromSsize_t(i);
            if (!at) return -1;
            computed = PyDict_GetItemWithError(bad, at);
            Py_DECREF(at);
            if (!computed && PyErr_Occurred()) return -1;
        }
        PyObject *ts_name = PyTuple_GET_ITEM(ts_names, attrs & TIMESTAMP_TYPE_BIT ? 2 : 1);
        rc = line(b, batch, computed, ts_name, PyTuple_GET_ITEM(codecs, codec), ctx);
    }
    return rc;
}

/* base + lod as Python sums them: v2_header_run takes no batch whose sum an int64 does not hold. */
static int v2_last_offset(long long base, long long lod, long long *last) {
    if (!__builtin_add_overflow(base, lod, last)) return 0;
    PyErr_SetString(PyExc_OverflowError, "a last offset past int64: the per-batch path writes it");
    return -1;
}

static int text_head_one(Buf *b, PyObject *batch, PyObject *computed, PyObject *ts_name, PyObject *codec, void *ctx) {
    long long base, lod, last, attrs, seq, horizon, c = 0;
    CHECK(get_i64(PyTuple_GET_ITEM(batch, B_BASE_OFFSET), &base));
    CHECK(get_i64(PyTuple_GET_ITEM(batch, B_LOD), &lod));
    CHECK(get_i64(PyTuple_GET_ITEM(batch, B_ATTRIBUTES), &attrs));
    CHECK(get_i64(PyTuple_GET_ITEM(batch, B_BASE_SEQ), &seq));
    CHECK(get_i64(PyTuple_GET_ITEM(batch, B_BASE_TS), &horizon));
    PUT_FIELD("batch @", B_POSITION);
    CHECK(PUTS(b, "  offsets "));
    CHECK(put_i64(b, base));
    CHECK(PUTS(b, ".."));
    CHECK(v2_last_offset(base, lod, &last));
    CHECK(put_i64(b, last));
    PUT_FIELD("  count ", B_COUNT);
    CHECK(PUTS(b, "  magic 2  "));
    if (computed) CHECK(get_i64(computed, &c));
    CHECK(text_batch_rest(b, batch, codec, ts_name, computed == NULL, c));
    PUT_FIELD("  producer ", B_PID);
    PUT_FIELD(" epoch ", B_EPOCH);
    CHECK(PUTS(b, " sequence "));
    CHECK(put_i64(b, seq));
    CHECK(PUTS(b, ".."));
    CHECK(put_i64(b, kseg_last_sequence(seq, lod)));
    PUT_FIELD("  leader epoch ", B_PLE);
    if (attrs & (TRANSACTIONAL_BIT | CONTROL_BIT)) {
        CHECK(PUTS(b, "  "));
        if (attrs & TRANSACTIONAL_BIT)
            CHECK(attrs & CONTROL_BIT ? PUTS(b, "transactional control") : PUTS(b, "transactional"));
        else
            CHECK(PUTS(b, "control"));
    }
    if (attrs & DELETE_HORIZON_BIT) {
        CHECK(PUTS(b, "  delete horizon "));
        CHECK(put_i64(b, horizon));
    }
    return PUTS(b, "\n");
}

/* text_header_run(batches, bad, ts_names, codecs) -> bytes: each v2 batch's two text lines. */
static PyObject *text_header_run(PyObject *self, PyObject *args) {
    Buf b = {0};
    return finish(&b, each_head(&b, args, text_head_one, NULL));
}

static int kafka_head_one(Buf *b, PyObject *batch, PyObject *computed, PyObject *ts_name, PyObject *codec, void *ctx) {
    return kafka_batch(b, batch, computed == NULL, ts_name, codec);
}

/* kafka_header_run(batches, bad, ts_names, codecs) -> bytes: each v2 batch's kafka-dump-log.sh line. */
static PyObject *kafka_header_run(PyObject *self, PyObject *args) {
    Buf b = {0};
    return finish(&b, each_head(&b, args, kafka_head_one, NULL));
}

static int jsonl_head_one(Buf *b, PyObject *batch, PyObject *computed, PyObject *ts_name, PyObject *codec, void *ctx) {
    PyObject *file = ctx;
    long long base, lod, attrs, count, last;
    Py_ssize_t codecn;
    CHECK(get_i64(PyTuple_GET_ITEM(batch, B_BASE_OFFSET), &base));
    CHECK(get_i64(PyTuple_GET_ITEM(batch, B_LOD), &lod));
    CHECK(get_i64(PyTuple_GET_ITEM(batch, B_ATTRIBUTES), &attrs));
    CHECK(get_i64(PyTuple_GET_ITEM(batch, B_COUNT), &count));
    CHECK(v2_last_offset(base, lod, &last));
    const char *codec_json = PyUnicode_AsUTF8AndSize(codec, &codecn);
    if (!codec_json) return -1;
    CHECK(jsonl_batch_head(b, batch, PyBytes_AS_STRING(file), PyBytes_GET_SIZE(file), last, count, codec_json, codecn,
                           ts_name, computed == NULL));
    PUT_FIELD(", \"partition_leader_epoch\": ", B_PLE);
    PUT_FIELD(", \"producer_id\": ", B_PID);
    PUT_FIELD(", \"producer_epoch\": ", B_EPOCH);
    PUT_FIELD(", \"base_sequence\": ", B_BASE_SEQ);
    CHECK(PUTS(b, ", \"is_transactional\": "));
    CHECK(attrs & TRANSACTIONAL_BIT ? PUTS(b, "true") : PUTS(b, "false"));
    CHECK(PUTS(b, ", \"is_control\": "));
    CHECK(attrs & CONTROL_BIT ? PUTS(b, "true") : PUTS(b, "false"));
    if (attrs & DELETE_HORIZON_BIT) {
        PUT_FIELD(", \"delete_horizon_ms\": ", B_BASE_TS);
        return PUTS(b, "}\n");
    }
    return PUTS(b, ", \"delete_horizon_ms\": null}\n");
}

/* jsonl_header_run(batches, bad, ts_names, codecs_json, file_json) -> bytes: each v2 batch's jsonl
 * line (render.dump.batch_line); codecs_json the names in JSON, file_json the file's, encoded. */
static PyObject *jsonl_header_run(PyObject *self, PyObject *args) {
    Buf b = {0};
    if (PyTuple_GET_SIZE(args) != 5 || !PyBytes_Check(PyTuple_GET_ITEM(args, 4))) {
        PyErr_SetString(PyExc_TypeError, "five arguments, the file name in JSON as bytes last");
        return NULL;
    }
    return finish(&b, each_head(&b, args, jsonl_head_one, PyTuple_GET_ITEM(args, 4)));
}

/* ------------------------------------------------------------ runs of v2 batches with their records */

/* v2 batches and their records, from kseg.log.records.v2_record_run: each batch's lines, then the
 * lines of its records from the run's spans (each batch's record count of them in turn), in one
 * call. The per-batch path (the batch lines, *_spans) is the reference. */
typedef struct {
    Py_buffer data, rsp, hsp;
    Py_ssize_t next, n, nhs;
    int got;
} RunSpans;

/* The run's (data, record spans, header spans) from args[at:at + 3]. */
static int run_spans_get(PyObject *args, Py_ssize_t at, RunSpans *s) {
    memset(s, 0, sizeof *s);
    PyObject *three = PyTuple_GetSlice(args, at, at + 3);
    if (!three) return -1;
    int ok = PyTuple_GET_SIZE(three) == 3 && PyArg_ParseTuple(three, "y*y*y*", &s->data, &s->rsp, &s->hsp);
    Py_DECREF(three);
    if (!ok) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "the run's data, record spans and header spans");
        return -1;
    }
    s->got = 1;
    if (s->rsp.len % (Py_ssize_t)sizeof(KsegRecordSpan) || s->hsp.len % (Py_ssize_t)sizeof(KsegHeaderSpan)) {
        PyErr_SetString(PyExc_ValueError, "spans of the wrong size");
        return -1;
    }
    s->n = s->rsp.len / (Py_ssize_t)sizeof(KsegRecordSpan);
    s->nhs = s->hsp.len / (Py_ssize_t)sizeof(KsegHeaderSpan);
    return 0;
}

/* The run's spans from args[at:at + 3], then the key and value modes. */
static int run_args(PyObject *args, Py_ssize_t at, RunSpans *s, int *kmode, int *vmode) {
    CHECK(run_spans_get(args, at, s));
    if (!PyArg_Parse(PyTuple_GET_ITEM(args, at + 3), "i", kmode) || !PyArg_Parse(PyTuple_GET_ITEM(args, at + 4), "i", vmode))
        return -1;
    return 0;
}

static void run_spans_release(RunSpans *s) {
    if (!s->got) return;
    PyBuffer_Release(&s->data);
    PyBuffer_Release(&s->rsp);
    PyBuffer_Release(&s->hsp);
    s->got = 0;
}

/* The next batch's records (its record count of the spans), each written by ``one``. */
static int run_each(Buf *b, RunSpans *s, PyObject *batch, RecordWriter one, void *ctx) {
    long long count;
    CHECK(get_i64(PyTuple_GET_ITEM(batch, B_COUNT), &count));
    if (count < 0 || count > s->n - s->next) {
        PyErr_SetString(PyExc_ValueError, "fewer spans than the batches' record counts");
        return -1;
    }
    const KsegRecordSpan *rs = (const KsegRecordSpan *)s->rsp.buf + s->next;
    CHECK(grow(b, (Py_ssize_t)count * 400 + 256));
    for (long long i = 0; i < count; i++) {
        RView w;
        CHECK(rview_from_span(&w, rs + i, (const char *)s->data.buf, s->data.len, (const KsegHeaderSpan *)s->hsp.buf,
                              s->nhs, 0));
        CHECK(one(b, &w, ctx));
    }
    s->next += (Py_ssize_t)count;
    return 0;
}

/* A record run: each batch's lines by ``head``, then its records' by ``one`` (``prepare``, if any,
 * first sets the record writer's context from the batch and its timestamp type's name). */
typedef int (*RunPrepare)(PyObject *batch, PyObject *ts_name, void *rctx);

typedef struct {
    RunSpans s;
    HeadWriter head;
    void *hctx;
    RunPrepare prepare;
    RecordWriter one;
    void *rctx;
} Run;

static int run_one(Buf *b, PyObject *batch, PyObject *computed, PyObject *ts_name, PyObject *codec, void *ctx) {
    Run *r = ctx;
    CHECK(r->head(b, batch, computed, ts_name, codec, r->hctx));
    if (r->prepare) CHECK(r->prepare(batch, ts_name, r->rctx));
    return run_each(b, &r->s, batch, r->one, r->rctx);
}

/* The lines of a record run whose spans and modes start at args[at], then the check that every
 * span was written. */
static PyObject *run_lines(PyObject *args, Py_ssize_t at, Run *r, int *kmode, int *vmode) {
    Buf b = {0};
    int rc = run_args(args, at, &r->s, kmode, vmode);
    if (rc == 0) rc = each_head(&b, args, run_one, r);
    if (rc == 0 && r->s.next != r->s.n) {
        PyErr_SetString(PyExc_ValueError, "more spans than the batches' record counts");
        rc = -1;
    }
    run_spans_release(&r->s);
    return finish(&b, rc);
}

/* text_record_run(batches, bad, ts_names, codecs, data, record_spans, header_spans, kmode, vmode) -> bytes:
 * each v2 batch's two text lines and its records' lines. */
static PyObject *text_record_run(PyObject *self, PyObject *args) {
    TextCtx t;
    Run r = {.head = text_head_one, .one = text_one, .rctx = &t};
    if (PyTuple_GET_SIZE(args) != 9) {
        PyErr_SetString(PyExc_TypeError, "nine arguments");
        return NULL;
    }
    return run_lines(args, 4, &r, &t.kmode, &t.vmode);
}

static int jsonl_prepare(PyObject *batch, PyObject *ts_name, void *rctx) {
    JsonlCtx *c = rctx;
    long long position;
    CHECK(get_i64(PyTuple_GET_ITEM(batch, B_POSITION), &position));
    c->ts = PyUnicode_AsUTF8AndSize(ts_name, &c->tsn);
    if (!c->ts) return -1;
    jsonl_ctx(c, position);
    return 0;
}

/* jsonl_record_run(batches, bad, ts_names, codecs_json, file_json, data, record_spans, header_spans, kmode,
 * vmode) -> bytes: each v2 batch's jsonl line and its records' lines. */
static PyObject *jsonl_record_run(PyObject *self, PyObject *args) {
    JsonlCtx c;
    if (PyTuple_GET_SIZE(args) != 10 || !PyBytes_Check(PyTuple_GET_ITEM(args, 4))) {
        PyErr_SetString(PyExc_TypeError, "ten arguments, the file name in JSON as bytes fifth");
        return NULL;
    }
    Run r = {.head = jsonl_head_one, .hctx = PyTuple_GET_ITEM(args, 4), .prepare = jsonl_prepare, .one = jsonl_one,
             .rctx = &c};
    return run_lines(args, 5, &r, &c.kmode, &c.vmode);
}

static int kafka_prepare(PyObject *batch, PyObject *ts_name, void *rctx) {
    KafkaCtx *c = rctx;
    CHECK(get_i64(PyTuple_GET_ITEM(batch, B_BASE_OFFSET), &c->base_offset));
    CHECK(get_i64(PyTuple_GET_ITEM(batch, B_BASE_SEQ), &c->base_seq));
    c->ts = PyUnicode_AsUTF8AndSize(ts_name, &c->tsn);
    return c->ts ? 0 : -1;
}

/* kafka_record_run(batches, bad, ts_names, codecs, data, record_spans, header_spans, kmode, vmode, last, gaps)
 * -> (bytes, last offset): each v2 batch's kafka-dump-log.sh line and its records' lines, the offset
 * gaps between records put in gaps as kafka_spans puts them. */
static PyObject *kafka_record_run(PyObject *self, PyObject *args) {
    KafkaCtx c = {.magic = 2};
    if (PyTuple_GET_SIZE(args) != 11 || !PyList_Check(PyTuple_GET_ITEM(args, 10))) {
        PyErr_SetString(PyExc_TypeError, "eleven arguments, the list of gaps last");
        return NULL;
    }
    c.gaps = PyTuple_GET_ITEM(args, 10);
    if (kafka_ctx(&c, PyTuple_GET_ITEM(args, 9)) < 0) return NULL;
    Run r = {.head = kafka_head_one, .prepare = kafka_prepare, .one = kafka_one, .rctx = &c};
    PyObject *lines = run_lines(args, 4, &r, &c.kmode, &c.vmode);
    if (!lines) return NULL;
    if (!c.have_last) return Py_BuildValue("(NO)", lines, Py_None);
    return Py_BuildValue("(NL)", lines, c.last);
}

static PyMethodDef methods[] = {
    {"text_record_run", text_record_run, METH_VARARGS,
     "Runs of v2 batches with their records: their text lines (twin: the per-batch lines and text_spans)."},
    {"jsonl_record_run", jsonl_record_run, METH_VARARGS,
     "Runs of v2 batches with their records: their jsonl lines (twin: the per-batch lines and jsonl_spans)."},
    {"kafka_record_run", kafka_record_run, METH_VARARGS,
     "Runs of v2 batches with their records: kafka-dump-log.sh's lines (twin: kafka_batch_line, kafka_spans)."},
    {"text_header_run", text_header_run, METH_VARARGS,
     "Runs of v2 batches: their text lines (twin: the per-batch lines)."},
    {"kafka_header_run", kafka_header_run, METH_VARARGS,
     "Runs of v2 batches: kafka-dump-log.sh's lines (twin: kafka_batch_line)."},
    {"jsonl_header_run", jsonl_header_run, METH_VARARGS, "Runs of v2 batches: their jsonl lines (twin: batch_line)."},
    {"configure_batches", configure_batches, METH_VARARGS,
     "configure_batches(Batch._fields, transactional_bit, control_bit, delete_horizon_bit, timestamp_type_bit, "
     "codec_mask): first."},
    {"kafka_plain_run", kafka_plain_run, METH_VARARGS,
     "kafka_plain_run(batches, data, spans, ts_names, codec, records, kmode, vmode, last, gaps, brace) -> (bytes, last)."},
    {"jsonl_plain_run", jsonl_plain_run, METH_VARARGS,
     "jsonl_plain_run(batches, data, spans, ts_names, codec_json, records, kmode, vmode, file_json) -> bytes."},
    {"text_plain_run", text_plain_run, METH_VARARGS,
     "text_plain_run(batches, data, spans, ts_names, codec, records, kmode, vmode) -> bytes."},
    {"kafka_batch_line", kafka_batch_line, METH_VARARGS,
     "kafka_batch_line(batch, crc_valid, ts_name, codec_name) -> bytes: the batch's line of kafka-dump-log.sh."},
    {"java_utf8", java_utf8, METH_O,
     "java_utf8(bytes) -> bytes: Java's new String(bytes, UTF_8), as UTF-8 (kafka lines)."},
    {"jsonl_records", jsonl_records, METH_VARARGS,
     "jsonl_records(records, ts_name, position, kmode, vmode) -> bytes: jsonl record lines of a batch."},
    {"text_records", text_records, METH_VARARGS,
     "text_records(records, kmode, vmode) -> bytes: text record lines of a batch."},
    {"jsonl_spans", jsonl_spans, METH_VARARGS,
     "jsonl_spans(data, record_spans, header_spans, ts_name, position, kmode, vmode) -> bytes: jsonl_records "
     "from kseg.log.records.batch_spans."},
    {"text_spans", text_spans, METH_VARARGS,
     "text_spans(data, record_spans, header_spans, kmode, vmode) -> bytes: text_records from batch_spans."},
    {"jsonl_fields", jsonl_fields, METH_VARARGS,
     "jsonl_fields(records, ts_name, position, kmode, vmode, fields) -> bytes: jsonl record lines of the chosen "
     "fields (codes into lines.RECORD_FIELDS, in their order)."},
    {"text_fields", text_fields, METH_VARARGS,
     "text_fields(records, ts_name, position, kmode, vmode, fields, width) -> bytes: text record lines of the "
     "chosen fields, values cut past width characters (-1: whole)."},
    {"kafka_records", kafka_records, METH_VARARGS,
     "kafka_records(records, ts_name, magic, base_offset, base_sequence, kmode, vmode, last, gaps, brace=True, "
     "batch_fields=None) -> bytes."},
    {"kafka_spans", kafka_spans, METH_VARARGS,
     "kafka_spans(data, record_spans, header_spans, ts_name, magic, base_offset, base_sequence, kmode, vmode, last, "
     "gaps, brace=True, batch_fields=None) -> (bytes, last offset): kafka_records from kseg.log.records.batch_spans."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_format",
                                    "Record lines of a batch at once (C twin of kseg.render.lines).", -1, methods};

PyMODINIT_FUNC PyInit__format(void) {
    crc32_init(1);
    tables_init();
    utf8_tables_init();
    return PyModule_Create(&module);
}
