/* kseg.log._sketch: the hot loop of `kseg stats`, in C.
 *
 * v2_stats(records, count, registers, p, base_timestamp) walks a v2 batch's (decompressed)
 * records section without building Record objects and returns (keyless, tombstones, smallest
 * record timestamp that is not negative, or None); every non-null key is added
 * to a HyperLogLog held in `registers` (a bytearray of 2**p bytes) with the same hash
 * and rank as kseg.ops.stats.HyperLogLog (XXH64, seed 0). Malformed records raise
 * ValueError and change no register: the caller then takes the checked Python path, which
 * names the problem. The walk and the sketch are _sketch.h's, which stats_v2_run shares.
 * xxh64(data) is exposed for the tests (it must equal xxhash.xxh64_intdigest).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "_sketch.h"

static PyObject *bad(const char *what) {
    PyErr_SetString(PyExc_ValueError, what);
    return NULL;
}

static PyObject *v2_stats(PyObject *self, PyObject *args) {
    Py_buffer data, regs;
    Py_ssize_t count;
    int p;
    long long base_ts;
    if (!PyArg_ParseTuple(args, "y*nw*iL", &data, &count, &regs, &p, &base_ts)) return NULL;
    PyObject *result = NULL;
    uint32_t *marks = NULL;
    if (p < 4 || p > 18 || regs.len != ((Py_ssize_t)1 << p)) {
        bad("registers must be 2**p bytes");
        goto done;
    }
    /* Every record takes at least one byte: a count above the section's size fails the walk. */
    if (count < 0 || count > data.len) {
        bad("record count");
        goto done;
    }
    marks = PyMem_Malloc((size_t)(count ? count : 1) * sizeof *marks);
    if (!marks) {
        PyErr_NoMemory();
        goto done;
    }
    SketchSum sum;
    const char *why = sk_walk_v2(data.buf, data.len, count, p, marks, (int64_t)base_ts, &sum);
    if (why) {
        bad(why);
        goto done;
    }
    sk_apply(regs.buf, marks, sum.marks);
    if (sum.have_min)
        result = Py_BuildValue("(LLL)", sum.keyless, sum.tombstones, (long long)sum.min_ts);
    else
        result = Py_BuildValue("(LLO)", sum.keyless, sum.tombstones, Py_None);
done:
    PyMem_Free(marks);
    PyBuffer_Release(&data);
    PyBuffer_Release(&regs);
    return result;
}

static PyObject *py_xxh64(PyObject *self, PyObject *args) {
    Py_buffer data;
    if (!PyArg_ParseTuple(args, "y*", &data)) return NULL;
    uint64_t h = sk_xxh64(data.buf, (size_t)data.len);
    PyBuffer_Release(&data);
    return PyLong_FromUnsignedLongLong(h);
}

static PyMethodDef methods[] = {
    {"v2_stats", v2_stats, METH_VARARGS, "keyless, tombstones, min timestamp (not negative) of a v2 records section; keys into an HLL"},
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
