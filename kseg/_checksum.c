/* CRC-32C (Castagnoli; reflected polynomial 0x82F63B78, initial and final value 0xFFFFFFFF), the
 * checksum of v2 record batches and producer snapshots, as crc32c.crc32c(data) computes it; and
 * CRC-32, the checksum of v0/v1 messages, as zlib.crc32 (its code is kseg/_crc32.h).
 *
 *   crc32c(data) -> int            any bytes-like object (a memoryview into a segment: no copy)
 *   crc32c_portable(data) -> int   the table path only (for the tests, on any CPU)
 *   HARDWARE                       True when crc32c uses the CPU's crc32 instruction
 *   crc32(data, value=0) -> int    zlib.crc32(data, value)
 *   crc32_fast(on) -> bool         carry-less CRC-32 where the CPU has it, or tables only (tests)
 *
 * x86-64 CPUs with SSE4.2 (checked once, at import) run the crc32 instruction 8 bytes at a
 * time, over three parts of a large buffer at once; every other machine uses slice-by-8 tables, which read the data a byte at a time and
 * so do not depend on byte order or alignment. The GIL is released over large buffers.
 * kseg.checksums falls back to the crc32c package when this module is not built.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "_crc32.h"

#define POLY 0x82F63B78u
#define NOGIL_FROM ((Py_ssize_t)1 << 16) /* release the GIL for buffers from 64 KiB */

static uint32_t table[8][256];

static void
init_tables(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? (c >> 1) ^ POLY : c >> 1;
        table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            table[t][i] = (table[t - 1][i] >> 8) ^ table[0][table[t - 1][i] & 0xFF];
}

static uint32_t
crc_tables(uint32_t crc, const unsigned char *p, size_t n)
{
    while (n >= 8) {
        uint32_t lo = crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
        uint32_t hi = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24;
        crc = table[7][lo & 0xFF] ^ table[6][(lo >> 8) & 0xFF] ^ table[5][(lo >> 16) & 0xFF] ^ table[4][lo >> 24]
            ^ table[3][hi & 0xFF] ^ table[2][(hi >> 8) & 0xFF] ^ table[1][(hi >> 16) & 0xFF] ^ table[0][hi >> 24];
        p += 8;
        n -= 8;
    }
    while (n--)
        crc = table[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8);
    return crc;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <nmmintrin.h>
#define HAVE_SSE42 1

/* The crc32 instruction takes 3 cycles but can start one per cycle: large buffers run as
 * three streams of a block each, joined by "append so many zero bytes" operators (the CRC
 * register is linear: crc(A B) = zeros_|B|(crc(A)) ^ crc_from_0(B)), kept as byte tables. */
#define LONG 8192
#define SHORT 256

static uint32_t zeros_long[4][256], zeros_short[4][256];

static void
init_zeros(uint32_t zeros[4][256], size_t n)
{
    static const unsigned char nothing[LONG];
    uint32_t basis[32];
    for (int i = 0; i < 32; i++)
        basis[i] = crc_tables(1u << i, nothing, n); /* the operator's column for bit i */
    for (int k = 0; k < 4; k++)
        for (uint32_t b = 0; b < 256; b++) {
            uint32_t z = 0;
            for (int i = 0; i < 8; i++)
                if (b & (1u << i))
                    z ^= basis[8 * k + i];
            zeros[k][b] = z;
        }
}

static inline uint32_t
append_zeros(uint32_t zeros[4][256], uint32_t crc)
{
    return zeros[0][crc & 0xFF] ^ zeros[1][(crc >> 8) & 0xFF] ^ zeros[2][(crc >> 16) & 0xFF] ^ zeros[3][crc >> 24];
}

static inline uint64_t
load64(const unsigned char *p)
{
    uint64_t word;
    memcpy(&word, p, 8); /* unaligned load; x86-64 is little-endian, as the instruction expects */
    return word;
}

__attribute__((target("sse4.2"))) static uint32_t
crc_sse42(uint32_t crc, const unsigned char *p, size_t n)
{
    uint64_t c0 = crc;
    static const size_t blocks[2] = {LONG, SHORT};
    for (int level = 0; level < 2; level++) {
        size_t block = blocks[level];
        while (n >= 3 * block) {
            uint64_t c1 = 0, c2 = 0;
            const unsigned char *end = p + block;
            do {
                c0 = _mm_crc32_u64(c0, load64(p));
                c1 = _mm_crc32_u64(c1, load64(p + block));
                c2 = _mm_crc32_u64(c2, load64(p + 2 * block));
                p += 8;
            } while (p < end);
            uint32_t (*zeros)[256] = level == 0 ? zeros_long : zeros_short;
            c0 = append_zeros(zeros, (uint32_t)c0) ^ c1;
            c0 = append_zeros(zeros, (uint32_t)c0) ^ c2;
            p += 2 * block;
            n -= 3 * block;
        }
    }
    while (n >= 8) {
        c0 = _mm_crc32_u64(c0, load64(p));
        p += 8;
        n -= 8;
    }
    uint32_t c32 = (uint32_t)c0;
    while (n--)
        c32 = _mm_crc32_u8(c32, *p++);
    return c32;
}
#endif

typedef uint32_t (*crc_fn)(uint32_t, const unsigned char *, size_t);
static crc_fn best = crc_tables;

static PyObject *
compute(PyObject *arg, crc_fn fn)
{
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    uint32_t crc;
    if (view.len >= NOGIL_FROM) {
        Py_BEGIN_ALLOW_THREADS
        crc = fn(0xFFFFFFFFu, (const unsigned char *)view.buf, (size_t)view.len);
        Py_END_ALLOW_THREADS
    } else {
        crc = fn(0xFFFFFFFFu, (const unsigned char *)view.buf, (size_t)view.len);
    }
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(crc ^ 0xFFFFFFFFu);
}

static PyObject *
crc32c(PyObject *self, PyObject *arg)
{
    return compute(arg, best);
}

static PyObject *
crc32c_portable(PyObject *self, PyObject *arg)
{
    return compute(arg, crc_tables);
}

/* crc32(data, value=0) -> int: zlib.crc32(data, value), the CRC-32 of v0/v1 messages (kseg/_crc32.h). */
static PyObject *
crc32_of(PyObject *self, PyObject *args)
{
    Py_buffer view;
    unsigned int value = 0;
    if (!PyArg_ParseTuple(args, "y*|I", &view, &value))
        return NULL;
    uint32_t crc;
    if (view.len >= NOGIL_FROM) {
        Py_BEGIN_ALLOW_THREADS
        crc = crc32_update(~(uint32_t)value, (const unsigned char *)view.buf, (size_t)view.len);
        Py_END_ALLOW_THREADS
    } else {
        crc = crc32_update(~(uint32_t)value, (const unsigned char *)view.buf, (size_t)view.len);
    }
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(crc ^ 0xFFFFFFFFu);
}

/* crc32_fast(on) -> bool: carry-less CRC-32 where the CPU has it (the default), or the tables only
 * (for the tests, on any CPU); says whether carry-less multiplication is in use. */
static PyObject *
crc32_fast(PyObject *self, PyObject *on)
{
    int want = PyObject_IsTrue(on);
    if (want < 0)
        return NULL;
    return PyBool_FromLong(crc32_init(want));
}

static PyMethodDef methods[] = {
    {"crc32", crc32_of, METH_VARARGS, "CRC-32 of a bytes-like object (as zlib.crc32)."},
    {"crc32_fast", crc32_fast, METH_O, "Carry-less CRC-32 where the CPU has it (True, the default) or tables."},
    {"crc32c", crc32c, METH_O, "CRC-32C of a bytes-like object (as crc32c.crc32c)."},
    {"crc32c_portable", crc32c_portable, METH_O, "CRC-32C by tables only, whatever the CPU (for tests)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_checksum", "CRC-32C in C (see kseg.checksums).", -1, methods,
};

PyMODINIT_FUNC
PyInit__checksum(void)
{
    init_tables();
    crc32_init(1);
    int hardware = 0;
#ifdef HAVE_SSE42
    __builtin_cpu_init();
    if (__builtin_cpu_supports("sse4.2")) {
        init_zeros(zeros_long, LONG);
        init_zeros(zeros_short, SHORT);
        best = crc_sse42;
        hardware = 1;
    }
#endif
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    if (PyModule_AddObject(m, "HARDWARE", PyBool_FromLong(hardware)) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
