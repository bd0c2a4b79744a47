/* kseg/log/_sketch.h: what `kseg stats` counts of a v2 records section, shared by
 * kseg.log._sketch (v2_stats, one batch) and kseg.log._speedups (stats_v2_run, a run of
 * batches): the walk that finds each record's key, value and timestamp without building
 * Record objects, and the HyperLogLog update of kseg.ops.stats.HyperLogLog (XXH64 with seed
 * 0, the register of the top p bits, the rank of the rest). A walk that fails changes no
 * register: the keys' (register, rank) marks are applied only once the whole section read
 * well, so the checked Python path that then reads the batch counts it as it alone would.
 * Little-endian hosts only (the XXH64 lanes are read as native words).
 */
#ifndef KSEG_SKETCH_H
#define KSEG_SKETCH_H

#include <stdint.h>
#include <string.h>

static const uint64_t SK_P1 = 0x9E3779B185EBCA87ULL, SK_P2 = 0xC2B2AE3D27D4EB4FULL, SK_P3 = 0x165667B19E3779F9ULL,
                      SK_P4 = 0x85EBCA77C2B2AE63ULL, SK_P5 = 0x27D4EB2F165667C5ULL;

static inline uint64_t sk_rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
static inline uint64_t sk_rd64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; } /* little endian hosts */
static inline uint32_t sk_rd32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static inline uint64_t sk_xround(uint64_t acc, uint64_t in) { acc += in * SK_P2; acc = sk_rotl(acc, 31); return acc * SK_P1; }
static inline uint64_t sk_xmerge(uint64_t acc, uint64_t val) { acc ^= sk_xround(0, val); return acc * SK_P1 + SK_P4; }

static uint64_t sk_xxh64(const uint8_t *p, size_t len) {
    const uint8_t *end = p + len;
    uint64_t h;
    if (len >= 32) {
        uint64_t v1 = SK_P1 + SK_P2, v2 = SK_P2, v3 = 0, v4 = (uint64_t)0 - SK_P1;
        const uint8_t *limit = end - 32;
        do {
            v1 = sk_xround(v1, sk_rd64(p)); v2 = sk_xround(v2, sk_rd64(p + 8));
            v3 = sk_xround(v3, sk_rd64(p + 16)); v4 = sk_xround(v4, sk_rd64(p + 24));
            p += 32;
        } while (p <= limit);
        h = sk_rotl(v1, 1) + sk_rotl(v2, 7) + sk_rotl(v3, 12) + sk_rotl(v4, 18);
        h = sk_xmerge(h, v1); h = sk_xmerge(h, v2); h = sk_xmerge(h, v3); h = sk_xmerge(h, v4);
    } else {
        h = SK_P5;
    }
    h += (uint64_t)len;
    while (p + 8 <= end) { h ^= sk_xround(0, sk_rd64(p)); h = sk_rotl(h, 27) * SK_P1 + SK_P4; p += 8; }
    if (p + 4 <= end) { h ^= (uint64_t)sk_rd32(p) * SK_P1; h = sk_rotl(h, 23) * SK_P2 + SK_P3; p += 4; }
    while (p < end) { h ^= (*p) * SK_P5; h = sk_rotl(h, 11) * SK_P1; p++; }
    h ^= h >> 33; h *= SK_P2; h ^= h >> 29; h *= SK_P3; h ^= h >> 32;
    return h;
}

/* Zigzag varint of at most `max` bytes; 0 on success. */
static int sk_varint(const uint8_t **pp, const uint8_t *end, int max, int64_t *out) {
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

typedef struct {
    long long keyless, tombstones;
    int64_t min_ts; /* the smallest record timestamp that is not negative (have_min: there is one) */
    int have_min;
    Py_ssize_t marks; /* (register << 8 | rank) entries written */
} SketchSum;

/* Walk `count` records of data[0, len); each non-null key's HLL mark into marks[] (room for
 * `count`). A record's timestamp is base_ts plus its delta, wrapped to 64 bits as Java adds
 * (and kseg.log.decode); those below 0 are not counted, as the Python path leaves them out.
 * NULL when the section reads whole, else what did not (a short phrase). */
static const char *
sk_walk_v2(const uint8_t *q, Py_ssize_t len, Py_ssize_t count, int p, uint32_t *marks, int64_t base_ts,
           SketchSum *out)
{
    const uint8_t *end = q + len;
    const int shift = 64 - p;
    const uint64_t mask = (shift == 64) ? ~0ULL : (((uint64_t)1 << shift) - 1);
    memset(out, 0, sizeof *out);
    for (Py_ssize_t i = 0; i < count; i++) {
        int64_t rlen, tsd, od, klen, vlen, nh, hk, hv;
        if (sk_varint(&q, end, 5, &rlen) || rlen < 0 || rlen > end - q) return "record length";
        const uint8_t *rec_end = q + rlen;
        if (q >= rec_end) return "record attributes";
        q++; /* attributes */
        if (sk_varint(&q, rec_end, 10, &tsd) || sk_varint(&q, rec_end, 5, &od)) return "record deltas";
        const int64_t ts = (int64_t)((uint64_t)base_ts + (uint64_t)tsd);
        if (ts >= 0 && (!out->have_min || ts < out->min_ts)) { out->min_ts = ts; out->have_min = 1; }
        if (sk_varint(&q, rec_end, 5, &klen) || klen < -1 || klen > rec_end - q) return "key";
        const uint8_t *key = q;
        if (klen >= 0) q += klen;
        if (sk_varint(&q, rec_end, 5, &vlen) || vlen < -1 || vlen > rec_end - q) return "value";
        if (vlen >= 0) q += vlen;
        if (sk_varint(&q, rec_end, 5, &nh) || nh < 0) return "header count";
        for (int64_t h = 0; h < nh; h++) {
            if (sk_varint(&q, rec_end, 5, &hk) || hk < 0 || hk > rec_end - q) return "header key";
            q += hk;
            if (sk_varint(&q, rec_end, 5, &hv) || hv < -1 || hv > rec_end - q) return "header value";
            if (hv >= 0) q += hv;
        }
        if (q != rec_end) return "record length does not match its fields";
        if (klen < 0) {
            out->keyless++;
        } else {
            uint64_t hsh = sk_xxh64(key, (size_t)klen);
            uint64_t rest = hsh & mask;
            int bits = rest ? 64 - __builtin_clzll(rest) : 0;
            marks[out->marks++] = (uint32_t)(hsh >> shift) << 8 | (uint32_t)(shift - bits + 1);
            if (vlen < 0) out->tombstones++;
        }
    }
    if (q != end) return "records section has bytes left over";
    return NULL;
}

/* The marks of a walk that read whole, into the registers (each keeps its largest rank). */
static void
sk_apply(uint8_t *regs, const uint32_t *marks, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        uint32_t idx = marks[i] >> 8;
        uint8_t rank = (uint8_t)(marks[i] & 0xFF);
        if (rank > regs[idx]) regs[idx] = rank;
    }
}

#endif
