/* kseg.log._sketch: the hot loop of `kseg stats`, in C.
 *
 * v2_stats(records, count, registers, p) walks a v2 batch's (decompressed) records
 * section without building Record objects and returns
 * (keyless, tombstones, smallest timestampDelta or None); every non-null key is added
 * to a HyperLogLog held in `registers` (a bytearray of 2**p bytes) with the same hash
 * and rank as kseg.ops.stats.HyperLogLog (XXH64, seed 0). Malformed records raise
 * ValueError: the caller then takes the checked Python path, which names the problem.
 * xxh64(data) is exposed for the tests (it must equal xxhash.xxh64_intdigest).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

static const uint64_t P1 = 0x9E3779B185EBCA87ULL, P2 = 0xC2B2AE3D27D4EB4FULL, P3 = 0x165667B19E3779F9ULL,
                      P4 = 0x85EBCA77C2B2AE63ULL, P5 = 0x27D4EB2F165667C5ULL;

static inline uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
static inline uint64_t rd64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; } /* little endian hosts */
static inline uint32_t rd32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static inline uint64_t xround(uint64_t acc, uint64_t in) { acc += in * P2; acc = rotl(acc, 31); return acc * P1; }
static inline uint64_t xmerge(uint64_t acc, uint64_t val) { acc ^= xround(0, val); return acc * P1 + P4; }

static uint64_t xxh64(const uint8_t *p, size_t len) {
    const uint8_t *end = p + len;
    uint64_t h;
    if (len >= 32) {
        uint64_t v1 = P1 + P2, v2 = P2, v3 = 0, v4 = (uint64_t)0 - P1;
        const uint8_t *limit = end - 32;
        do {
            v1 = xround(v1, rd64(p)); v2 = xround(v2, rd64(p + 8));
            v3 = xround(v3, rd64(p + 16)); v4 = xround(v4, rd64(p + 24));
            p += 32;
        } while (p <= limit);
        h = rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18);
        h = xmerge(h, v1); h = xmerge(h, v2); h = xmerge(h, v3); h = xmerge(h, v4);
    } else {
        h = P5;
    }
    h += (uint64_t)len;
    while (p + 8 <= end) { h ^= xround(0, rd64(p)); h = rotl(h, 27) * P1 + P4; p += 8; }
    if (p + 4 <= end) { h ^= (uint64_t)rd32(p) * P1; h = rotl(h, 23) * P2 + P3; p += 4; }
    while (p < end) { h ^= (*p) * P5; h = rotl(h, 11) * P1; p++; }
    h ^= h >> 33; h *= P2; h ^= h >> 29; h *= P3; h ^= h >> 32;
    return h;
}

/* Zigzag varint of at most `max` bytes; 0 on success. */
static int varint(const uint8_t **pp, const uint8_t *end, int max, int64_t *out) {
    uint64_t u = 0;
    int shift = 0;
    const uint8_t *p = *pp;
    for (int i = 0; i < max; i++) {
        if (p >= end) return -1;
        uint8_t b = *p++;
        u |= (uint64_t)(b & 0x7F) << shift;
        if (!(b & 0x80)) {
            *pp = p;
            *out = (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
            return 0;
        }
        shift += 7;
    }
    return -1;
}

static PyObject *bad(const char *what) {
    PyErr_SetString(PyExc_ValueError, what);
    return NULL;
}

static PyObject *v2_stats(PyObject *self, PyObject *args) {
    Py_buffer data, regs;
    Py_ssize_t count;
    int p;
    if (!PyArg_ParseTuple(args, "y*nw*i", &data, &count, &regs, &p)) return NULL;
    PyObject *result = NULL;
    if (p < 4 || p > 18 || regs.len != ((Py_ssize_t)1 << p)) {
        bad("registers must be 2**p bytes");
        goto done;
    }
    const uint8_t *q = data.buf, *end = q + data.len;
    uint8_t *r = regs.buf;
    const int shift = 64 - p;
    const uint64_t mask = (shift == 64) ? ~0ULL : (((uint64_t)1 << shift) - 1);
    long long keyless = 0, tombstones = 0;
    int64_t min_delta = 0;
    int have_min = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        int64_t len, tsd, od, klen, vlen, nh, hk, hv;
        if (varint(&q, end, 5, &len) || len < 0 || len > end - q) { bad("record length"); goto done; }
        const uint8_t *rec_end = q + len;
        if (q >= rec_end) { bad("record attributes"); goto done; }
        q++; /* attributes */
        if (varint(&q, rec_end, 10, &tsd) || varint(&q, rec_end, 5, &od)) { bad("record deltas"); goto done; }
        if (!have_min || tsd < min_delta) { min_delta = tsd; have_min = 1; }
        if (varint(&q, rec_end, 5, &klen) || klen < -1 || klen > rec_end - q) { bad("key"); goto done; }
        const uint8_t *key = q;
        if (klen >= 0) q += klen;
        if (varint(&q, rec_end, 5, &vlen) || vlen < -1 || vlen > rec_end - q) { bad("value"); goto done; }
        if (vlen >= 0) q += vlen;
        if (varint(&q, rec_end, 5, &nh) || nh < 0) { bad("header count"); goto done; }
        for (int64_t h = 0; h < nh; h++) {
            if (varint(&q, rec_end, 5, &hk) || hk < 0 || hk > rec_end - q) { bad("header key"); goto done; }
            q += hk;
            if (varint(&q, rec_end, 5, &hv) || hv < -1 || hv > rec_end - q) { bad("header value"); goto done; }
            if (hv >= 0) q += hv;
        }
        if (q != rec_end) { bad("record length does not match its fields"); goto done; }
        if (klen < 0) {
            keyless++;
        } else {
            uint64_t hsh = xxh64(key, (size_t)klen);
            uint64_t rest = hsh & mask;
            int bits = rest ? 64 - __builtin_clzll(rest) : 0;
            uint8_t rank = (uint8_t)(shift - bits + 1);
            size_t idx = (size_t)(hsh >> shift);
            if (rank > r[idx]) r[idx] = rank;
            if (vlen < 0) tombstones++;
        }
    }
    if (q != end) { bad("records section has bytes left over"); goto done; }
    if (have_min)
        result = Py_BuildValue("(LLL)", keyless, tombstones, (long long)min_delta);
    else
        result = Py_BuildValue("(LLO)", keyless, tombstones, Py_None);
done:
    PyBuffer_Release(&data);
    PyBuffer_Release(&regs);
    return result;
}

static PyObject *py_xxh64(PyObject *self, PyObject *args) {
    Py_buffer data;
    if (!PyArg_ParseTuple(args, "y*", &data)) return NULL;
    uint64_t h = xxh64(data.buf, (size_t)data.len);
    PyBuffer_Release(&data);
    return PyLong_FromUnsignedLongLong(h);
}

static PyMethodDef methods[] = {
    {"v2_stats", v2_stats, METH_VARARGS, "keyless, tombstones, min timestamp delta of a v2 records section; keys into an HLL"},
    {"xxh64", py_xxh64, METH_VARARGS, "XXH64 with seed 0"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_sketch", NULL, -1, methods};

PyMODINIT_FUNC PyInit__sketch(void) {
#if PY_BIG_ENDIAN
    PyErr_SetString(PyExc_ImportError, "kseg.log._sketch assumes a little-endian host");
    return NULL;
#else
    return PyModule_Create(&module);
#endif
}
