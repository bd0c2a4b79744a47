/*
 * CRC-32 (IEEE 802.3, zlib's and java.util.zip.CRC32's; reflected polynomial 0xEDB88320), the
 * checksum of v0/v1 messages. Included by kseg/_checksum.c (crc32() for whole entries), by
 * kseg/log/_speedups.c (inner messages of wrappers, runs of plain messages) and by
 * kseg/render/_format.c (each message, for the kafka lines' isValid): one code, compiled into each.
 *
 * crc32_update(state, data, n) takes and returns the running state (start 0xFFFFFFFF, invert at
 * the end). crc32_init() fills the tables and picks carry-less multiplication when the CPU has
 * PCLMULQDQ and SSE4.1 (Gopal et al., "Fast CRC Computation for Generic Polynomials Using
 * PCLMULQDQ Instruction", Intel, 2009, whose bit-reflected constants for this polynomial are used);
 * elsewhere slice-by-8 tables, which read bytes one at a time and so do not depend on byte order.
 */
#ifndef KSEG_CRC32_H
#define KSEG_CRC32_H
#include <stddef.h>
#include <stdint.h>

static uint32_t crc32_table[8][256];
static int crc32_use_clmul = 0;

static uint32_t crc32_slices(uint32_t crc, const unsigned char *s, size_t n) {
    while (n >= 8) {
        uint32_t lo = crc ^ ((uint32_t)s[0] | (uint32_t)s[1] << 8 | (uint32_t)s[2] << 16 | (uint32_t)s[3] << 24);
        uint32_t hi = (uint32_t)s[4] | (uint32_t)s[5] << 8 | (uint32_t)s[6] << 16 | (uint32_t)s[7] << 24;
        crc = crc32_table[7][lo & 0xFF] ^ crc32_table[6][(lo >> 8) & 0xFF] ^ crc32_table[5][(lo >> 16) & 0xFF] ^
              crc32_table[4][lo >> 24] ^ crc32_table[3][hi & 0xFF] ^ crc32_table[2][(hi >> 8) & 0xFF] ^
              crc32_table[1][(hi >> 16) & 0xFF] ^ crc32_table[0][hi >> 24];
        s += 8;
        n -= 8;
    }
    while (n-- > 0) crc = crc32_table[0][(crc ^ *s++) & 0xFF] ^ (crc >> 8);
    return crc;
}

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define KSEG_CRC32_CLMUL 1

/* Four 128-bit lanes folded 64 bytes at a time, then into one lane, then Barrett-reduced to 32 bits.
 * ``n`` is a multiple of 16, at least 64. */
__attribute__((target("pclmul,sse4.1"))) static uint32_t crc32_clmul(uint32_t crc, const unsigned char *s,
                                                                     size_t n) {
    const __m128i fold4 = _mm_set_epi64x(0x01c6e41596LL, 0x0154442bd4LL);  /* x^(512+32), x^(512-32) mod P */
    const __m128i fold1 = _mm_set_epi64x(0x00ccaa009eLL, 0x01751997d0LL);  /* x^(128+32), x^(128-32) mod P */
    const __m128i fold64 = _mm_set_epi64x(0, 0x0163cd6124LL);              /* x^64 mod P */
    const __m128i barrett = _mm_set_epi64x(0x01f7011641LL, 0x01db710641LL); /* mu, P */
    const __m128i low32 = _mm_setr_epi32(~0, 0, ~0, 0);
    __m128i a = _mm_loadu_si128((const __m128i *)s), b = _mm_loadu_si128((const __m128i *)(s + 16)),
            c = _mm_loadu_si128((const __m128i *)(s + 32)), d = _mm_loadu_si128((const __m128i *)(s + 48));
    a = _mm_xor_si128(a, _mm_cvtsi32_si128((int)crc));
    s += 64;
    n -= 64;
#define KSEG_FOLD(x, k, next) _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128((x), (k), 0x00), \
                                                          _mm_clmulepi64_si128((x), (k), 0x11)), (next))
    for (; n >= 64; s += 64, n -= 64) {
        a = KSEG_FOLD(a, fold4, _mm_loadu_si128((const __m128i *)s));
        b = KSEG_FOLD(b, fold4, _mm_loadu_si128((const __m128i *)(s + 16)));
        c = KSEG_FOLD(c, fold4, _mm_loadu_si128((const __m128i *)(s + 32)));
        d = KSEG_FOLD(d, fold4, _mm_loadu_si128((const __m128i *)(s + 48)));
    }
    a = KSEG_FOLD(a, fold1, b);
    a = KSEG_FOLD(a, fold1, c);
    a = KSEG_FOLD(a, fold1, d);
    for (; n >= 16; s += 16, n -= 16) a = KSEG_FOLD(a, fold1, _mm_loadu_si128((const __m128i *)s));
#undef KSEG_FOLD
    /* 128 -> 64 bits, then 64 -> 32 */
    a = _mm_xor_si128(_mm_srli_si128(a, 8), _mm_clmulepi64_si128(a, fold1, 0x10));
    a = _mm_xor_si128(_mm_srli_si128(a, 4), _mm_clmulepi64_si128(_mm_and_si128(a, low32), fold64, 0x00));
    /* Barrett reduction */
    __m128i t = _mm_clmulepi64_si128(_mm_and_si128(a, low32), barrett, 0x10);
    t = _mm_clmulepi64_si128(_mm_and_si128(t, low32), barrett, 0x00);
    return (uint32_t)_mm_extract_epi32(_mm_xor_si128(a, t), 1);
}
#endif

static uint32_t crc32_update(uint32_t crc, const unsigned char *s, size_t n) {
#ifdef KSEG_CRC32_CLMUL
    if (crc32_use_clmul && n >= 64) {
        size_t whole = n & ~(size_t)15;
        crc = crc32_clmul(crc, s, whole);
        s += whole;
        n -= whole;
    }
#endif
    return crc32_slices(crc, s, n);
}

/* Fill the tables; with ``fast``, use carry-less multiplication where the CPU has it. Returns
 * whether it is in use. */
static int crc32_init(int fast) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc32_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            crc32_table[t][i] = (crc32_table[t - 1][i] >> 8) ^ crc32_table[0][crc32_table[t - 1][i] & 0xFF];
#ifdef KSEG_CRC32_CLMUL
    __builtin_cpu_init();
    crc32_use_clmul = fast && __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
#else
    (void)fast;
#endif
    return crc32_use_clmul;
}

#endif
