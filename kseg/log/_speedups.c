/*
 * Optional accelerator for kseg's hot loops. Every function here has a
 * pure-Python twin, which is the reference: tests/test_accelerator.py feeds both
 * the fixtures, the real segments and random bytes and requires the same results
 * and the same errors (kind and byte position). If this module is not built (or
 * KSEG_PURE_PYTHON=1), kseg runs the Python twins. Each function and its twin
 * (tests/test_accelerator.py checks this table against the method table below
 * and the Python names):
 *
 *   C function               Python twin
 *   decode_v2                kseg.log.decode.decode_v2_records
 *   scan                     kseg.log.decode.scan_entries
 *   legacy_record            kseg.log.decode.legacy_record
 *   legacy_batch_record      kseg.log.decode.legacy_record
 *   legacy_set               kseg.log.decode.decode_legacy_wrapper
 *   legacy_crc_mismatches    kseg.log.fast.legacy_crc_mismatches
 *   encode_v2_records        kseg.log.encode.encode_v2_records_py
 *   encode_legacy_messages   kseg.log.encode.build_legacy_message_set_py
 *   plain_spans              kseg.log.decode.legacy_record
 *   resync                   kseg.log.salvage_scan.find_candidate
 *   span_columns             kseg.log.span_columns.span_columns_py
 *   sound_v2_run             kseg.log.checks.sound_v2_run_py
 *   stats_v2_run             kseg.log.checks.stats_v2_run_py
 *   v2_header_run            kseg.log.records.v2_header_run_py
 *   v2_record_run            kseg.log.records.v2_record_run_py
 *   lz4_frame_bytes          kseg.codecs.kafka_lz4._kafka_frame
 *   index_sound              kseg.companions.check.index_sound_py
 *   v2_column_run            kseg.log.span_columns.v2_column_run_py
 *   entry_starts             kseg.log.entry_walk.entry_starts_py
 *
 * (decode_v2 and legacy_set also give record spans, _spans.h, for the dump's line
 * writers: their reference is the records the same call decodes; plain_spans the
 * record legacy_record makes of each message of the run.)
 *
 * Errors are raised as _speedups.DecodeError(kind, message, position, index,
 * expected, found); kseg/log/fast.py turns them into kseg errors.
 *
 * Nothing about the formats or kseg's objects is written here: kseg/log/fast.py
 * passes the positions, sizes and masks from the schemas
 * (kseg.layouts.accelerator_layout) to configure(), and the field order of
 * kseg.model's Batch, Record and Header to configure_fields(), at import; every
 * function refuses to run before both.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <limits.h>
#include <string.h>
#include <errno.h>
#include <unistd.h>

#include "_spans.h"
#include "_sketch.h"
#include "../_crc32.h"
#include "../_sequence.h"

static PyObject *DecodeError;

/* ------------------------------------------------------------ the layout */

static int LOG_OVERHEAD, PREFIX_SIZE, SIZE_AT, MAGIC_AT, MIN_SIZE_V0, MIN_SIZE_V1, MIN_SIZE_V2;
static int LEGACY_CRC_AT, LEGACY_CRC_START, LEGACY_ATTRS_AT, V1_TS_AT, V0_KEY_LEN_AT, V1_KEY_LEN_AT;
static int V2_PLE_AT, V2_CRC_AT, V2_ATTRS_AT, V2_LOD_AT, V2_BASE_TS_AT, V2_MAX_TS_AT, V2_PID_AT,
    V2_EPOCH_AT, V2_SEQ_AT, V2_COUNT_AT, V2_CRC_START, V2_RECORDS_AT, CODEC_MASK;
static int MAX_VARINT_BYTES_SEEN, MAX_VARLONG_BYTES_SEEN;
static int configured = 0;

/* The varint loops keep their bounds as compile-time constants (they are the hot
 * path); configure() checks them against the schema's. */
#define VARINT_BYTES 5
#define VARLONG_BYTES 10

static const struct { const char *name; int *slot; } layout_slots[] = {
    {"log_overhead", &LOG_OVERHEAD}, {"prefix_size", &PREFIX_SIZE}, {"size_at", &SIZE_AT},
    {"magic_at", &MAGIC_AT}, {"min_size_v0", &MIN_SIZE_V0}, {"min_size_v1", &MIN_SIZE_V1},
    {"min_size_v2", &MIN_SIZE_V2}, {"legacy_crc_at", &LEGACY_CRC_AT}, {"legacy_crc_start", &LEGACY_CRC_START},
    {"legacy_attributes_at", &LEGACY_ATTRS_AT}, {"v1_timestamp_at", &V1_TS_AT},
    {"v0_key_length_at", &V0_KEY_LEN_AT}, {"v1_key_length_at", &V1_KEY_LEN_AT},
    {"v2_leader_epoch_at", &V2_PLE_AT}, {"v2_crc_at", &V2_CRC_AT}, {"v2_attributes_at", &V2_ATTRS_AT},
    {"v2_last_offset_delta_at", &V2_LOD_AT}, {"v2_base_timestamp_at", &V2_BASE_TS_AT},
    {"v2_max_timestamp_at", &V2_MAX_TS_AT}, {"v2_producer_id_at", &V2_PID_AT},
    {"v2_producer_epoch_at", &V2_EPOCH_AT}, {"v2_base_sequence_at", &V2_SEQ_AT},
    {"v2_record_count_at", &V2_COUNT_AT}, {"v2_crc_start", &V2_CRC_START}, {"v2_records_at", &V2_RECORDS_AT},
    {"codec_mask", &CODEC_MASK},
    {"max_varint_bytes", &MAX_VARINT_BYTES_SEEN}, {"max_varlong_bytes", &MAX_VARLONG_BYTES_SEEN},
};
#define N_LAYOUT_SLOTS ((Py_ssize_t)(sizeof layout_slots / sizeof layout_slots[0]))

/* configure(**layout): every name of layout_slots, each a small non-negative int, nothing else. */
static PyObject *
configure(PyObject *self, PyObject *args, PyObject *kwargs)
{
    int values[N_LAYOUT_SLOTS];
    if (PyTuple_GET_SIZE(args) != 0 || kwargs == NULL || PyDict_GET_SIZE(kwargs) != N_LAYOUT_SLOTS) {
        PyErr_Format(PyExc_TypeError, "configure() takes exactly the %zd layout names as keywords", N_LAYOUT_SLOTS);
        return NULL;
    }
    for (Py_ssize_t k = 0; k < N_LAYOUT_SLOTS; k++) {
        PyObject *v = PyDict_GetItemString(kwargs, layout_slots[k].name);
        if (v == NULL) { PyErr_Format(PyExc_TypeError, "configure() needs %s", layout_slots[k].name); return NULL; }
        long n = PyLong_AsLong(v);
        if (n == -1 && PyErr_Occurred()) return NULL;
        if (n < 0 || n > 1 << 16) { PyErr_Format(PyExc_ValueError, "%s out of range: %ld", layout_slots[k].name, n); return NULL; }
        values[k] = (int)n;
    }
    for (Py_ssize_t k = 0; k < N_LAYOUT_SLOTS; k++) {
        int want = layout_slots[k].slot == &MAX_VARINT_BYTES_SEEN ? VARINT_BYTES
                 : layout_slots[k].slot == &MAX_VARLONG_BYTES_SEEN ? VARLONG_BYTES : values[k];
        if (values[k] != want) {
            PyErr_Format(PyExc_ValueError, "%s is %d, built with %d", layout_slots[k].name, values[k], want);
            return NULL;
        }
    }
    for (Py_ssize_t k = 0; k < N_LAYOUT_SLOTS; k++) *layout_slots[k].slot = values[k];
    configured = 1;
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------ the field order */

/* Where kseg.model.Batch, Record and Header keep each field, from configure_fields(): the
 * tuples made here are instances of those NamedTuples, filled by name, never by a number
 * written here. */
static Py_ssize_t B_POSITION, B_SIZE, B_MAGIC, B_BASE_OFFSET, B_CRC, B_ATTRS, B_MAX_TS, B_RAW, B_PLE, B_LOD,
    B_BASE_TS, B_PID, B_EPOCH, B_SEQ, B_COUNT, N_BATCH_FIELDS;
static Py_ssize_t R_OFFSET, R_TIMESTAMP, R_KEY, R_VALUE, R_HEADERS, R_STORED_TS, R_ATTRS, R_MAGIC, R_CRC,
    N_RECORD_FIELDS;
static Py_ssize_t H_KEY, H_VALUE, N_HEADER_FIELDS;
static int fields_configured = 0;

typedef struct { const char *name; Py_ssize_t *slot; } FieldSlot;
static const FieldSlot batch_slots[] = {
    {"position", &B_POSITION}, {"size", &B_SIZE}, {"magic", &B_MAGIC}, {"base_offset", &B_BASE_OFFSET},
    {"crc", &B_CRC}, {"attributes", &B_ATTRS}, {"max_timestamp", &B_MAX_TS}, {"raw", &B_RAW},
    {"partition_leader_epoch", &B_PLE}, {"last_offset_delta", &B_LOD}, {"base_timestamp", &B_BASE_TS},
    {"producer_id", &B_PID}, {"producer_epoch", &B_EPOCH}, {"base_sequence", &B_SEQ},
    {"record_count", &B_COUNT},
};
static const FieldSlot record_slots[] = {
    {"offset", &R_OFFSET}, {"timestamp", &R_TIMESTAMP}, {"key", &R_KEY}, {"value", &R_VALUE},
    {"headers", &R_HEADERS}, {"stored_timestamp", &R_STORED_TS}, {"attributes", &R_ATTRS},
    {"magic", &R_MAGIC}, {"crc", &R_CRC},
};
static const FieldSlot header_slots[] = {{"key", &H_KEY}, {"value", &H_VALUE}};
/* The Batch fields only v2 has (None in a v0/v1 batch). */
static Py_ssize_t *const v2_only[] = {&B_PLE, &B_LOD, &B_BASE_TS, &B_PID, &B_EPOCH, &B_SEQ, &B_COUNT};
#define N_V2_ONLY ((int)(sizeof v2_only / sizeof v2_only[0]))
#define N_SLOTS(a) ((Py_ssize_t)(sizeof(a) / sizeof((a)[0])))

/* Each name of ``slots`` at its index in ``fields`` (a NamedTuple's _fields), which holds exactly
 * those names: every item of a tuple made here is set, so a field C does not know is an error. */
static int
place_fields(const char *type, PyObject *fields, const FieldSlot *slots, Py_ssize_t n, Py_ssize_t *count)
{
    if (!PyTuple_Check(fields) || PyTuple_GET_SIZE(fields) != n) {
        PyErr_Format(PyExc_ValueError, "%s must have exactly the %zd fields this module fills", type, n);
        return -1;
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        *slots[k].slot = -1;
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *f = PyTuple_GET_ITEM(fields, i);
            if (PyUnicode_Check(f) && PyUnicode_CompareWithASCIIString(f, slots[k].name) == 0) *slots[k].slot = i;
        }
        if (*slots[k].slot < 0) {
            PyErr_Format(PyExc_ValueError, "%s has no field %s", type, slots[k].name);
            return -1;
        }
    }
    *count = n;
    return 0;
}

/* configure_fields(Batch._fields, Record._fields, Header._fields) */
static PyObject *
configure_fields(PyObject *self, PyObject *args)
{
    PyObject *batch, *record, *header;
    if (!PyArg_ParseTuple(args, "OOO", &batch, &record, &header)) return NULL;
    fields_configured = 0;
    if (place_fields("Batch", batch, batch_slots, N_SLOTS(batch_slots), &N_BATCH_FIELDS) < 0
        || place_fields("Record", record, record_slots, N_SLOTS(record_slots), &N_RECORD_FIELDS) < 0
        || place_fields("Header", header, header_slots, N_SLOTS(header_slots), &N_HEADER_FIELDS) < 0)
        return NULL;
    fields_configured = 1;
    Py_RETURN_NONE;
}

#define REQUIRE_CONFIGURED                                                                           \
    do {                                                                                             \
        if (!configured || !fields_configured) {                                                     \
            PyErr_SetString(PyExc_RuntimeError, "kseg.log._speedups: configure() and configure_fields() first"); \
            return NULL;                                                                             \
        }                                                                                            \
    } while (0)

static inline int32_t
min_size_of(int magic)
{
    return magic == 0 ? MIN_SIZE_V0 : magic == 1 ? MIN_SIZE_V1 : magic == 2 ? MIN_SIZE_V2 : -1;
}

static PyObject *
fail(const char *kind, const char *message, Py_ssize_t position, Py_ssize_t index,
     PyObject *expected, PyObject *found)
{
    PyObject *args;
    if (expected == NULL) { expected = Py_None; Py_INCREF(Py_None); }
    if (found == NULL) { found = Py_None; Py_INCREF(Py_None); }
    args = Py_BuildValue("(ssnnNN)", kind, message, position, index, expected, found);
    if (args) {
        PyErr_SetObject(DecodeError, args);
        Py_DECREF(args);
    }
    return NULL;
}

/* Unsigned LEB128; returns 0 on success, 1 = too long, 2 = past the end. */
static inline int
uvarint(const unsigned char *p, Py_ssize_t end, Py_ssize_t *pos, int max_bytes, uint64_t *out)
{
    uint64_t value = 0;
    int shift = 0;
    Py_ssize_t i = *pos;
    for (int n = 0; n < max_bytes; n++) {
        if (i >= end) { *pos = i; return 2; }
        unsigned char b = p[i++];
        value |= (uint64_t)(b & 0x7F) << shift;
        if (b < 0x80) { *pos = i; *out = value; return 0; }
        shift += 7;
    }
    return 1;
}

static inline int64_t
zigzag(uint64_t u)
{
    return (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
}

#define READ(maxb, dst)                                                        \
    do {                                                                       \
        Py_ssize_t at_ = pos;                                                  \
        uint64_t u_;                                                           \
        int rc_ = 0;                                                           \
        if (pos < end && p[pos] < 0x80) /* one byte: most lengths and deltas */ \
            u_ = p[pos++];                                                     \
        else                                                                   \
            rc_ = uvarint(p, end, &pos, (maxb), &u_);                          \
        if (rc_ == 1) {                                                        \
            fail("varint", "varint too long", at_, i,                          \
                 PyUnicode_FromFormat("at most %d bytes", (maxb)),             \
                 PyUnicode_FromFormat("more than %d", (maxb)));                \
            goto error;                                                        \
        }                                                                      \
        if (rc_ == 2) {                                                        \
            if (at_ >= end)                                                    \
                fail("corrupt", "record runs past the end of the records",     \
                     at_, i, NULL, NULL);                                      \
            else                                                               \
                fail("varint", "varint runs past the end of the data", pos, i, \
                     NULL, NULL);                                              \
            goto error;                                                        \
        }                                                                      \
        if ((maxb) == VARINT_BYTES) u_ &= 0xFFFFFFFFu;                                    \
        dst = zigzag(u_);                                                      \
    } while (0)

/* An instance of a tuple subclass (a NamedTuple), allocated as tuple.__new__ does. */
static inline PyObject *
new_tuple(PyObject *type, Py_ssize_t n)
{
    return ((PyTypeObject *)type)->tp_alloc((PyTypeObject *)type, n);
}

static PyObject *
nullable(const unsigned char *p, Py_ssize_t *pos, int64_t len)
{
    if (len < 0) { Py_RETURN_NONE; }
    PyObject *b = PyBytes_FromStringAndSize((const char *)p + *pos, (Py_ssize_t)len);
    *pos += (Py_ssize_t)len;
    return b;
}

/* A growable array of spans, handed to Python as one bytes object. */
typedef struct {
    char *p;
    Py_ssize_t n, cap; /* bytes */
} SpanBuf;

static void *
span_add(SpanBuf *b, Py_ssize_t size)
{
    if (b->n + size > b->cap) {
        Py_ssize_t cap = b->cap ? b->cap * 2 : 64 * size;
        while (cap < b->n + size) cap *= 2;
        char *q = PyMem_Realloc(b->p, (size_t)cap);
        if (!q) { PyErr_NoMemory(); return NULL; }
        b->p = q;
        b->cap = cap;
    }
    void *at = b->p + b->n;
    memset(at, 0, (size_t)size);
    b->n += size;
    return at;
}

static PyObject *
span_bytes(SpanBuf *b)
{
    PyObject *o = PyBytes_FromStringAndSize(b->p ? b->p : "", b->n);
    PyMem_Free(b->p);
    b->p = NULL;
    b->n = b->cap = 0;
    return o;
}

/* What the check-only walk of v2 records learns (decode_v2 with record_type None). */
typedef struct {
    int64_t max_ts, min_delta, max_delta;
    int have_ts, ordered;
} V2Summary;

/*
 * The walk of a v2 records section: every record's varints, lengths, offset and timestamp
 * deltas and headers checked, in one pass, without a Python object per record unless asked.
 * Makes the list of records (record_type given, spans 0), the spans (spans 1: a tuple of the
 * records' and headers' spans and the first offset) or, with record_type None, fills *summary
 * and returns None. An error is a DecodeError (NULL returned).
 */
static PyObject *
walk_v2(const unsigned char *p, Py_ssize_t end, long long base_offset, long long base_ts, Py_ssize_t count,
        int has_lat, long long lat, PyObject *record_type, PyObject *header_type, int spans, V2Summary *summary,
        SpanBuf *rout, SpanBuf *hout)
{
    Py_ssize_t pos = 0, i = 0;
    int materialize = record_type != Py_None && !spans;
    SpanBuf rlocal = {0}, hlocal = {0};
    SpanBuf *rspans = rout ? rout : &rlocal, *hspans = hout ? hout : &hlocal;
    KsegRecordSpan *rs = NULL;
    PyObject *out = NULL, *empty = NULL, *two = NULL;
    int64_t max_ts = 0, min_delta = 0, max_delta = 0, prev_delta = -1;
    int have_ts = 0, ordered = 1;

    if (count < 0) {
        fail("corrupt", "negative record count", -1, -1, PyUnicode_FromString(">= 0"),
             PyLong_FromSsize_t(count));
        goto error;
    }
    if (materialize) {
        out = PyList_New(0);
        empty = PyTuple_New(0);
        two = PyLong_FromLong(2);
        if (!out || !empty || !two) goto error;
    }
    for (i = 0; i < count; i++) {
        Py_ssize_t start = pos;
        int64_t length, ts_delta, off_delta, klen, vlen, hcount;
        READ(VARINT_BYTES, length);
        if (length < 0) {
            fail("corrupt", "negative record length", start, i, NULL, PyLong_FromLongLong(length));
            goto error;
        }
        Py_ssize_t rec_end = pos + (Py_ssize_t)length;
        if (rec_end > end) {
            fail("corrupt", "record runs past the end of the records", start, i,
                 PyUnicode_FromFormat("<= %zd bytes", end - pos),
                 PyUnicode_FromFormat("%lld bytes", (long long)length));
            goto error;
        }
        if (pos >= end) {
            fail("corrupt", "record runs past the end of the records", pos, i, NULL, NULL);
            goto error;
        }
        unsigned char attrs = p[pos++];
        READ(VARLONG_BYTES, ts_delta);
        READ(VARINT_BYTES, off_delta);
        Py_ssize_t len_at = pos;
        READ(VARINT_BYTES, klen);
        if (klen < -1) {
            fail("corrupt", "invalid key length", pos, i, NULL, PyLong_FromLongLong(klen));
            goto error;
        }
        if (klen >= 0 && pos + klen > rec_end) {
            fail("corrupt", "key runs past its record", len_at, i, PyUnicode_FromFormat("<= %zd bytes", rec_end - pos),
                 PyUnicode_FromFormat("%lld bytes", (long long)klen));
            goto error;
        }
        Py_ssize_t key_at = pos;
        if (klen > 0) pos += (Py_ssize_t)klen;
        len_at = pos;
        READ(VARINT_BYTES, vlen);
        if (vlen < -1) {
            fail("corrupt", "invalid value length", pos, i, NULL, PyLong_FromLongLong(vlen));
            goto error;
        }
        if (vlen >= 0 && pos + vlen > rec_end) {
            fail("corrupt", "value runs past its record", len_at, i,
                 PyUnicode_FromFormat("<= %zd bytes", rec_end - pos),
                 PyUnicode_FromFormat("%lld bytes", (long long)vlen));
            goto error;
        }
        Py_ssize_t value_at = pos;
        if (vlen > 0) pos += (Py_ssize_t)vlen;
        if (spans) {
            rs = span_add(rspans, sizeof(KsegRecordSpan));
            if (!rs) goto error;
            rs->key_at = key_at;
            rs->key_len = klen;
            rs->value_at = value_at;
            rs->value_len = vlen;
            rs->first_header = hspans->n / (Py_ssize_t)sizeof(KsegHeaderSpan);
            rs->stored_crc = -1;
        }
        PyObject *headers = NULL;
        if (pos < end && p[pos] == 0) {
            pos++;
            if (materialize) { headers = empty; Py_INCREF(empty); }
        } else {
            Py_ssize_t hc_at = pos;
            READ(VARINT_BYTES, hcount);
            if (hcount < 0 || hcount > rec_end - pos) {
                fail("corrupt", "invalid header count", hc_at + (pos - hc_at), i,
                     PyUnicode_FromFormat("0..%zd", rec_end - pos > 0 ? rec_end - pos : 0),
                     PyLong_FromLongLong(hcount));
                goto error;
            }
            if (materialize) {
                headers = PyTuple_New((Py_ssize_t)hcount);
                if (!headers) goto error;
            }
            for (int64_t h = 0; h < hcount; h++) {
                int64_t hk, hv;
                READ(VARINT_BYTES, hk);
                if (hk < 0) {
                    Py_XDECREF(headers);
                    fail("corrupt", "header key is null or negative", pos, i,
                         PyUnicode_FromString(">= 0"), PyLong_FromLongLong(hk));
                    goto error;
                }
                if (pos + hk > rec_end) {
                    Py_XDECREF(headers);
                    fail("corrupt", "header key runs past its record", pos, i, NULL, NULL);
                    goto error;
                }
                Py_ssize_t hk_at = pos;
                pos += (Py_ssize_t)hk;
                READ(VARINT_BYTES, hv);
                if (hv < -1) {
                    Py_XDECREF(headers);
                    fail("corrupt", "invalid header value length", pos, i, NULL, PyLong_FromLongLong(hv));
                    goto error;
                }
                if (hv >= 0 && pos + hv > rec_end) {
                    Py_XDECREF(headers);
                    fail("corrupt", "header value runs past its record", pos, i, NULL, NULL);
                    goto error;
                }
                if (materialize) {
                    PyObject *k = PyUnicode_DecodeUTF8((const char *)p + hk_at, (Py_ssize_t)hk, "surrogateescape");
                    PyObject *v = nullable(p, &pos, hv);
                    PyObject *pair = (k && v) ? new_tuple(header_type, N_HEADER_FIELDS) : NULL;
                    if (!pair) { Py_XDECREF(k); Py_XDECREF(v); Py_DECREF(headers); goto error; }
                    PyTuple_SET_ITEM(pair, H_KEY, k);
                    PyTuple_SET_ITEM(pair, H_VALUE, v);
                    PyTuple_SET_ITEM(headers, (Py_ssize_t)h, pair);
                } else {
                    if (spans) {
                        KsegHeaderSpan *hs = span_add(hspans, sizeof(KsegHeaderSpan));
                        if (!hs) goto error;
                        hs->key_at = hk_at;
                        hs->key_len = hk;
                        hs->value_at = pos;
                        hs->value_len = hv;
                        rs->header_count++;
                    }
                    if (hv > 0) pos += (Py_ssize_t)hv;
                }
            }
        }
        if (pos != rec_end) {
            Py_XDECREF(headers);
            fail("corrupt", "record length does not match its fields", start, i,
                 PyUnicode_FromFormat("record to end at byte %zd", rec_end),
                 PyUnicode_FromFormat("fields end at byte %zd", pos));
            goto error;
        }
        int64_t ts = (int64_t)((uint64_t)base_ts + (uint64_t)ts_delta); /* Java long wrap */
        if (spans) {
            rs->offset = (int64_t)((uint64_t)base_offset + (uint64_t)off_delta);
            rs->timestamp = has_lat ? lat : ts;
        } else if (materialize) {
            PyObject *rec = new_tuple(record_type, N_RECORD_FIELDS);
            if (!rec) { Py_DECREF(headers); goto error; }
            PyObject *key = klen < 0 ? (Py_INCREF(Py_None), Py_None)
                                     : PyBytes_FromStringAndSize((const char *)p + key_at, (Py_ssize_t)klen);
            PyObject *value = vlen < 0 ? (Py_INCREF(Py_None), Py_None)
                                       : PyBytes_FromStringAndSize((const char *)p + value_at, (Py_ssize_t)vlen);
            PyTuple_SET_ITEM(rec, R_OFFSET, PyLong_FromLongLong((int64_t)((uint64_t)base_offset + (uint64_t)off_delta)));
            PyTuple_SET_ITEM(rec, R_TIMESTAMP, PyLong_FromLongLong(has_lat ? lat : ts));
            PyTuple_SET_ITEM(rec, R_KEY, key);
            PyTuple_SET_ITEM(rec, R_VALUE, value);
            PyTuple_SET_ITEM(rec, R_HEADERS, headers);
            PyTuple_SET_ITEM(rec, R_STORED_TS, PyLong_FromLongLong(ts));
            PyTuple_SET_ITEM(rec, R_ATTRS, PyLong_FromLong(attrs));
            Py_INCREF(two);
            PyTuple_SET_ITEM(rec, R_MAGIC, two);
            Py_INCREF(Py_None);
            PyTuple_SET_ITEM(rec, R_CRC, Py_None);
            if (PyList_Append(out, rec) < 0) { Py_DECREF(rec); goto error; }
            Py_DECREF(rec);
        } else {
            if (!have_ts || ts > max_ts) max_ts = ts;
            if (!have_ts) { min_delta = max_delta = off_delta; }
            if (have_ts && off_delta <= prev_delta) ordered = 0;
            if (off_delta < min_delta) min_delta = off_delta;
            if (off_delta > max_delta) max_delta = off_delta;
            prev_delta = off_delta;
            have_ts = 1;
        }
    }
    if (pos != end) {
        fail("corrupt", "records still remaining after the declared record count", pos, -1,
             PyUnicode_FromFormat("%zd records using %zd bytes", count, pos),
             PyUnicode_FromFormat("%zd more bytes", end - pos));
        goto error;
    }
    Py_XDECREF(empty);
    Py_XDECREF(two);
    if (spans && rout) Py_RETURN_NONE; /* the caller's buffers hold them */
    if (spans) {
        long long first = rlocal.n ? ((KsegRecordSpan *)rlocal.p)->offset : base_offset;
        PyObject *r = span_bytes(&rlocal), *h = span_bytes(&hlocal);
        return (r && h) ? Py_BuildValue("(NNL)", r, h, first) : (Py_XDECREF(r), Py_XDECREF(h), NULL);
    }
    if (materialize) return out;
    summary->max_ts = max_ts;
    summary->min_delta = min_delta;
    summary->max_delta = max_delta;
    summary->have_ts = have_ts;
    summary->ordered = ordered;
    Py_RETURN_NONE;
error:
    Py_XDECREF(out);
    Py_XDECREF(empty);
    Py_XDECREF(two);
    PyMem_Free(rlocal.p);
    PyMem_Free(hlocal.p);
    return NULL;
}

/*
 * decode_v2(data, base_offset, base_timestamp, count, log_append_time, record_type, header_type, spans=False)
 *   -> list of records, or, with record_type None, a summary tuple
 *      (max_stored_timestamp or None, offsets_in_order, min_delta, max_delta)
 *      computed without building any object (the verify path); with spans, the records'
 *      and headers' spans (_spans.h) as two bytes objects and the first record's offset, for
 *      lines written straight from the data (the dump path). The checks and errors are the same in every mode.
 */
static PyObject *
decode_v2(PyObject *self, PyObject *args)
{
    Py_buffer view;
    long long base_offset, base_ts;
    Py_ssize_t count;
    PyObject *lat_obj, *record_type, *header_type;
    int spans = 0;
    V2Summary sum;
    REQUIRE_CONFIGURED;
    if (!PyArg_ParseTuple(args, "y*LLnOOO|p", &view, &base_offset, &base_ts, &count, &lat_obj,
                          &record_type, &header_type, &spans))
        return NULL;
    int has_lat = lat_obj != Py_None;
    long long lat = has_lat ? PyLong_AsLongLong(lat_obj) : 0;
    if (lat == -1 && PyErr_Occurred()) { PyBuffer_Release(&view); return NULL; }
    PyObject *out = walk_v2((const unsigned char *)view.buf, view.len, base_offset, base_ts, count, has_lat, lat,
                            record_type, header_type, spans, &sum, NULL, NULL);
    PyBuffer_Release(&view);
    if (out == NULL || record_type != Py_None || spans) return out;
    Py_DECREF(out);
    if (!sum.have_ts) return Py_BuildValue("(OOLL)", Py_None, Py_True, (long long)0, (long long)0);
    return Py_BuildValue("(LOLL)", (long long)sum.max_ts, sum.ordered ? Py_True : Py_False,
                         (long long)sum.min_delta, (long long)sum.max_delta);
}

static inline int64_t be64(const unsigned char *p) {
    return (int64_t)(((uint64_t)p[0] << 56) | ((uint64_t)p[1] << 48) | ((uint64_t)p[2] << 40) |
                     ((uint64_t)p[3] << 32) | ((uint64_t)p[4] << 24) | ((uint64_t)p[5] << 16) |
                     ((uint64_t)p[6] << 8) | (uint64_t)p[7]);
}
static inline int32_t be32(const unsigned char *p) {
    return (int32_t)(((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3]);
}
static inline uint32_t ube32(const unsigned char *p) { return (uint32_t)be32(p); }
static inline int16_t be16(const unsigned char *p) { return (int16_t)(((uint16_t)p[0] << 8) | p[1]); }

/* Tail description: (kind, message, position, expected, found) */
static PyObject *
tail(const char *kind, const char *message, long long position, PyObject *expected, PyObject *found)
{
    return Py_BuildValue("(ssLNN)", kind, message, position, expected, found);
}

/*
 * scan(view, base, final, batch_type, start, max_entries) -> (batches, consumed, tail or None)
 * The twin of decode.scan_entries. ``view`` must be a memoryview: every batch
 * keeps a slice of it as ``raw``. At most ``max_entries`` are returned (< 0: all),
 * so that callers can stream without building huge lists the GC must walk.
 */
static PyObject *
scan(PyObject *self, PyObject *args)
{
    PyObject *mv, *batch_type;
    long long base;
    int final;
    Py_ssize_t start, max_entries, n = 0;
    REQUIRE_CONFIGURED;
    if (!PyArg_ParseTuple(args, "OLpOnn", &mv, &base, &final, &batch_type, &start, &max_entries)) return NULL;
    if (!PyMemoryView_Check(mv)) { PyErr_SetString(PyExc_TypeError, "scan() needs a memoryview"); return NULL; }
    Py_buffer *view = PyMemoryView_GET_BUFFER(mv);
    const unsigned char *p = (const unsigned char *)view->buf;
    Py_ssize_t end = view->len, pos = start;
    PyObject *out = PyList_New(0);
    PyObject *t = Py_None;
    if (!out) return NULL;
    Py_INCREF(Py_None);
    while (max_entries < 0 || n < max_entries) {
        Py_ssize_t left = end - pos;
        if (left == 0) break;
        if (left < PREFIX_SIZE) {
            if (final) {
                Py_DECREF(t);
                t = tail("truncated", "truncated entry header", base + pos,
                         PyUnicode_FromFormat("at least %d bytes", PREFIX_SIZE), PyUnicode_FromFormat("%zd bytes", left));
            }
            break;
        }
        const unsigned char *e = p + pos;
        int32_t size = be32(e + SIZE_AT);
        int magic = (signed char)e[MAGIC_AT];
        int32_t min_size = min_size_of(magic);
        if (min_size < 0) {
            Py_DECREF(t);
            t = tail("corrupt", "unknown magic", base + pos + MAGIC_AT, PyUnicode_FromString("0, 1 or 2"),
                     PyLong_FromLong(magic));
            break;
        }
        if (size < min_size) {
            Py_DECREF(t);
            char msg[64];
            snprintf(msg, sizeof msg, "size field too small for magic %d", magic);
            t = tail("corrupt", msg, base + pos + SIZE_AT,
                     PyUnicode_FromFormat(">= %d", min_size), PyLong_FromLong(size));
            break;
        }
        Py_ssize_t total = (Py_ssize_t)size + LOG_OVERHEAD;
        if (total > left) {
            if (final) {
                Py_DECREF(t);
                t = tail("truncated", "entry runs past the end of the data", base + pos,
                         PyUnicode_FromFormat("%zd bytes", total), PyUnicode_FromFormat("%zd bytes", left));
            }
            break;
        }
        PyObject *lo = PyLong_FromSsize_t(pos), *hi = PyLong_FromSsize_t(pos + total);
        PyObject *slice_obj = (lo && hi) ? PySlice_New(lo, hi, NULL) : NULL;
        Py_XDECREF(lo);
        Py_XDECREF(hi);
        PyObject *raw = slice_obj ? PyObject_GetItem(mv, slice_obj) : NULL;
        Py_XDECREF(slice_obj);
        PyObject *b = raw ? new_tuple(batch_type, N_BATCH_FIELDS) : NULL;
        if (!b) { Py_XDECREF(raw); goto error; }
        PyTuple_SET_ITEM(b, B_POSITION, PyLong_FromLongLong(base + pos));
        PyTuple_SET_ITEM(b, B_SIZE, PyLong_FromSsize_t(total));
        PyTuple_SET_ITEM(b, B_MAGIC, PyLong_FromLong(magic));
        PyTuple_SET_ITEM(b, B_BASE_OFFSET, PyLong_FromLongLong(be64(e)));
        PyTuple_SET_ITEM(b, B_RAW, raw);
        if (magic == 2) {
            PyTuple_SET_ITEM(b, B_CRC, PyLong_FromUnsignedLong(ube32(e + V2_CRC_AT)));
            PyTuple_SET_ITEM(b, B_ATTRS, PyLong_FromLong((uint16_t)be16(e + V2_ATTRS_AT)));
            PyTuple_SET_ITEM(b, B_MAX_TS, PyLong_FromLongLong(be64(e + V2_MAX_TS_AT)));
            PyTuple_SET_ITEM(b, B_PLE, PyLong_FromLong(be32(e + V2_PLE_AT)));
            PyTuple_SET_ITEM(b, B_LOD, PyLong_FromLong(be32(e + V2_LOD_AT)));
            PyTuple_SET_ITEM(b, B_BASE_TS, PyLong_FromLongLong(be64(e + V2_BASE_TS_AT)));
            PyTuple_SET_ITEM(b, B_PID, PyLong_FromLongLong(be64(e + V2_PID_AT)));
            PyTuple_SET_ITEM(b, B_EPOCH, PyLong_FromLong(be16(e + V2_EPOCH_AT)));
            PyTuple_SET_ITEM(b, B_SEQ, PyLong_FromLong(be32(e + V2_SEQ_AT)));
            PyTuple_SET_ITEM(b, B_COUNT, PyLong_FromLong(be32(e + V2_COUNT_AT)));
        } else {
            PyTuple_SET_ITEM(b, B_CRC, PyLong_FromUnsignedLong(ube32(e + LEGACY_CRC_AT)));
            PyTuple_SET_ITEM(b, B_ATTRS, PyLong_FromLong(e[LEGACY_ATTRS_AT]));
            PyTuple_SET_ITEM(b, B_MAX_TS, PyLong_FromLongLong(magic == 1 ? be64(e + V1_TS_AT) : -1));
            for (int k = 0; k < N_V2_ONLY; k++) { Py_INCREF(Py_None); PyTuple_SET_ITEM(b, *v2_only[k], Py_None); }
        }
        for (Py_ssize_t k = 0; k < N_BATCH_FIELDS; k++) {
            if (PyTuple_GET_ITEM(b, k) == NULL) { Py_DECREF(b); goto error; }
        }
        if (PyList_Append(out, b) < 0) { Py_DECREF(b); goto error; }
        Py_DECREF(b);
        pos += total;
        n++;
    }
    if (t == NULL) goto error;
    return Py_BuildValue("(NnN)", out, pos, t);
error:
    Py_DECREF(out);
    Py_XDECREF(t);
    return NULL;
}

/*
 * legacy_record(raw, magic, offset, timestamp, stored_timestamp, attributes, crc, record_type)
 * The twin of decode.legacy_record: key and value of one v0/v1 message.
 */
static PyObject *
legacy_record(PyObject *self, PyObject *args)
{
    Py_buffer view;
    int magic;
    long long offset, timestamp, stored_ts;
    int attrs;
    PyObject *crc, *record_type;
    REQUIRE_CONFIGURED;
    if (!PyArg_ParseTuple(args, "y*iLLLiOO", &view, &magic, &offset, &timestamp, &stored_ts, &attrs, &crc,
                          &record_type))
        return NULL;
    const unsigned char *p = (const unsigned char *)view.buf;
    Py_ssize_t end = view.len, pos = magic == 1 ? V1_KEY_LEN_AT : V0_KEY_LEN_AT;
    PyObject *key = NULL, *value = NULL, *rec = NULL;
    if (pos + 4 > end) { fail("corrupt", "invalid key length", pos, -1, NULL, NULL); goto done; }
    int32_t klen = be32(p + pos);
    pos += 4;
    Py_ssize_t kspan = klen > 0 ? klen : 0;
    if (klen < -1 || pos + kspan + 4 > end) {
        fail("corrupt", "invalid key length", pos - 4, -1, PyUnicode_FromFormat("-1..%zd", end - pos - 4),
             PyLong_FromLong(klen));
        goto done;
    }
    int32_t vlen = be32(p + pos + kspan);
    Py_ssize_t vpos = pos + kspan + 4;
    Py_ssize_t vspan = vlen > 0 ? vlen : 0;
    if (vlen < -1 || vpos + vspan != end) {
        fail("corrupt", "value length does not match the message size", vpos - 4, -1,
             end - vpos >= 0 ? PyUnicode_FromFormat("%zd", end - vpos) : PyUnicode_FromString("-1"),
             PyLong_FromLong(vlen));
        goto done;
    }
    key = klen < 0 ? (Py_INCREF(Py_None), Py_None) : PyBytes_FromStringAndSize((const char *)p + pos, klen);
    value = vlen < 0 ? (Py_INCREF(Py_None), Py_None) : PyBytes_FromStringAndSize((const char *)p + vpos, vlen);
    if (!key || !value) goto done;
    rec = new_tuple(record_type, N_RECORD_FIELDS);
    if (!rec) goto done;
    PyTuple_SET_ITEM(rec, R_OFFSET, PyLong_FromLongLong(offset));
    PyTuple_SET_ITEM(rec, R_TIMESTAMP, PyLong_FromLongLong(timestamp));
    PyTuple_SET_ITEM(rec, R_KEY, key);
    PyTuple_SET_ITEM(rec, R_VALUE, value);
    key = value = NULL;
    PyObject *empty = PyTuple_New(0);
    PyTuple_SET_ITEM(rec, R_HEADERS, empty);
    PyTuple_SET_ITEM(rec, R_STORED_TS, PyLong_FromLongLong(stored_ts));
    PyTuple_SET_ITEM(rec, R_ATTRS, PyLong_FromLong(attrs));
    PyTuple_SET_ITEM(rec, R_MAGIC, PyLong_FromLong(magic));
    Py_INCREF(crc);
    PyTuple_SET_ITEM(rec, R_CRC, crc);
done:
    Py_XDECREF(key);
    Py_XDECREF(value);
    PyBuffer_Release(&view);
    return rec;
}

/*
 * legacy_set(data, wrapper_magic, wrapper_offset, log_append_time, record_type, spans=False) -> list
 * The twin of decode.decode_legacy_wrapper: the inner messages of a decompressed
 * v0/v1 wrapper as records with absolute offsets (spec §2.3). Errors carry
 * positions inside ``data``. With spans: (the records' spans (_spans.h) as one bytes
 * object, their count, the first offset) instead, after the same checks.
 */
static PyObject *
legacy_set(PyObject *self, PyObject *args)
{
    Py_buffer view;
    int wmagic;
    long long woffset;
    PyObject *lat_obj, *record_type;
    int spans = 0;
    REQUIRE_CONFIGURED;
    if (!PyArg_ParseTuple(args, "y*iLOO|p", &view, &wmagic, &woffset, &lat_obj, &record_type, &spans)) return NULL;
    KsegRecordSpan *rs = NULL;
    const unsigned char *p = (const unsigned char *)view.buf;
    Py_ssize_t end = view.len, pos = 0, count = 0, last_pos = 0;
    long long last_rel = 0;
    PyObject *out = NULL, *empty = NULL;
    /* the first v2 or compressed inner message: reported only once the whole set frames,
       as decode.decode_legacy_wrapper scans before it checks (a framing error wins) */
    Py_ssize_t first_bad = -1;
    /* pass 1: framing, magic, codec; the last inner offset */
    while (pos < end) {
        Py_ssize_t left = end - pos;
        if (left < PREFIX_SIZE) {
            fail("truncated", "truncated entry header", pos, -1, PyUnicode_FromFormat("at least %d bytes", PREFIX_SIZE),
                 PyUnicode_FromFormat("%zd bytes", left));
            goto error;
        }
        int32_t size = be32(p + pos + SIZE_AT);
        int magic = (signed char)p[pos + MAGIC_AT];
        int32_t min_size = min_size_of(magic);
        if (min_size < 0) {
            fail("corrupt", "unknown magic", pos + MAGIC_AT, -1, PyUnicode_FromString("0, 1 or 2"), PyLong_FromLong(magic));
            goto error;
        }
        if (size < min_size) {
            char msg[64];
            snprintf(msg, sizeof msg, "size field too small for magic %d", magic);
            fail("corrupt", msg, pos + SIZE_AT, -1, PyUnicode_FromFormat(">= %d", min_size), PyLong_FromLong(size));
            goto error;
        }
        if ((Py_ssize_t)size + LOG_OVERHEAD > left) {
            fail("truncated", "entry runs past the end of the data", pos, -1,
                 PyUnicode_FromFormat("%zd bytes", (Py_ssize_t)size + LOG_OVERHEAD), PyUnicode_FromFormat("%zd bytes", left));
            goto error;
        }
        if (first_bad < 0 && (magic > 1 || (p[pos + LEGACY_ATTRS_AT] & CODEC_MASK))) first_bad = pos;
        last_rel = be64(p + pos);
        last_pos = pos;
        pos += (Py_ssize_t)size + LOG_OVERHEAD;
        count++;
    }
    if (count == 0) {
        fail("corrupt", "compressed message set has no inner messages", -1, -1, NULL, NULL);
        goto error;
    }
    if (first_bad >= 0) {
        int magic = (signed char)p[first_bad + MAGIC_AT];
        if (magic > 1)
            fail("corrupt", "v2 batch inside a legacy wrapper", first_bad, -1, NULL, PyLong_FromLong(magic));
        else
            fail("corrupt", "inner messages must not be compressed", first_bad, -1, PyUnicode_FromString("codec none"),
                 PyUnicode_FromFormat("codec %d", p[first_bad + LEGACY_ATTRS_AT] & CODEC_MASK));
        goto error;
    }
    /* v1 inner offsets are relative to the wrapper's (the last one's); wrapper offset 0 (librdkafka)
       is base 0 */
    long long shift = 0;
    int shifted = wmagic != 0 && woffset != 0;
    if (shifted) {
        if (woffset < last_rel) {
            fail("corrupt", "invalid wrapper offset in compressed v1 message set", -1, -1,
                 PyUnicode_FromFormat(">= last inner relative offset %lld", last_rel), PyLong_FromLongLong(woffset));
            goto error;
        }
        if (last_rel < 0) {
            fail("corrupt", "negative relative offset in compressed v1 message set", last_pos, -1,
                 PyUnicode_FromString(">= 0"), PyLong_FromLongLong(last_rel));
            goto error;
        }
        shift = woffset - last_rel; /* 0 <= shift <= woffset: no overflow */
    }
    int has_lat = lat_obj != Py_None;
    long long lat = has_lat ? PyLong_AsLongLong(lat_obj) : 0;
    if (has_lat && lat == -1 && PyErr_Occurred()) goto error;
    if (spans) {
        out = PyBytes_FromStringAndSize(NULL, count * (Py_ssize_t)sizeof(KsegRecordSpan));
        if (!out) goto error;
        rs = (KsegRecordSpan *)PyBytes_AS_STRING(out);
        memset(rs, 0, (size_t)count * sizeof(KsegRecordSpan));
    } else {
        out = PyList_New(count);
        empty = PyTuple_New(0);
        if (!out || !empty) goto error;
    }
    /* pass 2: records */
    pos = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        const unsigned char *e = p + pos;
        Py_ssize_t total = (Py_ssize_t)be32(e + SIZE_AT) + LOG_OVERHEAD;
        int magic = e[MAGIC_AT];
        Py_ssize_t kpos = magic == 1 ? V1_KEY_LEN_AT : V0_KEY_LEN_AT;
        long long ts = magic == 1 ? be64(e + V1_TS_AT) : -1;
        long long rel = be64(e);
        if (shifted && (rel < 0 || rel > INT64_MAX - shift)) { /* an absolute offset must be a long */
            fail("corrupt", "relative offset out of range in compressed v1 message set", pos, -1,
                 PyUnicode_FromFormat("0..%lld", (long long)(INT64_MAX - shift)), PyLong_FromLongLong(rel));
            goto error;
        }
        if (kpos + 4 > total) {
            fail("corrupt", "invalid key length", pos + kpos, -1, NULL, NULL);
            goto error;
        }
        int32_t klen = be32(e + kpos);
        Py_ssize_t kspan = klen > 0 ? klen : 0;
        if (klen < -1 || kpos + 4 + kspan + 4 > total) {
            fail("corrupt", "invalid key length", pos + kpos, -1,
                 PyUnicode_FromFormat("-1..%zd", total - kpos - 8), PyLong_FromLong(klen));
            goto error;
        }
        Py_ssize_t vat = kpos + 4 + kspan;
        int32_t vlen = be32(e + vat);
        Py_ssize_t vspan = vlen > 0 ? vlen : 0;
        if (vlen < -1 || vat + 4 + vspan != total) {
            fail("corrupt", "value length does not match the message size", pos + vat, -1,
                 total - vat - 4 >= 0 ? PyUnicode_FromFormat("%zd", total - vat - 4) : PyUnicode_FromString("-1"),
                 PyLong_FromLong(vlen));
            goto error;
        }
        if (spans) {
            KsegRecordSpan *r = rs + i;
            r->offset = be64(e) + shift;
            r->timestamp = has_lat ? lat : ts;
            r->key_at = pos + kpos + 4;
            r->key_len = klen;
            r->value_at = pos + vat + 4;
            r->value_len = vlen;
            r->message_at = pos + LEGACY_CRC_START;
            r->message_end = pos + total;
            r->stored_crc = ube32(e + LEGACY_CRC_AT);
            pos += total;
            continue;
        }
        PyObject *rec = new_tuple(record_type, N_RECORD_FIELDS);
        if (!rec) goto error;
        PyList_SET_ITEM(out, i, rec);
        PyTuple_SET_ITEM(rec, R_OFFSET, PyLong_FromLongLong(be64(e) + shift));
        PyTuple_SET_ITEM(rec, R_TIMESTAMP, PyLong_FromLongLong(has_lat ? lat : ts));
        PyTuple_SET_ITEM(rec, R_KEY, klen < 0 ? (Py_INCREF(Py_None), Py_None)
                                          : PyBytes_FromStringAndSize((const char *)e + kpos + 4, klen));
        PyTuple_SET_ITEM(rec, R_VALUE, vlen < 0 ? (Py_INCREF(Py_None), Py_None)
                                          : PyBytes_FromStringAndSize((const char *)e + vat + 4, vlen));
        Py_INCREF(empty);
        PyTuple_SET_ITEM(rec, R_HEADERS, empty);
        PyTuple_SET_ITEM(rec, R_STORED_TS, PyLong_FromLongLong(ts));
        PyTuple_SET_ITEM(rec, R_ATTRS, PyLong_FromLong(e[LEGACY_ATTRS_AT]));
        PyTuple_SET_ITEM(rec, R_MAGIC, PyLong_FromLong(magic));
        PyTuple_SET_ITEM(rec, R_CRC, PyLong_FromUnsignedLong(ube32(e + LEGACY_CRC_AT)));
        for (Py_ssize_t k = 0; k < N_RECORD_FIELDS; k++)
            if (PyTuple_GET_ITEM(rec, k) == NULL) goto error;
        pos += total;
    }
    PyBuffer_Release(&view);
    Py_XDECREF(empty);
    if (spans) return Py_BuildValue("(NnL)", out, count, (long long)rs[0].offset);
    return out;
error:
    PyBuffer_Release(&view);
    Py_XDECREF(out);
    Py_XDECREF(empty);
    return NULL;
}

/* CRC-32 (IEEE), as zlib.crc32 / java.util.zip.CRC32: kseg/_crc32.h. */
static uint32_t
crc32_ieee(const unsigned char *p, Py_ssize_t n)
{
    return crc32_update(0xFFFFFFFFu, p, (size_t)n) ^ 0xFFFFFFFFu;
}

/*
 * legacy_crc_mismatches(data) -> list of (index, stored, computed)
 * For a decompressed wrapper payload that legacy_set accepted: the inner
 * messages whose CRC-32 (magic .. end) does not match.
 */
static PyObject *
legacy_crc_mismatches(PyObject *self, PyObject *args)
{
    Py_buffer view;
    REQUIRE_CONFIGURED;
    if (!PyArg_ParseTuple(args, "y*", &view)) return NULL;
    const unsigned char *p = (const unsigned char *)view.buf;
    Py_ssize_t end = view.len, pos = 0, i = 0;
    PyObject *out = PyList_New(0);
    if (!out) { PyBuffer_Release(&view); return NULL; }
    while (end - pos >= PREFIX_SIZE) {
        Py_ssize_t total = (Py_ssize_t)be32(p + pos + SIZE_AT) + LOG_OVERHEAD;
        if (total < LOG_OVERHEAD + MIN_SIZE_V0 || total > end - pos) break;
        uint32_t stored = ube32(p + pos + LEGACY_CRC_AT);
        uint32_t computed = crc32_ieee(p + pos + LEGACY_CRC_START, total - LEGACY_CRC_START);
        if (stored != computed) {
            PyObject *t = Py_BuildValue("(nkk)", i, (unsigned long)stored, (unsigned long)computed);
            if (!t || PyList_Append(out, t) < 0) { Py_XDECREF(t); Py_DECREF(out); PyBuffer_Release(&view); return NULL; }
            Py_DECREF(t);
        }
        pos += total;
        i++;
    }
    PyBuffer_Release(&view);
    return out;
}

/* ---------------------------------------------------------------- encoding */

typedef struct { char *buf; Py_ssize_t len, cap; } Out;

static int
out_reserve(Out *o, Py_ssize_t extra)
{
    if (o->len + extra <= o->cap) return 0;
    Py_ssize_t cap = o->cap ? o->cap : 4096;
    while (cap < o->len + extra) cap *= 2;
    char *nb = PyMem_Realloc(o->buf, cap);
    if (!nb) { PyErr_NoMemory(); return -1; }
    o->buf = nb;
    o->cap = cap;
    return 0;
}

static inline void
put_uvarint(Out *o, uint64_t u)
{
    while (u >= 0x80) { o->buf[o->len++] = (char)((u & 0x7F) | 0x80); u >>= 7; }
    o->buf[o->len++] = (char)u;
}

static inline void put_varint(Out *o, int64_t n) { put_uvarint(o, (uint32_t)(((uint32_t)n << 1) ^ (uint32_t)(n >> 31))); }
static inline void put_varlong(Out *o, int64_t n) { put_uvarint(o, ((uint64_t)n << 1) ^ (uint64_t)(n >> 63)); }
static inline void put_be32(char *p, uint32_t v) { p[0] = v >> 24; p[1] = v >> 16; p[2] = v >> 8; p[3] = v; }
static inline void put_be64(char *p, uint64_t v) { put_be32(p, v >> 32); put_be32(p + 4, (uint32_t)v); }

/* A key, value or header value: None (len -1), bytes, or any bytes-like object. */
typedef struct { const char *ptr; Py_ssize_t len; Py_buffer view; int has_view; } Blob;

static int
blob_get(PyObject *obj, Blob *b)
{
    b->has_view = 0;
    if (obj == Py_None) { b->ptr = NULL; b->len = -1; return 0; }
    if (PyBytes_Check(obj)) { b->ptr = PyBytes_AS_STRING(obj); b->len = PyBytes_GET_SIZE(obj); return 0; }
    if (PyObject_GetBuffer(obj, &b->view, PyBUF_SIMPLE) == 0) {
        b->has_view = 1;
        b->ptr = b->view.buf;
        b->len = b->view.len;
        return 0;
    }
    PyErr_Clear();
    PyErr_SetString(PyExc_TypeError, "keys, values and header values must be bytes-like or None");
    return -1;
}

static void
blob_release(Blob *b)
{
    if (b->has_view) { PyBuffer_Release(&b->view); b->has_view = 0; }
}

/*
 * encode_v2_records(records, base_offset, base_timestamp) -> bytes
 * The twin of encode.encode_v2_records.
 */
static PyObject *
encode_v2_records(PyObject *self, PyObject *args)
{
    PyObject *records;
    long long base_offset, base_ts;
    REQUIRE_CONFIGURED;
    if (!PyArg_ParseTuple(args, "OLL", &records, &base_offset, &base_ts)) return NULL;
    PyObject *seq = PySequence_Fast(records, "records must be a sequence");
    if (!seq) return NULL;
    Out o = {NULL, 0, 0};
    Out body = {NULL, 0, 0};
    Blob kb_, vb_;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *r = PySequence_Fast_GET_ITEM(seq, i);
        if (!PyTuple_Check(r) || PyTuple_GET_SIZE(r) != N_RECORD_FIELDS) { PyErr_SetString(PyExc_TypeError, "not a Record"); goto error; }
        long long offset = PyLong_AsLongLong(PyTuple_GET_ITEM(r, R_OFFSET));
        long long ts = PyLong_AsLongLong(PyTuple_GET_ITEM(r, R_STORED_TS));
        long attrs = PyLong_AsLong(PyTuple_GET_ITEM(r, R_ATTRS));
        if (PyErr_Occurred()) goto error;
        long long ts_delta, off_delta;
        if (__builtin_sub_overflow(ts, base_ts, &ts_delta) || __builtin_sub_overflow(offset, base_offset, &off_delta)
            || off_delta < INT32_MIN || off_delta > INT32_MAX) {
            PyErr_SetString(PyExc_OverflowError, "record timestamp or offset does not fit the batch's base");
            goto error;
        }
        if (blob_get(PyTuple_GET_ITEM(r, R_KEY), &kb_) < 0) goto error;
        if (blob_get(PyTuple_GET_ITEM(r, R_VALUE), &vb_) < 0) { blob_release(&kb_); goto error; }
        const char *kp = kb_.ptr, *vp = vb_.ptr;
        Py_ssize_t kl = kb_.len, vl = vb_.len;
        PyObject *headers = PyTuple_GET_ITEM(r, R_HEADERS);
        PyObject *hseq = PySequence_Fast(headers, "headers must be a sequence");
        if (!hseq) { blob_release(&kb_); blob_release(&vb_); goto error; }
        Py_ssize_t hn = PySequence_Fast_GET_SIZE(hseq);
        body.len = 0;
        if (out_reserve(&body, 1 + 10 + 5 + 5 + (kl > 0 ? kl : 0) + 5 + (vl > 0 ? vl : 0) + 5) < 0) {
            Py_DECREF(hseq); blob_release(&kb_); blob_release(&vb_); goto error;
        }
        body.buf[body.len++] = (char)(attrs & 0xFF);
        put_varlong(&body, ts_delta);
        put_varint(&body, off_delta);
        put_varint(&body, kl);
        if (kl > 0) { memcpy(body.buf + body.len, kp, kl); body.len += kl; }
        put_varint(&body, vl);
        if (vl > 0) { memcpy(body.buf + body.len, vp, vl); body.len += vl; }
        blob_release(&kb_);
        blob_release(&vb_);
        put_varint(&body, hn);
        for (Py_ssize_t h = 0; h < hn; h++) {
            PyObject *pair = PySequence_Fast_GET_ITEM(hseq, h);
            if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
                Py_DECREF(hseq); PyErr_SetString(PyExc_TypeError, "a header is (key, value)"); goto error;
            }
            PyObject *kb = PyUnicode_AsEncodedString(PyTuple_GET_ITEM(pair, H_KEY), "utf-8", "surrogateescape");
            if (!kb) { Py_DECREF(hseq); goto error; }
            Blob hv;
            if (blob_get(PyTuple_GET_ITEM(pair, H_VALUE), &hv) < 0) { Py_DECREF(kb); Py_DECREF(hseq); goto error; }
            Py_ssize_t hkl = PyBytes_GET_SIZE(kb), hvl = hv.len;
            if (out_reserve(&body, 10 + hkl + (hvl > 0 ? hvl : 0)) < 0) {
                blob_release(&hv); Py_DECREF(kb); Py_DECREF(hseq); goto error;
            }
            put_varint(&body, hkl);
            memcpy(body.buf + body.len, PyBytes_AS_STRING(kb), hkl);
            body.len += hkl;
            Py_DECREF(kb);
            put_varint(&body, hvl);
            if (hvl > 0) { memcpy(body.buf + body.len, hv.ptr, hvl); body.len += hvl; }
            blob_release(&hv);
        }
        Py_DECREF(hseq);
        if (out_reserve(&o, 5 + body.len) < 0) goto error;
        put_varint(&o, body.len);
        memcpy(o.buf + o.len, body.buf, body.len);
        o.len += body.len;
    }
    Py_DECREF(seq);
    PyObject *res = PyBytes_FromStringAndSize(o.buf ? o.buf : "", o.len);
    PyMem_Free(o.buf);
    PyMem_Free(body.buf);
    return res;
error:
    Py_DECREF(seq);
    PyMem_Free(o.buf);
    PyMem_Free(body.buf);
    return NULL;
}

/*
 * encode_legacy_messages(records, magic, relative_to) -> bytes
 * v0/v1 messages with framing and CRC-32, one per record: offset = record offset
 * (minus relative_to unless it is None), attributes = the record's without codec
 * bits, timestamp = its stored timestamp (v1). The twin of
 * encode.build_legacy_message_set.
 */
static PyObject *
encode_legacy_messages(PyObject *self, PyObject *args)
{
    PyObject *records, *rel_obj;
    int magic;
    REQUIRE_CONFIGURED;
    if (!PyArg_ParseTuple(args, "OiO", &records, &magic, &rel_obj)) return NULL;
    if (magic != 0 && magic != 1) { PyErr_SetString(PyExc_ValueError, "magic 0 or 1"); return NULL; }
    long long rel = 0;
    if (rel_obj != Py_None) { rel = PyLong_AsLongLong(rel_obj); if (rel == -1 && PyErr_Occurred()) return NULL; }
    PyObject *seq = PySequence_Fast(records, "records must be a sequence");
    if (!seq) return NULL;
    Out o = {NULL, 0, 0};
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *r = PySequence_Fast_GET_ITEM(seq, i);
        if (!PyTuple_Check(r) || PyTuple_GET_SIZE(r) != N_RECORD_FIELDS) { PyErr_SetString(PyExc_TypeError, "not a Record"); goto error; }
        long long offset = PyLong_AsLongLong(PyTuple_GET_ITEM(r, R_OFFSET)) - rel;
        long long ts = PyLong_AsLongLong(PyTuple_GET_ITEM(r, R_STORED_TS));
        long attrs = PyLong_AsLong(PyTuple_GET_ITEM(r, R_ATTRS)) & ~(long)CODEC_MASK;
        if (PyErr_Occurred()) goto error;
        Blob kb_, vb_;
        if (blob_get(PyTuple_GET_ITEM(r, R_KEY), &kb_) < 0) goto error;
        if (blob_get(PyTuple_GET_ITEM(r, R_VALUE), &vb_) < 0) { blob_release(&kb_); goto error; }
        const char *kp = kb_.ptr, *vp = vb_.ptr;
        Py_ssize_t kl = kb_.len, vl = vb_.len;
        Py_ssize_t head = magic == 1 ? V1_KEY_LEN_AT : V0_KEY_LEN_AT;
        Py_ssize_t total = head + 4 + (kl > 0 ? kl : 0) + 4 + (vl > 0 ? vl : 0);
        if (out_reserve(&o, total) < 0) { blob_release(&kb_); blob_release(&vb_); goto error; }
        char *e = o.buf + o.len;
        put_be64(e, (uint64_t)offset);
        put_be32(e + SIZE_AT, (uint32_t)(total - LOG_OVERHEAD));
        e[MAGIC_AT] = (char)magic;
        e[LEGACY_ATTRS_AT] = (char)(attrs & 0xFF);
        if (magic == 1) put_be64(e + V1_TS_AT, (uint64_t)ts);
        Py_ssize_t at = head;
        put_be32(e + at, (uint32_t)(kl < 0 ? -1 : kl));
        at += 4;
        if (kl > 0) { memcpy(e + at, kp, kl); at += kl; }
        put_be32(e + at, (uint32_t)(vl < 0 ? -1 : vl));
        at += 4;
        if (vl > 0) { memcpy(e + at, vp, vl); at += vl; }
        blob_release(&kb_);
        blob_release(&vb_);
        put_be32(e + LEGACY_CRC_AT, crc32_ieee((const unsigned char *)e + LEGACY_CRC_START, total - LEGACY_CRC_START));
        o.len += total;
    }
    Py_DECREF(seq);
    PyObject *res = PyBytes_FromStringAndSize(o.buf ? o.buf : "", o.len);
    PyMem_Free(o.buf);
    return res;
error:
    Py_DECREF(seq);
    PyMem_Free(o.buf);
    return NULL;
}

/*
 * legacy_batch_record(batch, record_type) -> record
 * legacy_record for an uncompressed v0/v1 entry taken straight from its Batch tuple
 * (its raw, magic, base_offset, max_timestamp, attributes and crc): the per-message path
 * of legacy segments, without a Python frame in between.
 */
static PyObject *
legacy_batch_record(PyObject *self, PyObject *args)
{
    PyObject *batch, *record_type;
    REQUIRE_CONFIGURED;
    if (!PyArg_ParseTuple(args, "OO", &batch, &record_type)) return NULL;
    if (!PyTuple_Check(batch) || PyTuple_GET_SIZE(batch) != N_BATCH_FIELDS) {
        PyErr_SetString(PyExc_TypeError, "not a Batch");
        return NULL;
    }
    PyObject *ts = PyTuple_GET_ITEM(batch, B_MAX_TS);
    PyObject *call = Py_BuildValue("(OOOOOOOO)", PyTuple_GET_ITEM(batch, B_RAW), PyTuple_GET_ITEM(batch, B_MAGIC),
                                   PyTuple_GET_ITEM(batch, B_BASE_OFFSET), ts, ts, PyTuple_GET_ITEM(batch, B_ATTRS),
                                   PyTuple_GET_ITEM(batch, B_CRC), record_type);
    if (!call) return NULL;
    PyObject *r = legacy_record(self, call);
    Py_DECREF(call);
    return r;
}

/*
 * plain_spans(batches, start) -> (data, spans, stop, bad_crcs)
 * The record spans (_spans.h) of batches[start:stop], the run of uncompressed v0/v1
 * messages there whose raw views share one bytes object (the chunk of the file they
 * were scanned from), ``data``: a dump writes their lines in one call. Each span is the
 * record legacy_batch_record makes (the entry's own offset and timestamp); ``bad_crcs``
 * lists the indices (from start) whose CRC-32 does not match. The run ends before an
 * entry of another kind or buffer, and before one whose key or value length is wrong,
 * which the per-message path reports; stop == start when batches[start] is such an entry.
 */
static PyObject *
plain_spans(PyObject *self, PyObject *args)
{
    PyObject *batches, *data = NULL;
    Py_ssize_t start;
    REQUIRE_CONFIGURED;
    if (!PyArg_ParseTuple(args, "O!n", &PyList_Type, &batches, &start)) return NULL;
    Py_ssize_t n = PyList_GET_SIZE(batches), i = start;
    if (start < 0 || start > n) {
        PyErr_SetString(PyExc_IndexError, "start outside the list");
        return NULL;
    }
    PyObject *spans = PyBytes_FromStringAndSize(NULL, (n - i) * (Py_ssize_t)sizeof(KsegRecordSpan));
    PyObject *bad = PyList_New(0);
    if (!spans || !bad) goto error;
    KsegRecordSpan *rs = (KsegRecordSpan *)PyBytes_AS_STRING(spans);
    const char *base = NULL;
    for (; i < n; i++) {
        PyObject *b = PyList_GET_ITEM(batches, i);
        if (!PyTuple_Check(b) || PyTuple_GET_SIZE(b) != N_BATCH_FIELDS || !PyMemoryView_Check(PyTuple_GET_ITEM(b, B_RAW))) break;
        long magic = PyLong_AsLong(PyTuple_GET_ITEM(b, B_MAGIC)), attrs = PyLong_AsLong(PyTuple_GET_ITEM(b, B_ATTRS));
        if (PyErr_Occurred()) goto error;
        if ((magic != 0 && magic != 1) || (attrs & CODEC_MASK)) break;
        Py_buffer *raw = PyMemoryView_GET_BUFFER(PyTuple_GET_ITEM(b, B_RAW));
        if (!raw->obj || !PyBytes_Check(raw->obj)) break;
        if (!data) {
            data = raw->obj;
            base = PyBytes_AS_STRING(data);
        } else if (raw->obj != data) {
            break;
        }
        const unsigned char *p = (const unsigned char *)raw->buf;
        Py_ssize_t end = raw->len, pos = magic == 1 ? V1_KEY_LEN_AT : V0_KEY_LEN_AT;
        if (end < LEGACY_CRC_START || pos + 4 > end) break;
        int32_t klen = be32(p + pos);
        Py_ssize_t kspan = klen > 0 ? klen : 0;
        if (klen < -1 || pos + 4 + kspan + 4 > end) break;
        int32_t vlen = be32(p + pos + 4 + kspan);
        Py_ssize_t vpos = pos + 4 + kspan + 4;
        if (vlen < -1 || vpos + (vlen > 0 ? vlen : 0) != end) break;
        long long offset = PyLong_AsLongLong(PyTuple_GET_ITEM(b, B_BASE_OFFSET)), ts = PyLong_AsLongLong(PyTuple_GET_ITEM(b, B_MAX_TS));
        long long crc = PyLong_AsLongLong(PyTuple_GET_ITEM(b, B_CRC));
        if (PyErr_Occurred()) goto error;
        int64_t at = (int64_t)((const char *)p - base);
        KsegRecordSpan *r = rs + (i - start);
        r->offset = offset;
        r->timestamp = ts;
        r->key_at = at + pos + 4;
        r->key_len = klen;
        r->value_at = at + vpos;
        r->value_len = vlen;
        r->first_header = r->header_count = 0;
        r->message_at = at + LEGACY_CRC_START;
        r->message_end = at + end;
        r->stored_crc = crc;
        if ((long long)crc32_ieee(p + LEGACY_CRC_START, end - LEGACY_CRC_START) != crc) {
            PyObject *k = PyLong_FromSsize_t(i - start);
            if (!k || PyList_Append(bad, k) < 0) { Py_XDECREF(k); goto error; }
            Py_DECREF(k);
        }
    }
    Py_ssize_t stop = i;
    if (_PyBytes_Resize(&spans, (stop - start) * (Py_ssize_t)sizeof(KsegRecordSpan)) < 0) { Py_DECREF(bad); return NULL; }
    return Py_BuildValue("(ONnN)", data ? data : Py_None, spans, stop, bad);
error:
    Py_XDECREF(spans);
    Py_XDECREF(bad);
    return NULL;
}

/*
 * resync(view, start, final, min_offset, max_offset, max_size, v0_attrs, v1_attrs, v2_attrs,
 *        max_legacy_codec, max_v2_codec) -> (status, position, total)
 * The twin of salvage_scan.find_candidate: the first position from ``start`` whose framing is
 * plausible (status 0, FOUND), whose checks need bytes past the buffer (1, MORE; total when the
 * entry's size is known, else 0) or (2, NONE, len(view), 0). The CRC is checked by the caller.
 * The magic byte is tested first: over garbage or zeros that is nearly all the work.
 */
#define RESYNC_FOUND 0
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* The first position from pos (up to last, inclusive) whose magic byte is 0, 1 or 2; last + 1 if none. */
static inline Py_ssize_t
next_magic(const unsigned char *b, Py_ssize_t pos, Py_ssize_t last)
{
    const unsigned char *m = b + MAGIC_AT;
#if defined(__SSE2__)
    const __m128i two = _mm_set1_epi8(2);
    while (pos + 15 <= last) {
        __m128i x = _mm_loadu_si128((const __m128i *)(m + pos));
        int mask = _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_min_epu8(x, two), x));
        if (mask) return pos + __builtin_ctz((unsigned)mask);
        pos += 16;
    }
#endif
    while (pos <= last && m[pos] > 2) pos++;
    return pos;
}

/* The first byte from i that is not zero, or end. */
static inline Py_ssize_t
next_nonzero(const unsigned char *b, Py_ssize_t i, Py_ssize_t end)
{
    for (; i + 8 <= end; i += 8) {
        uint64_t w;
        memcpy(&w, b + i, 8);
        if (w) break;
    }
    while (i < end && !b[i]) i++;
    return i;
}

#define RESYNC_MORE 1
#define RESYNC_NONE 2

static PyObject *
resync(PyObject *self, PyObject *args)
{
    PyObject *mv;
    Py_ssize_t start;
    int final;
    long long min_offset, max_offset, max_size;
    int v0_attrs, v1_attrs, v2_attrs, max_legacy_codec, max_v2_codec;
    REQUIRE_CONFIGURED;
    if (!PyArg_ParseTuple(args, "OnpLLLiiiii", &mv, &start, &final, &min_offset, &max_offset, &max_size,
                          &v0_attrs, &v1_attrs, &v2_attrs, &max_legacy_codec, &max_v2_codec)) return NULL;
    if (!PyMemoryView_Check(mv)) { PyErr_SetString(PyExc_TypeError, "resync() needs a memoryview"); return NULL; }
    if (start < 0) { PyErr_SetString(PyExc_ValueError, "resync(): negative start"); return NULL; }
    Py_buffer *view = PyMemoryView_GET_BUFFER(mv);
    const unsigned char *b = (const unsigned char *)view->buf;
    const Py_ssize_t end = view->len, last_whole = end - PREFIX_SIZE;
    const int v2_header = V2_COUNT_AT + 4;
    int status = RESYNC_NONE;
    Py_ssize_t pos = start;
    long long total = 0;
    for (; (pos = next_magic(b, pos, last_whole)) <= last_whole; pos++) {
        const unsigned char *p = b + pos;
        const int magic = p[MAGIC_AT];
        const int32_t size = be32(p + SIZE_AT);
        if (size == 0) {
            /* A zero length: so is every length read inside the zeros that follow. */
            Py_ssize_t q = next_nonzero(b, pos + SIZE_AT, end) - SIZE_AT - 3;
            if (q > last_whole + 1) q = last_whole + 1;
            if (q - 1 > pos) pos = q - 1;  /* the loop's pos++ lands on q */
            continue;
        }
        if (size < (magic == 2 ? MIN_SIZE_V2 : magic == 1 ? MIN_SIZE_V1 : MIN_SIZE_V0)) continue;
        total = (long long)size + LOG_OVERHEAD;
        if (total > max_size) continue;
        const int64_t offset = be64(p);
        if (offset < min_offset || offset > max_offset) continue;
        const Py_ssize_t left = end - pos;
        if (magic == 2) {
            if (left < v2_header) { if (final) continue; total = 0; status = RESYNC_MORE; break; }
            const int attrs = (int)(uint16_t)be16(p + V2_ATTRS_AT);
            if ((attrs & ~v2_attrs) || (attrs & CODEC_MASK) > max_v2_codec) continue;
            const int64_t lod = be32(p + V2_LOD_AT), count = be32(p + V2_COUNT_AT);
            if (lod < 0 || count < 0 || count > lod + 1 || lod > max_offset - offset) continue;
            if (be32(p + V2_PLE_AT) < -1) continue;
        } else {
            const int key_at = magic == 1 ? V1_KEY_LEN_AT : V0_KEY_LEN_AT;
            if (left < key_at + 4) { if (final) continue; total = 0; status = RESYNC_MORE; break; }
            const int attrs = p[LEGACY_ATTRS_AT];
            if ((attrs & ~(magic == 1 ? v1_attrs : v0_attrs)) || (attrs & CODEC_MASK) > max_legacy_codec) continue;
            const int64_t klen = be32(p + key_at);
            if (klen < -1) continue;
            const int64_t value_at = key_at + 4 + (klen > 0 ? klen : 0);
            if (value_at + 4 > total) continue;
            if (left < value_at + 4) { if (final) continue; status = RESYNC_MORE; break; }
            const int64_t vlen = be32(p + value_at);
            if (vlen < -1 || value_at + 4 + (vlen > 0 ? vlen : 0) != total) continue;
        }
        if (total > left) { if (final) continue; status = RESYNC_MORE; break; }
        status = RESYNC_FOUND;
        break;
    }
    if (status == RESYNC_NONE) {
        if (!final) return Py_BuildValue("(inL)", RESYNC_MORE, pos, 0LL);
        return Py_BuildValue("(inL)", RESYNC_NONE, end, 0LL);
    }
    return Py_BuildValue("(inL)", status, pos, total);
}

/* ------------------------------------------------------------------ entry starts
 * entry_starts(fd, size, every, read_bytes, large_entry): the first entry start at or after each
 * multiple of every below size, following each entry's length from position 0 of the open file fd
 * with pread (read_bytes at a time, a header's worth after an entry over large_entry bytes), until
 * a header that cannot be an entry's (twin of kseg.log.entry_walk.entry_starts_py, which documents
 * the reads, holds their sizes and documents the result). The GIL is released while it reads; a
 * failed read raises OSError. */

static PyObject *
entry_starts(PyObject *self, PyObject *args)
{
    int fd;
    long long size, every;
    Py_ssize_t read_bytes, large_entry;
    REQUIRE_CONFIGURED;
    if (!PyArg_ParseTuple(args, "iLLnn", &fd, &size, &every, &read_bytes, &large_entry)) return NULL;
    if (size < 0 || every <= 0 || read_bytes < PREFIX_SIZE || large_entry < 0) {
        PyErr_SetString(PyExc_ValueError,
                        "entry_starts(): size must be >= 0, every > 0, read_bytes a header or more");
        return NULL;
    }
    unsigned char *buf = PyMem_Malloc((size_t)read_bytes);
    if (buf == NULL) return PyErr_NoMemory();
    PyObject *out = PyList_New(0);
    if (out == NULL) { PyMem_Free(buf); return NULL; }
    long long pos = 0, target = every, buf_at = 0, buf_len = 0;
    size_t want = (size_t)read_bytes;
    int err = 0;
    while (pos + PREFIX_SIZE <= size && target < size) {
        if (pos < buf_at || pos + PREFIX_SIZE > buf_at + buf_len) {
            ssize_t got;
            Py_BEGIN_ALLOW_THREADS
            do { got = pread(fd, buf, want, (off_t)pos); } while (got < 0 && errno == EINTR);
            Py_END_ALLOW_THREADS
            if (got < 0) { err = errno; break; }
            buf_at = pos;
            buf_len = got;
            if (got < PREFIX_SIZE) break;
        }
        const unsigned char *p = buf + (pos - buf_at);
        const int32_t length = be32(p + SIZE_AT), minimum = min_size_of(p[MAGIC_AT]);
        if (minimum < 0 || length < minimum || pos + LOG_OVERHEAD + length > size) break;
        if (pos >= target) {
            PyObject *n = PyLong_FromLongLong(pos);
            if (n == NULL || PyList_Append(out, n) < 0) {
                Py_XDECREF(n);
                Py_DECREF(out);
                PyMem_Free(buf);
                return NULL;
            }
            Py_DECREF(n);
            target = (pos / every + 1) * every;
        }
        pos += LOG_OVERHEAD + length;
        want = length > large_entry ? (size_t)PREFIX_SIZE : (size_t)read_bytes;
    }
    PyMem_Free(buf);
    if (err) {
        Py_DECREF(out);
        errno = err;
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    return out;
}

/* ------------------------------------------------------------------ spans to Arrow columns
 * span_columns(parts): the records of every part, in order, as the buffers of Arrow columns
 * (twin of kseg.log.span_columns.span_columns_py, which documents the result). A part is
 * (data, record spans, header spans) as batch_spans gives them; every span is checked to lie
 * inside its data (ValueError otherwise), so no input reads out of bounds. */

typedef struct {
    Py_buffer data, recs, hdrs;
} ColPart;

static void
release_parts(ColPart *parts, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        if (parts[i].data.obj) PyBuffer_Release(&parts[i].data);
        if (parts[i].recs.obj) PyBuffer_Release(&parts[i].recs);
        if (parts[i].hdrs.obj) PyBuffer_Release(&parts[i].hdrs);
    }
    PyMem_Free(parts);
}

static int
span_inside(int64_t at, int64_t len, Py_ssize_t size, int nullable)
{
    if (len == -1) return nullable;
    return len >= 0 && at >= 0 && at <= (int64_t)size && len <= (int64_t)size - at;
}

/* One value (len -1: null) onto a binary column: its validity bit, its bytes, its end offset. */
static inline void
put_value(const char *data, int64_t at, int64_t len, unsigned char *valid, Py_ssize_t i, int32_t *offsets,
          char *out, int32_t *used, Py_ssize_t *nulls)
{
    if (len >= 0) {
        if (valid) valid[i >> 3] |= (unsigned char)(1u << (i & 7));
        memcpy(out + *used, data + at, (size_t)len);
        *used += (int32_t)len;
    } else if (nulls) {
        (*nulls)++;
    }
    offsets[i + 1] = *used;
}

/* One part's records, as columns_of reads them: its data, its record spans and the header
 * spans they index (first_header counts from hs). */
typedef struct {
    const char *data;
    Py_ssize_t size;
    const KsegRecordSpan *rs;
    Py_ssize_t n;
    const KsegHeaderSpan *hs;
    Py_ssize_t m;
} ColSrc;

/* What pass 1 counts over the parts. */
typedef struct {
    Py_ssize_t rows, nh;
    int64_t kbytes, vbytes, hkbytes, hvbytes;
} ColTotals;

/* Pass 1, part i: check every span of it, count its rows, headers and bytes into *t. */
static int
columns_count(const ColSrc *part, Py_ssize_t i, ColTotals *t)
{
    const Py_ssize_t size = part->size, n = part->n, m = part->m;
    const KsegRecordSpan *rs = part->rs;
    const KsegHeaderSpan *hs = part->hs;
    for (Py_ssize_t j = 0; j < n; j++) {
        const KsegRecordSpan *x = rs + j;
        if (!span_inside(x->key_at, x->key_len, size, 1) || !span_inside(x->value_at, x->value_len, size, 1)
                || x->first_header < 0 || x->header_count < 0 || x->first_header > (int64_t)m
                || x->header_count > (int64_t)m - x->first_header) {
            PyErr_Format(PyExc_ValueError, "span_columns(): record span %zd of part %zd is outside its data", j, i);
            return -1;
        }
        if (x->key_len > 0) t->kbytes += x->key_len;
        if (x->value_len > 0) t->vbytes += x->value_len;
        for (int64_t k = x->first_header; k < x->first_header + x->header_count; k++) {
            if (!span_inside(hs[k].key_at, hs[k].key_len, size, 0)
                    || !span_inside(hs[k].value_at, hs[k].value_len, size, 1)) {
                PyErr_Format(PyExc_ValueError, "span_columns(): header span %lld of part %zd is outside its data",
                             (long long)k, i);
                return -1;
            }
            t->hkbytes += hs[k].key_len;
            if (hs[k].value_len > 0) t->hvbytes += hs[k].value_len;
        }
        t->nh += (Py_ssize_t)x->header_count;
    }
    t->rows += n;
    return 0;
}

/* Pass 2: the records of every part, in order, as the 19 items of span_columns' result
 * (ColumnBuffers), from the totals pass 1 counted over them. */
static PyObject *
columns_fill(const ColSrc *src, Py_ssize_t nparts, const ColTotals *t)
{
    const Py_ssize_t rows = t->rows, nh = t->nh;
    const int64_t kbytes = t->kbytes, vbytes = t->vbytes, hkbytes = t->hkbytes, hvbytes = t->hvbytes;
    if (kbytes > INT32_MAX || vbytes > INT32_MAX || hkbytes > INT32_MAX || hvbytes > INT32_MAX
            || nh > INT32_MAX || rows > INT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "span_columns(): more than 2 GiB in one column");
        return NULL;
    }
    /* Pass 2: fill. */
    PyObject *b[14] = {NULL};
    const Py_ssize_t bits = (rows + 7) / 8, hbits = (nh + 7) / 8;
    const Py_ssize_t sizes[14] = {rows * 8, rows * 8, bits, (rows + 1) * 4, (Py_ssize_t)kbytes, bits,
                                  (rows + 1) * 4, (Py_ssize_t)vbytes, (rows + 1) * 4, (nh + 1) * 4,
                                  (Py_ssize_t)hkbytes, hbits, (nh + 1) * 4, (Py_ssize_t)hvbytes};
    for (int k = 0; k < 14; k++) {
        b[k] = PyBytes_FromStringAndSize(NULL, sizes[k]);
        if (!b[k]) { for (int z = 0; z < 14; z++) Py_XDECREF(b[z]); return NULL; }
    }
    int64_t *off = (int64_t *)PyBytes_AS_STRING(b[0]), *ts = (int64_t *)PyBytes_AS_STRING(b[1]);
    unsigned char *kvalid = (unsigned char *)PyBytes_AS_STRING(b[2]), *vvalid = (unsigned char *)PyBytes_AS_STRING(b[5]);
    unsigned char *hvvalid = (unsigned char *)PyBytes_AS_STRING(b[11]);
    int32_t *koff = (int32_t *)PyBytes_AS_STRING(b[3]), *voff = (int32_t *)PyBytes_AS_STRING(b[6]);
    int32_t *hoff = (int32_t *)PyBytes_AS_STRING(b[8]), *hkoff = (int32_t *)PyBytes_AS_STRING(b[9]);
    int32_t *hvoff = (int32_t *)PyBytes_AS_STRING(b[12]);
    char *kdata = PyBytes_AS_STRING(b[4]), *vdata = PyBytes_AS_STRING(b[7]);
    char *hkdata = PyBytes_AS_STRING(b[10]), *hvdata = PyBytes_AS_STRING(b[13]);
    memset(kvalid, 0, bits); memset(vvalid, 0, bits); memset(hvvalid, 0, hbits);
    int32_t kat = 0, vat = 0, hat = 0, hkat = 0, hvat = 0;
    Py_ssize_t row = 0, h = 0, knulls = 0, vnulls = 0, hvnulls = 0;
    koff[0] = voff[0] = hoff[0] = hkoff[0] = hvoff[0] = 0;
    for (Py_ssize_t i = 0; i < nparts; i++) {
        const char *data = src[i].data;
        const KsegRecordSpan *rs = src[i].rs;
        const KsegHeaderSpan *hs = src[i].hs;
        for (Py_ssize_t j = 0; j < src[i].n; j++, row++) {
            const KsegRecordSpan *x = rs + j;
            off[row] = x->offset;
            ts[row] = x->timestamp;
            put_value(data, x->key_at, x->key_len, kvalid, row, koff, kdata, &kat, &knulls);
            put_value(data, x->value_at, x->value_len, vvalid, row, voff, vdata, &vat, &vnulls);
            for (int64_t k = x->first_header; k < x->first_header + x->header_count; k++, h++) {
                put_value(data, hs[k].key_at, hs[k].key_len, NULL, h, hkoff, hkdata, &hkat, NULL);
                put_value(data, hs[k].value_at, hs[k].value_len, hvvalid, h, hvoff, hvdata, &hvat, &hvnulls);
            }
            hat += (int32_t)x->header_count;
            hoff[row + 1] = hat;
        }
    }
    return Py_BuildValue("(nnNNNNNnNNNnNNNNNNn)", rows, nh, b[0], b[1], b[2], b[3], b[4], knulls, b[5], b[6],
                         b[7], vnulls, b[8], b[9], b[10], b[11], b[12], b[13], hvnulls);
}

/* Both passes over the parts. */
static PyObject *
columns_of(const ColSrc *src, Py_ssize_t nparts)
{
    ColTotals t = {0};
    for (Py_ssize_t i = 0; i < nparts; i++)
        if (columns_count(src + i, i, &t) < 0) return NULL;
    return columns_fill(src, nparts, &t);
}

static PyObject *
span_columns(PyObject *self, PyObject *args)
{
    PyObject *seq;
    if (!PyArg_ParseTuple(args, "O", &seq)) return NULL;
    PyObject *fast = PySequence_Fast(seq, "span_columns() needs a sequence of (data, records, headers)");
    if (!fast) return NULL;
    const Py_ssize_t nparts = PySequence_Fast_GET_SIZE(fast);
    ColPart *parts = PyMem_Calloc(nparts ? nparts : 1, sizeof(ColPart));
    ColSrc *src = PyMem_Calloc(nparts ? nparts : 1, sizeof(ColSrc));
    ColTotals totals = {0};
    PyObject *result = NULL;
    if (!parts || !src) { PyErr_NoMemory(); goto done; }
    for (Py_ssize_t i = 0; i < nparts; i++) {
        PyObject *t = PySequence_Fast_GET_ITEM(fast, i);
        PyObject *d, *r, *h;
        if (!PyTuple_Check(t) || !PyArg_ParseTuple(t, "OOO", &d, &r, &h)) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "span_columns(): a part is (data, records, headers)");
            goto done;
        }
        if (PyObject_GetBuffer(d, &parts[i].data, PyBUF_SIMPLE) < 0) goto done;
        if (PyObject_GetBuffer(r, &parts[i].recs, PyBUF_SIMPLE) < 0) goto done;
        if (PyObject_GetBuffer(h, &parts[i].hdrs, PyBUF_SIMPLE) < 0) goto done;
        if (parts[i].recs.len % (Py_ssize_t)sizeof(KsegRecordSpan) || parts[i].hdrs.len % (Py_ssize_t)sizeof(KsegHeaderSpan)) {
            PyErr_SetString(PyExc_ValueError, "span_columns(): spans of a partial size");
            goto done;
        }
        src[i] = (ColSrc){(const char *)parts[i].data.buf, parts[i].data.len,
                          (const KsegRecordSpan *)parts[i].recs.buf, parts[i].recs.len / (Py_ssize_t)sizeof(KsegRecordSpan),
                          (const KsegHeaderSpan *)parts[i].hdrs.buf, parts[i].hdrs.len / (Py_ssize_t)sizeof(KsegHeaderSpan)};
        if (columns_count(src + i, i, &totals) < 0) goto done;
    }
    result = columns_fill(src, nparts, &totals);
done:
    if (parts) release_parts(parts, nparts);
    PyMem_Free(src);
    Py_DECREF(fast);
    return result;
}

/* ------------------------------------------------------------ sound runs of v2 batches */

/*
 * LZ4 blocks decompressed here, straight into a buffer the record walk then reads, by the
 * LZ4_decompress_safe of the liblz4 that python-lz4 carries (kseg's lz4 codec decompresses each
 * block of Kafka's frames with the same function, through lz4.block). configure_lz4 finds it in
 * that extension, already loaded; not found, every lz4 batch goes through the codec object.
 */
typedef int (*Lz4Decompress)(const char *src, char *dst, int src_size, int dst_capacity);
static Lz4Decompress lz4_decompress_safe = NULL;
static unsigned char lz4_header[16];
static Py_ssize_t lz4_header_len = 0, lz4_block_max = 0;
static uint32_t lz4_stored_bit = 0;
static long lz4_codec = -1;

#if defined(__unix__) || defined(__APPLE__)
#include <dlfcn.h>
#define HAVE_DLFCN 1
#endif

/* configure_lz4(library_path, codec_id, frame_header, block_max, stored_bit) -> bool: whether
 * LZ4_decompress_safe was found in that (loaded) library; the rest describe Kafka's frame
 * (kseg.codecs.kafka_lz4): the header it starts with, the largest block, the "stored" flag. */
static PyObject *
configure_lz4(PyObject *self, PyObject *args)
{
    const char *path;
    Py_buffer header;
    long codec;
    Py_ssize_t block_max;
    unsigned long stored;
    if (!PyArg_ParseTuple(args, "sly*nk", &path, &codec, &header, &block_max, &stored)) return NULL;
    int ok = header.len > 0 && header.len <= (Py_ssize_t)sizeof lz4_header && block_max > 0 && block_max <= (1 << 22)
             && stored != 0 && stored <= 0xFFFFFFFFul;
    if (!ok) {
        PyBuffer_Release(&header);
        PyErr_SetString(PyExc_ValueError, "configure_lz4: header of 1..16 bytes, a block size and a flag bit");
        return NULL;
    }
    memcpy(lz4_header, header.buf, (size_t)header.len);
    lz4_header_len = header.len;
    PyBuffer_Release(&header);
    lz4_block_max = block_max;
    lz4_stored_bit = (uint32_t)stored;
    lz4_codec = codec;
    lz4_decompress_safe = NULL;
#ifdef HAVE_DLFCN
    void *lib = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    if (lib != NULL) lz4_decompress_safe = (Lz4Decompress)dlsym(lib, "LZ4_decompress_safe");
#endif
    return PyBool_FromLong(lz4_decompress_safe != NULL);
}

/* One buffer for the decompressed records of the batch being walked (the GIL is held from
 * filling it to the end of its walk), grown to the largest batch seen. */
#define SCRATCH_KEPT ((Py_ssize_t)4 << 20)
static unsigned char *scratch = NULL;
static Py_ssize_t scratch_cap = 0;

static int
scratch_reserve(Py_ssize_t n)
{
    if (n <= scratch_cap) return 0;
    Py_ssize_t cap = scratch_cap ? scratch_cap : 1 << 16;
    while (cap < n) cap *= 2;
    unsigned char *q = PyMem_Realloc(scratch, (size_t)cap);
    if (!q) { PyErr_NoMemory(); return -1; }
    scratch = q;
    scratch_cap = cap;
    return 0;
}

static inline uint32_t le32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Where lz4_frame writes: reserve(sink, n) makes room for n bytes and returns the start (which
 * may move), NULL when there is no memory (an error set). */
typedef unsigned char *(*Lz4Reserve)(void *sink, Py_ssize_t n);

static unsigned char *
reserve_scratch(void *sink, Py_ssize_t n)
{
    (void)sink;
    return scratch_reserve(n) < 0 ? NULL : scratch;
}

/* Into a bytes object (*(PyObject **)sink), grown by doubling and trimmed by the caller. */
static unsigned char *
reserve_bytes(void *sink, Py_ssize_t n)
{
    PyObject **out = (PyObject **)sink;
    Py_ssize_t cap = PyBytes_GET_SIZE(*out);
    if (n > cap) {
        while (cap < n) cap *= 2;
        if (_PyBytes_Resize(out, cap) < 0) return NULL;
    }
    return (unsigned char *)PyBytes_AS_STRING(*out);
}

/* Kafka's LZ4 frame, as kafka_lz4._kafka_frame reads it: its exact header, blocks of at most
 * lz4_block_max bytes (stored or compressed) up to the end mark, bytes after it ignored, at most
 * limit bytes out. The decompressed size, or -1 when the frame is not that (the codec object then
 * decides, and words any error); -2 when reserve found no memory (an error set). */
static Py_ssize_t
lz4_frame_into(const unsigned char *p, Py_ssize_t end, Py_ssize_t limit, Lz4Reserve reserve, void *sink)
{
    if (end < lz4_header_len || memcmp(p, lz4_header, (size_t)lz4_header_len) != 0) return -1;
    Py_ssize_t pos = lz4_header_len, total = 0;
    while (pos + 4 <= end) {
        uint32_t size = le32(p + pos);
        pos += 4;
        if (size == 0) return total;
        int stored = (size & lz4_stored_bit) != 0;
        size &= ~lz4_stored_bit;
        if ((Py_ssize_t)size > lz4_block_max || pos + (Py_ssize_t)size > end) return -1;
        unsigned char *out = reserve(sink, total + lz4_block_max);
        if (out == NULL) return -2;
        Py_ssize_t got;
        if (stored) {
            memcpy(out + total, p + pos, size);
            got = size;
        } else {
            got = lz4_decompress_safe((const char *)p + pos, (char *)out + total, (int)size, (int)lz4_block_max);
            if (got < 0) return -1;
        }
        pos += size;
        total += got;
        if (total > limit) return -1;
    }
    return -1;
}

/* Into scratch, for a run's record walk. */
static Py_ssize_t
lz4_frame(const unsigned char *p, Py_ssize_t end, Py_ssize_t limit)
{
    Py_ssize_t got = lz4_frame_into(p, end, limit, reserve_scratch, NULL);
    if (got == -2) {
        PyErr_Clear();
        return -1;
    }
    return got;
}

/* lz4_frame_bytes(data, limit) -> bytes | None: a batch's Kafka LZ4 frame decompressed straight
 * into a new bytes object (no block-by-block pieces to join), for the paths that hand records
 * to Python (kseg.log.records.decompress_payload); None when it is not exactly such a frame,
 * exceeds limit or LZ4_decompress_safe was not found: the codec object then decodes it, and
 * words any error (it is the twin). */
static PyObject *
lz4_frame_bytes(PyObject *self, PyObject *args)
{
    Py_buffer in;
    Py_ssize_t limit;
    if (!PyArg_ParseTuple(args, "y*n", &in, &limit)) return NULL;
    if (lz4_decompress_safe == NULL || limit < 0) {
        PyBuffer_Release(&in);
        Py_RETURN_NONE;
    }
    /* A first guess of three times the frame (Kafka's batches of text compress about that
     * well), at least one block, at most the limit and a block. */
    Py_ssize_t cap = in.len < (PY_SSIZE_T_MAX / 4) ? in.len * 3 : in.len;
    if (cap < lz4_block_max) cap = lz4_block_max;
    if (limit < PY_SSIZE_T_MAX - lz4_block_max && cap > limit + lz4_block_max) cap = limit + lz4_block_max;
    PyObject *out = PyBytes_FromStringAndSize(NULL, cap);
    if (out == NULL) {
        PyBuffer_Release(&in);
        return NULL;
    }
    Py_ssize_t got = lz4_frame_into((const unsigned char *)in.buf, in.len, limit, reserve_bytes, &out);
    PyBuffer_Release(&in);
    if (got == -2) {
        Py_XDECREF(out);
        return NULL;
    }
    if (got < 0) {
        Py_DECREF(out);
        Py_RETURN_NONE;
    }
    if (got != PyBytes_GET_SIZE(out) && _PyBytes_Resize(&out, got) < 0) return NULL;
    return out;
}

static inline int
field_ll(PyObject *batch, Py_ssize_t at, long long *out)
{
    PyObject *v = PyTuple_GET_ITEM(batch, at);
    if (!PyLong_Check(v)) return -1;
    int overflow;
    *out = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow || (*out == -1 && PyErr_Occurred())) { PyErr_Clear(); return -1; }
    return 0;
}

/* A KsegError (the batch does not decompress: the per-batch path says why) ends the run
 * quietly; anything else (an interrupt, no memory) is raised. */
static int
ends_run(PyObject *kseg_error)
{
    if (!PyErr_ExceptionMatches(kseg_error) && !PyErr_ExceptionMatches(DecodeError)) return 0;
    PyErr_Clear();
    return 1;
}

/* A run's view of one entry: a v2 batch tuple with int64 fields, contiguous bytes of a batch's
 * size at least, no attribute bit of reject_mask and a codec up to max_codec; -1: not that
 * (the run ends before it). */
typedef struct {
    PyObject *raw_obj;
    long long position, attrs, base_offset, crc, max_ts, size, lod, base_ts, count, pid;
    long codec;
} V2Fields;

static int
v2_fields(PyObject *b, long reject_mask, long max_codec, V2Fields *f)
{
    if (!PyTuple_Check(b) || PyTuple_GET_SIZE(b) != N_BATCH_FIELDS) return -1;
    f->raw_obj = PyTuple_GET_ITEM(b, B_RAW);
    if (!PyMemoryView_Check(f->raw_obj)) return -1;
    Py_buffer *raw = PyMemoryView_GET_BUFFER(f->raw_obj);
    long long magic;
    if (field_ll(b, B_MAGIC, &magic) < 0 || magic != 2 || field_ll(b, B_ATTRS, &f->attrs) < 0
        || field_ll(b, B_BASE_OFFSET, &f->base_offset) < 0 || field_ll(b, B_CRC, &f->crc) < 0
        || field_ll(b, B_MAX_TS, &f->max_ts) < 0 || field_ll(b, B_SIZE, &f->size) < 0 || field_ll(b, B_LOD, &f->lod) < 0
        || field_ll(b, B_BASE_TS, &f->base_ts) < 0 || field_ll(b, B_COUNT, &f->count) < 0
        || field_ll(b, B_PID, &f->pid) < 0 || field_ll(b, B_POSITION, &f->position) < 0)
        return -1;
    f->codec = (long)(f->attrs & CODEC_MASK);
    if ((f->attrs & reject_mask) || f->codec > max_codec || !PyBuffer_IsContiguous(raw, 'C') || raw->len < V2_RECORDS_AT)
        return -1;
    return 0;
}

/* A batch's summary for the index checks, appended to rows (kseg.companions.check.BatchRows):
 * position, first offset, last offset, maxTimestamp, size, as native int64s. */
static int
summary_row(PyObject *rows, const V2Fields *f, long long last)
{
    const int64_t row[5] = {f->position, f->base_offset, last, f->max_ts, f->size};
    Py_ssize_t at = PyByteArray_GET_SIZE(rows);
    if (PyByteArray_Resize(rows, at + (Py_ssize_t)sizeof row) < 0) return -1;
    memcpy(PyByteArray_AS_STRING(rows) + at, row, sizeof row);
    return 0;
}

/* Whether crc_fn(the bytes the v2 CRC covers) is `crc`: 1 yes, 0 no, -1 an error to raise. */
static int
crc_matches(PyObject *raw_obj, PyObject *crc_fn, long long crc)
{
    PyObject *covered = PySequence_GetSlice(raw_obj, V2_CRC_START, PyMemoryView_GET_BUFFER(raw_obj)->len);
    if (!covered) return -1;
    PyObject *computed = PyObject_CallOneArg(crc_fn, covered);
    Py_DECREF(covered);
    if (!computed) return -1;
    long long c = PyLong_AsLongLong(computed);
    Py_DECREF(computed);
    if (c == -1 && PyErr_Occurred()) return -1;
    return c == crc;
}

/* A v2 batch's records section for a run: as stored, or decompressed (Kafka's LZ4 frames into
 * scratch, else by decompress(codec, view) -> bytes, then held in *inflated for the caller to
 * release). 1: *data and *len set; 0: the batch does not decompress (a kseg error: the
 * per-batch path says why), the run ends before it; -1: an error to raise. */
static int
run_records(PyObject *raw_obj, long codec, Py_ssize_t limit, PyObject *decompress, PyObject *kseg_error,
            const unsigned char **data, Py_ssize_t *len, PyObject **inflated)
{
    Py_buffer *raw = PyMemoryView_GET_BUFFER(raw_obj);
    *data = (const unsigned char *)raw->buf + V2_RECORDS_AT;
    *len = raw->len - V2_RECORDS_AT;
    *inflated = NULL;
    if (codec == 0) return 1;
    if (codec == lz4_codec && lz4_decompress_safe != NULL) {
        Py_ssize_t got = lz4_frame(*data, *len, limit);
        if (got >= 0) {
            *data = scratch;
            *len = got;
            return 1;
        }
    }
    PyObject *payload = PySequence_GetSlice(raw_obj, V2_RECORDS_AT, raw->len);
    PyObject *id = payload ? PyLong_FromLong(codec) : NULL;
    PyObject *out = id ? PyObject_CallFunctionObjArgs(decompress, id, payload, NULL) : NULL;
    Py_XDECREF(payload);
    Py_XDECREF(id);
    if (!out) return ends_run(kseg_error) ? 0 : -1;
    if (!PyBytes_Check(out)) {
        Py_DECREF(out);
        PyErr_SetString(PyExc_TypeError, "decompress() must return bytes");
        return -1;
    }
    *inflated = out;
    *data = (const unsigned char *)PyBytes_AS_STRING(out);
    *len = PyBytes_GET_SIZE(out);
    return 1;
}

/*
 * sound_v2_run(batches, start, last, name_base, limit, crc32c, decompress, kseg_error,
 *              reject_mask, log_append_mask, max_codec) -> (stop, records, bytes, last)
 * The twin of kseg.log.checks.sound_v2_run_py: from batches[start], the v2 batches in which
 * verify finds nothing to say, taken at once: the CRC-32C (crc32c(view) -> int), the header
 * (lastOffsetDelta, record count), the records decompressed (in C for Kafka's LZ4 frames, else
 * decompress(codec, view) -> bytes) and walked (walk_v2), offset deltas, maxTimestamp, and the
 * offsets from ``last`` (None: any first offset) on, none below ``name_base`` (None: no bound).
 * The run stops before the first batch that is not such, or has attributes & reject_mask
 * (control, bits verify notes) or a codec above max_codec; the per-batch path takes that one.
 * decompress None: verify --quick's run, the records neither decompressed nor walked.
 */
static PyObject *
sound_v2_run(PyObject *self, PyObject *args)
{
    PyObject *batches, *last_obj, *base_obj, *crc_fn, *decompress, *kseg_error, *rows = Py_None;
    Py_ssize_t start, limit;
    long reject_mask, lat_mask, max_codec;
    REQUIRE_CONFIGURED;
    if (!PyArg_ParseTuple(args, "O!nOOnOOOlll|O", &PyList_Type, &batches, &start, &last_obj, &base_obj, &limit,
                          &crc_fn, &decompress, &kseg_error, &reject_mask, &lat_mask, &max_codec, &rows))
        return NULL;
    if (rows != Py_None && !PyByteArray_Check(rows)) {
        PyErr_SetString(PyExc_TypeError, "rows is a bytearray or None");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(batches), i = start;
    if (start < 0 || start > n) {
        PyErr_SetString(PyExc_IndexError, "start outside the list");
        return NULL;
    }
    long long last = 0, name_base = 0, records = 0, bytes = 0;
    int has_last = last_obj != Py_None, has_base = base_obj != Py_None;
    if ((has_last && !PyLong_Check(last_obj)) || (has_base && !PyLong_Check(base_obj))) {
        PyErr_SetString(PyExc_TypeError, "last and name_base are ints or None");
        return NULL;
    }
    int overflow = 0;
    if (has_last) {
        last = PyLong_AsLongLongAndOverflow(last_obj, &overflow);
        if (overflow) goto done; /* no int64 first offset follows it */
    }
    if (has_base) {
        name_base = PyLong_AsLongLongAndOverflow(base_obj, &overflow);
        if (overflow > 0) goto done; /* no int64 first offset is at or past it */
        if (overflow < 0) has_base = 0; /* every one is */
    }
    if (PyErr_Occurred()) return NULL;
    for (; i < n; i++) {
        V2Fields f;
        if (v2_fields(PyList_GET_ITEM(batches, i), reject_mask, max_codec, &f) < 0) break;
        PyObject *raw_obj = f.raw_obj;
        const long long attrs = f.attrs, base_offset = f.base_offset, crc = f.crc, max_ts = f.max_ts, size = f.size,
                        lod = f.lod, base_ts = f.base_ts, count = f.count;
        const long codec = f.codec;
        /* the header */
        if (lod < 0 || count < 0 || count > lod + 1) break;
        long long first = base_offset, batch_last;
        if (__builtin_add_overflow(base_offset, lod, &batch_last)) break;
        if (first < 0 || (has_base && first < name_base)) break;
        if (has_last && (last == LLONG_MAX || first != last + 1)) break;
        /* the CRC-32C, by the function the per-batch path uses */
        int crc_ok = crc_matches(raw_obj, crc_fn, crc);
        if (crc_ok < 0) return NULL;
        if (!crc_ok) break;
        if (decompress == Py_None) { /* verify --quick: the header and the CRC only */
            if (rows != Py_None && summary_row(rows, &f, batch_last) < 0) return NULL;
            records += count;
            bytes += size;
            last = batch_last;
            has_last = 1;
            continue;
        }
        /* the records, decompressed */
        const unsigned char *data;
        Py_ssize_t data_len;
        PyObject *inflated = NULL;
        int got = run_records(raw_obj, codec, limit, decompress, kseg_error, &data, &data_len, &inflated);
        if (got < 0) return NULL;
        if (got == 0) break;
        /* the records, walked */
        V2Summary sum;
        PyObject *walked = walk_v2(data, data_len, 0, base_ts, (Py_ssize_t)count, 0, 0, Py_None, Py_None, 0, &sum, NULL, NULL);
        Py_XDECREF(inflated);
        if (!walked) {
            if (ends_run(kseg_error)) break;
            return NULL;
        }
        Py_DECREF(walked);
        if (!sum.ordered) break;
        if (count && (sum.min_delta < 0 || sum.max_delta > lod)) break;
        if (count && !(attrs & lat_mask) && sum.max_ts != max_ts) break;
        if (rows != Py_None && summary_row(rows, &f, batch_last) < 0) return NULL;
        records += count;
        bytes += size;
        last = batch_last;
        has_last = 1;
    }
done:
    if (scratch_cap > SCRATCH_KEPT) { /* a large batch's buffer is not kept for the next call */
        PyMem_Free(scratch);
        scratch = NULL;
        scratch_cap = 0;
    }
    if (has_last && i > start) return Py_BuildValue("(nLLL)", i, records, bytes, last);
    Py_INCREF(last_obj);
    return Py_BuildValue("(nLLN)", i, records, bytes, last_obj);
}

/* The CRC-32C crc_fn computes of the bytes a v2 batch's CRC covers, in *out (-1: an error to raise). */
static int
crc_computed(PyObject *raw_obj, PyObject *crc_fn, PyObject **out)
{
    PyObject *covered = PySequence_GetSlice(raw_obj, V2_CRC_START, PyMemoryView_GET_BUFFER(raw_obj)->len);
    *out = covered ? PyObject_CallOneArg(crc_fn, covered) : NULL;
    Py_XDECREF(covered);
    if (*out && !PyLong_Check(*out)) {
        Py_CLEAR(*out);
        PyErr_SetString(PyExc_TypeError, "crc32c() must return an int");
    }
    return *out ? 0 : -1;
}

/* Puts {index: computed} in bad when the computed CRC is not the stored one (-1: an error to raise). */
static int
note_bad_crc(PyObject *bad, Py_ssize_t i, PyObject *computed, long long stored)
{
    long long c = PyLong_AsLongLong(computed);
    if (c == -1 && PyErr_Occurred()) return -1;
    if (c == stored) return 0;
    PyObject *at = PyLong_FromSsize_t(i);
    int rc = at ? PyDict_SetItem(bad, at, computed) : -1;
    Py_XDECREF(at);
    return rc;
}

/*
 * v2_header_run(batches, start, crc32c, max_codec) -> (stop, records, bad)
 * The twin of kseg.log.records.v2_header_run_py: from batches[start], the v2 batches whose lines
 * alone a dump shows (kseg.ops.dump.HeaderRunEvent), taken at once: a codec up to max_codec (a
 * name the lines print) and a last offset an int64 holds. ``records``: their record counts
 * summed; ``bad``: {index in the list: the CRC-32C computed (crc32c(view) -> int)} of those whose
 * stored CRC does not match. A batch the run does not take goes the per-batch way.
 */
static PyObject *
v2_header_run(PyObject *self, PyObject *args)
{
    PyObject *batches, *crc_fn;
    Py_ssize_t start;
    long max_codec;
    REQUIRE_CONFIGURED;
    if (!PyArg_ParseTuple(args, "O!nOl", &PyList_Type, &batches, &start, &crc_fn, &max_codec)) return NULL;
    Py_ssize_t n = PyList_GET_SIZE(batches), i = start;
    if (start < 0 || start > n) {
        PyErr_SetString(PyExc_IndexError, "start outside the list");
        return NULL;
    }
    PyObject *bad = PyDict_New();
    if (!bad) return NULL;
    long long records = 0;
    for (; i < n; i++) {
        V2Fields f;
        long long last, sum;
        PyObject *computed;
        if (v2_fields(PyList_GET_ITEM(batches, i), 0, max_codec, &f) < 0) break;
        if (__builtin_add_overflow(f.base_offset, f.lod, &last) || __builtin_add_overflow(records, f.count, &sum))
            break;
        int rc = crc_computed(f.raw_obj, crc_fn, &computed);
        if (rc == 0) rc = note_bad_crc(bad, i, computed, f.crc);
        Py_XDECREF(computed);
        if (rc < 0) {
            Py_DECREF(bad);
            return NULL;
        }
        records = sum;
    }
    return Py_BuildValue("(nLN)", i, records, bad);
}

/*
 * v2_record_run(batches, start, crc32c, max_codec, reject_mask, lat_mask, limit, decompress, kseg_error,
 *               max_bytes)
 *   -> (stop, records, bad, data, record_spans, header_spans)
 * From batches[start], the v2 batches whose lines and records a dump shows, taken at once
 * (kseg.ops.dump.HeaderRunEvent with spans): those v2_header_run takes (``records`` and ``bad`` as
 * it gives them) with no attribute bit of reject_mask (control batches: their records are shown
 * decoded) whose records decompress (Kafka's LZ4 frames in C, else decompress(codec, view) ->
 * bytes; a kseg_error ends the run quietly) and walk as decode_v2 walks them (a DecodeError ends
 * it: the per-batch path says why), LogAppendTime (lat_mask) imposing the batch's maxTimestamp. ``data``: their records sections, as stored or decompressed,
 * one after another; the spans (_spans.h) lie in it, each batch's record count of them in turn.
 * The run stops before a batch whose records as stored would bring data past max_bytes (the
 * first one too: a batch that large goes the per-batch way, which reads it in place) and after
 * the one that brings it to max_bytes. Its reference is batch_spans of each batch
 * (kseg.log.records.v2_record_run_py).
 */
static PyObject *
v2_record_run(PyObject *self, PyObject *args)
{
    PyObject *batches, *crc_fn, *decompress, *kseg_error;
    Py_ssize_t start, limit, max_bytes;
    long max_codec, reject_mask, lat_mask;
    REQUIRE_CONFIGURED;
    if (!PyArg_ParseTuple(args, "O!nOlllnOOn", &PyList_Type, &batches, &start, &crc_fn, &max_codec, &reject_mask,
                          &lat_mask, &limit, &decompress, &kseg_error, &max_bytes))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(batches), i = start;
    if (start < 0 || start > n) {
        PyErr_SetString(PyExc_IndexError, "start outside the list");
        return NULL;
    }
    PyObject *bad = PyDict_New(), *data = NULL, *result = NULL;
    SpanBuf rbuf = {0}, hbuf = {0};
    Py_ssize_t used = 0, cap = 0;
    long long records = 0;
    if (!bad) return NULL;
    for (; i < n && used < max_bytes; i++) {
        V2Fields f;
        long long last, sum;
        if (v2_fields(PyList_GET_ITEM(batches, i), reject_mask, max_codec, &f) < 0) break;
        if (__builtin_add_overflow(f.base_offset, f.lod, &last) || __builtin_add_overflow(records, f.count, &sum)
                || f.count < 0)
            break;
        Py_buffer *raw = PyMemoryView_GET_BUFFER(f.raw_obj);
        if (raw->len - V2_RECORDS_AT > max_bytes - used) break;
        const unsigned char *section;
        Py_ssize_t len;
        PyObject *inflated = NULL;
        int got = run_records(f.raw_obj, f.codec, limit, decompress, kseg_error, &section, &len, &inflated);
        if (got < 0) goto done;
        if (got == 0) break;
        const Py_ssize_t r0 = rbuf.n, h0 = hbuf.n;
        V2Summary sum_;
        PyObject *walked = walk_v2(section, len, f.base_offset, f.base_ts, (Py_ssize_t)f.count,
                                   (f.attrs & lat_mask) != 0, f.max_ts, Py_None, Py_None, 1, &sum_, &rbuf,
                                   &hbuf);
        if (!walked) {
            rbuf.n = r0;
            hbuf.n = h0;
            Py_XDECREF(inflated);
            if (!PyErr_ExceptionMatches(DecodeError)) goto done;
            PyErr_Clear();
            break;
        }
        Py_DECREF(walked);
        if (used + len > cap) { /* the data, grown by doubling (spans hold positions, not pointers) */
            Py_ssize_t more = cap ? cap : 1 << 16;
            while (more < used + len) more *= 2;
            if (!data) data = PyBytes_FromStringAndSize(NULL, more);
            else if (_PyBytes_Resize(&data, more) < 0) data = NULL;
            if (!data) { Py_XDECREF(inflated); goto done; }
            cap = more;
        }
        if (len) memcpy(PyBytes_AS_STRING(data) + used, section, (size_t)len);
        Py_XDECREF(inflated);
        for (Py_ssize_t at = r0; at < rbuf.n; at += (Py_ssize_t)sizeof(KsegRecordSpan)) {
            KsegRecordSpan *r = (KsegRecordSpan *)(rbuf.p + at);
            r->key_at += used;
            r->value_at += used;
        }
        for (Py_ssize_t at = h0; at < hbuf.n; at += (Py_ssize_t)sizeof(KsegHeaderSpan)) {
            KsegHeaderSpan *h = (KsegHeaderSpan *)(hbuf.p + at);
            h->key_at += used;
            h->value_at += used;
        }
        used += len;
        PyObject *computed;
        int rc = crc_computed(f.raw_obj, crc_fn, &computed);
        if (rc == 0) rc = note_bad_crc(bad, i, computed, f.crc);
        Py_XDECREF(computed);
        if (rc < 0) goto done;
        records = sum;
    }
    if (!data) data = PyBytes_FromStringAndSize(NULL, 0);
    else if (used != cap && _PyBytes_Resize(&data, used) < 0) data = NULL;
    if (!data) goto done;
    PyObject *r = span_bytes(&rbuf), *h = r ? span_bytes(&hbuf) : NULL;
    if (r && h) result = Py_BuildValue("(nLOONN)", i, records, bad, data, r, h);
    else Py_XDECREF(r);
done:
    if (scratch_cap > SCRATCH_KEPT) { /* a large batch's buffer is not kept for the next call */
        PyMem_Free(scratch);
        scratch = NULL;
        scratch_cap = 0;
    }
    PyMem_Free(rbuf.p);
    PyMem_Free(hbuf.p);
    Py_XDECREF(data);
    Py_DECREF(bad);
    return result;
}

/*
 * stats_v2_run(batches, start, limit, crc32c, decompress, kseg_error, reject_mask, lat_mask,
 *              max_codec, registers, p) -> (stop, summary, rows)
 * The v2 batches from batches[start] that `kseg stats` counts the same whatever reads them,
 * counted at once: CRC-32C as stored, no attribute bit of reject_mask (control batches:
 * their marker is read the long way), a built-in codec (at most max_codec), the records
 * decompressed as sound_v2_run does and walked by _sketch.h's walk, their keys into the
 * HyperLogLog registers (bytearray of 2**p). stop == start: count batches[start] the long way.
 * summary: (records, bytes, keyless, tombstones, compressed stored, compressed raw, smallest
 * record timestamp >= 0 or None, largest batch maxTimestamp >= 0 or None, bytes per codec id
 * as a tuple of max_codec + 1). rows: per batch taken, int64s (size, record count,
 * maxTimestamp, producer id, last offset, attributes), native order. Its reference is
 * kseg.ops.stats counting batch by batch (stats_v2_run_py takes no batch).
 */
#define STATS_ROW 6
static uint32_t *marks_buf = NULL;
static Py_ssize_t marks_cap = 0;

static PyObject *
stats_v2_run(PyObject *self, PyObject *args)
{
    PyObject *batches, *crc_fn, *decompress, *kseg_error;
    Py_ssize_t start, limit;
    long reject_mask, lat_mask, max_codec;
    Py_buffer regs;
    int p;
    REQUIRE_CONFIGURED;
    if (!PyArg_ParseTuple(args, "O!nnOOOlllw*i", &PyList_Type, &batches, &start, &limit, &crc_fn, &decompress,
                          &kseg_error, &reject_mask, &lat_mask, &max_codec, &regs, &p))
        return NULL;
    PyObject *rows = NULL, *result = NULL;
    long long by_codec[8] = {0};
    Py_ssize_t n = PyList_GET_SIZE(batches), i = start;
    if (p < 4 || p > 18 || regs.len != ((Py_ssize_t)1 << p) || max_codec < 0 || max_codec > 7) {
        PyErr_SetString(PyExc_ValueError, "stats_v2_run: registers of 2**p bytes, p in 4..18, codecs 0..7");
        goto done;
    }
    if (start < 0 || start > n) {
        PyErr_SetString(PyExc_IndexError, "start outside the list");
        goto done;
    }
    rows = PyBytes_FromStringAndSize(NULL, (n - start) * STATS_ROW * (Py_ssize_t)sizeof(int64_t));
    if (!rows) goto done;
    int64_t *row = (int64_t *)PyBytes_AS_STRING(rows);
    long long records = 0, bytes = 0, keyless = 0, tombstones = 0, stored = 0, inflated_bytes = 0;
    long long min_ts = 0, max_ts_all = 0;
    int has_min = 0, has_max = 0;
#if PY_BIG_ENDIAN
    n = start; /* _sketch.h reads native little-endian words */
#endif
    for (; i < n; i++) {
        V2Fields f;
        if (v2_fields(PyList_GET_ITEM(batches, i), reject_mask, max_codec, &f) < 0) break;
        PyObject *raw_obj = f.raw_obj;
        Py_buffer *raw = PyMemoryView_GET_BUFFER(raw_obj);
        const long long attrs = f.attrs, crc = f.crc, max_ts = f.max_ts, size = f.size, base_ts = f.base_ts,
                        count = f.count, pid = f.pid;
        const long codec = f.codec;
        long long batch_last;
        if (count < 0 || __builtin_add_overflow(f.base_offset, f.lod, &batch_last)) break;
        int ok = crc_matches(raw_obj, crc_fn, crc);
        if (ok < 0) goto done;
        if (!ok) break;
        const unsigned char *data;
        Py_ssize_t data_len;
        PyObject *inflated = NULL;
        int got = run_records(raw_obj, codec, limit, decompress, kseg_error, &data, &data_len, &inflated);
        if (got < 0) goto done;
        if (got == 0) break;
        if (count > data_len || (count > marks_cap && count > 0)) {
            if (count > data_len) { Py_XDECREF(inflated); break; } /* a record takes a byte at least */
            uint32_t *m = PyMem_Realloc(marks_buf, (size_t)count * sizeof *m);
            if (!m) { Py_XDECREF(inflated); PyErr_NoMemory(); goto done; }
            marks_buf = m;
            marks_cap = count;
        }
        SketchSum sum;
        const char *why = sk_walk_v2(data, data_len, (Py_ssize_t)count, p, marks_buf, (int64_t)base_ts, &sum);
        long long first_ts = 0;
        int has_first = 0;
        if (!why) {
            if (attrs & lat_mask) {
                first_ts = max_ts;
                has_first = 1;
            } else if (sum.have_min) {
                first_ts = sum.min_ts;
                has_first = 1;
            }
        }
        Py_XDECREF(inflated);
        if (why) break;
        sk_apply(regs.buf, marks_buf, sum.marks);
        records += count;
        bytes += size;
        by_codec[codec] += size;
        keyless += sum.keyless;
        tombstones += sum.tombstones;
        if (codec != 0) {
            stored += (long long)raw->len - V2_RECORDS_AT;
            inflated_bytes += data_len;
        }
        if (has_first && first_ts >= 0 && (!has_min || first_ts < min_ts)) { min_ts = first_ts; has_min = 1; }
        if (max_ts >= 0 && (!has_max || max_ts > max_ts_all)) { max_ts_all = max_ts; has_max = 1; }
        row[0] = size; row[1] = count; row[2] = max_ts; row[3] = pid; row[4] = batch_last; row[5] = attrs;
        row += STATS_ROW;
    }
    if (_PyBytes_Resize(&rows, (i - start) * STATS_ROW * (Py_ssize_t)sizeof(int64_t)) < 0) goto done;
    {
        PyObject *codecs = PyTuple_New(max_codec + 1);
        if (!codecs) goto done;
        for (long c = 0; c <= max_codec; c++) {
            PyObject *v = PyLong_FromLongLong(by_codec[c]);
            if (!v) { Py_DECREF(codecs); goto done; }
            PyTuple_SET_ITEM(codecs, c, v);
        }
        PyObject *lo = has_min ? PyLong_FromLongLong(min_ts) : Py_NewRef(Py_None);
        PyObject *hi = has_max ? PyLong_FromLongLong(max_ts_all) : Py_NewRef(Py_None);
        if (!lo || !hi) { Py_XDECREF(lo); Py_XDECREF(hi); Py_DECREF(codecs); goto done; }
        result = Py_BuildValue("(n(LLLLLLNNN)O)", i, records, bytes, keyless, tombstones, stored, inflated_bytes,
                               lo, hi, codecs, rows);
    }
done:
    if (scratch_cap > SCRATCH_KEPT) {
        PyMem_Free(scratch);
        scratch = NULL;
        scratch_cap = 0;
    }
    if (marks_cap > (SCRATCH_KEPT >> 2)) {
        PyMem_Free(marks_buf);
        marks_buf = NULL;
        marks_cap = 0;
    }
    Py_XDECREF(rows);
    PyBuffer_Release(&regs);
    return result;
}

/*
 * index_sound(kind, entries, base, rows, log_size) -> bool
 * Whether the per-entry checks of kseg.companions.check (offset_index_findings, kind 0, on .index
 * entries; time_index_findings, kind 1, on .timeindex entries; entries as stored, whole ones) find
 * nothing against the log's batches: rows as BatchRows holds them (position, first offset or
 * INT64_MIN, last offset, maxTimestamp, size; native int64s, file order). One pass over both,
 * no Python object per entry. False on any doubt and never True where those checks find
 * something: batches whose positions (.index) or last offsets (.timeindex) do not increase, or a
 * time entry naming an offset inside a batch (older brokers write them), go to the Python loops,
 * which say what they find. Its reference: kseg.companions.check.index_sound_py.
 */
static inline int64_t row_at(const unsigned char *rows, Py_ssize_t k, int field)
{
    int64_t v;
    memcpy(&v, rows + (k * 5 + field) * (Py_ssize_t)sizeof v, sizeof v);
    return v;
}

static inline int64_t be64s(const unsigned char *p)
{
    return (int64_t)((uint64_t)be32(p) << 32 | (uint64_t)(uint32_t)be32(p + 4));
}

static int
offset_entries_sound(const unsigned char *e, Py_ssize_t m, long long base, const unsigned char *rows, Py_ssize_t n,
                     long long log_size)
{
    for (Py_ssize_t j = 1; j < n; j++)
        if (row_at(rows, j, 0) <= row_at(rows, j - 1, 0)) return 0;
    Py_ssize_t k = 0;
    int64_t before = INT64_MIN, prev_off = 0, prev_pos = 0;
    for (Py_ssize_t i = 0; i < m; i++, e += 8) {
        const int64_t rel = be32(e), pos = be32(e + 4);
        long long off;
        if (rel < 0 || pos < 0 || __builtin_add_overflow(base, (long long)rel, &off)) return 0;
        if (i && (off <= prev_off || pos <= prev_pos)) return 0;
        prev_off = off;
        prev_pos = pos;
        if (pos >= log_size) return 0;
        while (k < n && row_at(rows, k, 0) < pos) {
            const int64_t last = row_at(rows, k, 2);
            if (last > before) before = last;
            k++;
        }
        if (k == n || row_at(rows, k, 0) != pos) return 0; /* not a batch start */
        if (k > 0 && before >= off) return 0;                 /* a batch before it holds the offset */
        const int64_t first = row_at(rows, k, 1);
        if (first != INT64_MIN && first > off) return 0;       /* its batch starts after it */
    }
    return 1;
}

static int
time_entries_sound(const unsigned char *e, Py_ssize_t m, long long base, const unsigned char *rows, Py_ssize_t n)
{
    for (Py_ssize_t j = 1; j < n; j++)
        if (row_at(rows, j, 2) <= row_at(rows, j - 1, 2)) return 0;
    Py_ssize_t k = 0;
    int64_t upto = INT64_MIN, prev_ts = 0, prev_off = 0; /* upto: the largest maxTimestamp of batches 0..k-1 */
    for (Py_ssize_t i = 0; i < m; i++, e += 12) {
        const int64_t ts = be64s(e), rel = be32(e + 8);
        long long off;
        if (rel < 0 || __builtin_add_overflow(base, (long long)rel, &off)) return 0;
        if (i && (ts <= prev_ts || off < prev_off)) return 0;
        prev_ts = ts;
        prev_off = off;
        while (k < n && row_at(rows, k, 2) < off) {
            const int64_t t = row_at(rows, k, 3);
            if (t > upto) upto = t;
            k++;
        }
        if (k == n || row_at(rows, k, 2) != off) return 0; /* no batch ends at it */
        if (row_at(rows, k, 3) != ts || upto > ts) return 0;
    }
    return 1;
}

static PyObject *
index_sound(PyObject *self, PyObject *args)
{
    int kind;
    Py_buffer entries, rows;
    long long base, log_size;
    if (!PyArg_ParseTuple(args, "iy*Ly*L", &kind, &entries, &base, &rows, &log_size)) return NULL;
    PyObject *result = NULL;
    const Py_ssize_t size = kind == 0 ? 8 : 12;
    if ((kind != 0 && kind != 1) || entries.len % size || rows.len % (5 * (Py_ssize_t)sizeof(int64_t))) {
        PyErr_SetString(PyExc_ValueError, "index_sound: kind 0 or 1, whole entries, rows of five int64s");
        goto done;
    }
    const Py_ssize_t m = entries.len / size, n = rows.len / (5 * (Py_ssize_t)sizeof(int64_t));
    const int sound = kind == 0
        ? offset_entries_sound(entries.buf, m, base, rows.buf, n, log_size)
        : time_entries_sound(entries.buf, m, base, rows.buf, n);
    result = PyBool_FromLong(sound);
done:
    PyBuffer_Release(&entries);
    PyBuffer_Release(&rows);
    return result;
}

/* ------------------------------------------------------------ runs of v2 batches as columns */

/* One batch of a column run: where its data and its record spans are, and its header's facts. */
typedef struct {
    PyObject *batch; /* held: its raw bytes are read until the end */
    PyObject *inflated; /* held: its records decompressed (NULL: uncompressed, read in raw) */
    const char *data;
    Py_ssize_t size, first_span, spans;
    long long position, leader_epoch, producer_id, producer_epoch, base_sequence, base_offset, attrs, codec;
} RunBatch;

static SpanBuf run_record_spans = {0}, run_header_spans = {0};
static int run_spans_busy = 0;

/* A new bytes object of n bytes, zeroed; its buffer in *at. */
static PyObject *
zeroed(Py_ssize_t n, char **at)
{
    PyObject *b = PyBytes_FromStringAndSize(NULL, n);
    if (!b) return NULL;
    *at = PyBytes_AS_STRING(b);
    memset(*at, 0, (size_t)n);
    return b;
}

/*
 * v2_column_run(batches, start, lo, hi, max_rows, max_bytes, controls, crc32c, decompress,
 *               kseg_error, max_codec, control_mask, transactional_mask, log_append_mask)
 *   -> (stop, rows, bytes, columns, batch_columns)
 * The twin of kseg.log.span_columns.v2_column_run_py, which documents the result: from
 * batches[start], the v2 batches the record reader takes whole (every offset in lo..hi, the
 * CRC-32C as crc32c(view) -> int computes it unless crc32c is None, the records decompressed by
 * decompress(codec, view) -> bytes when they are compressed (None: a compressed batch ends the
 * run, as one of a codec above max_codec does; a kseg_error raised ends it quietly), and walked
 * by walk_v2), their records as span_columns' buffers and their header's facts as per-record
 * columns, in one call. Batches wholly outside lo..hi are passed over unread; a
 * control batch stops the run (controls 0), is checked and passed over (1) or taken as any
 * other (2). The run stops before any other batch (the per-batch path then takes it) and after
 * the batch that brings rows to max_rows or bytes (of records data) to max_bytes.
 */
static PyObject *
v2_column_run(PyObject *self, PyObject *args)
{
    PyObject *batches, *crc_fn, *decompress, *kseg_error;
    Py_ssize_t start, max_rows, max_bytes;
    long long lo, hi;
    int controls;
    long max_codec, control_mask, txn_mask, lat_mask;
    REQUIRE_CONFIGURED;
    if (!PyArg_ParseTuple(args, "O!nLLnniOOOllll", &PyList_Type, &batches, &start, &lo, &hi, &max_rows, &max_bytes,
                          &controls, &crc_fn, &decompress, &kseg_error, &max_codec, &control_mask, &txn_mask,
                          &lat_mask))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(batches), i = start;
    if (start < 0 || start > n) {
        PyErr_SetString(PyExc_IndexError, "start outside the list");
        return NULL;
    }
    /* The spans of the batches walked, in buffers kept from call to call (fresh memory for
     * each run would be as costly as writing it); a call made inside one (from crc32c) uses
     * its own. */
    int reuse = !run_spans_busy;
    SpanBuf rbuf = {0}, hbuf = {0};
    if (reuse) {
        rbuf = run_record_spans;
        hbuf = run_header_spans;
        rbuf.n = hbuf.n = 0;
        run_spans_busy = 1;
    }
    RunBatch *run = NULL;
    ColSrc *src = NULL;
    Py_ssize_t nrun = 0, cap = 0, rows = 0, bytes = 0;
    PyObject *result = NULL, *columns = NULL;
    for (; i < n && rows < max_rows && bytes < max_bytes; i++) {
        PyObject *b = PyList_GET_ITEM(batches, i);
        if (!PyTuple_Check(b) || PyTuple_GET_SIZE(b) != N_BATCH_FIELDS) break;
        PyObject *raw_obj = PyTuple_GET_ITEM(b, B_RAW);
        if (!PyMemoryView_Check(raw_obj)) break;
        Py_buffer *raw = PyMemoryView_GET_BUFFER(raw_obj);
        RunBatch x = {0};
        long long magic, crc, max_ts, lod, base_ts, count, last;
        if (field_ll(b, B_MAGIC, &magic) < 0 || magic != 2 || field_ll(b, B_ATTRS, &x.attrs) < 0
            || field_ll(b, B_BASE_OFFSET, &x.base_offset) < 0 || field_ll(b, B_CRC, &crc) < 0
            || field_ll(b, B_MAX_TS, &max_ts) < 0 || field_ll(b, B_LOD, &lod) < 0
            || field_ll(b, B_BASE_TS, &base_ts) < 0 || field_ll(b, B_COUNT, &count) < 0
            || field_ll(b, B_POSITION, &x.position) < 0 || field_ll(b, B_PLE, &x.leader_epoch) < 0
            || field_ll(b, B_PID, &x.producer_id) < 0 || field_ll(b, B_EPOCH, &x.producer_epoch) < 0
            || field_ll(b, B_SEQ, &x.base_sequence) < 0)
            break;
        if (__builtin_add_overflow(x.base_offset, lod, &last)) break;
        if (last < lo || x.base_offset > hi) continue; /* the filter passes it over, unread */
        if (x.base_offset < lo || last > hi) break;    /* some of its records only */
        x.codec = x.attrs & CODEC_MASK;
        if ((x.codec && (decompress == Py_None || x.codec > max_codec)) || count < 0
                || !PyBuffer_IsContiguous(raw, 'C') || raw->len < V2_RECORDS_AT)
            break;
        int control = (x.attrs & control_mask) != 0;
        if (control && controls == 0) break;
        int skip = control && controls == 1; /* checked, then passed over */
        if (crc_fn != Py_None) {
            int ok = crc_matches(raw_obj, crc_fn, crc);
            if (ok < 0) goto done;
            if (!ok) break;
        }
        x.data = (const char *)raw->buf + V2_RECORDS_AT;
        x.size = raw->len - V2_RECORDS_AT;
        if (x.codec) {
            PyObject *payload = PySequence_GetSlice(raw_obj, V2_RECORDS_AT, raw->len);
            PyObject *id = payload ? PyLong_FromLongLong(x.codec) : NULL;
            x.inflated = id ? PyObject_CallFunctionObjArgs(decompress, id, payload, NULL) : NULL;
            Py_XDECREF(payload);
            Py_XDECREF(id);
            if (!x.inflated) {
                if (ends_run(kseg_error)) break;
                goto done;
            }
            if (!PyBytes_Check(x.inflated)) {
                Py_DECREF(x.inflated);
                PyErr_SetString(PyExc_TypeError, "decompress() must return bytes");
                goto done;
            }
            x.data = PyBytes_AS_STRING(x.inflated);
            x.size = PyBytes_GET_SIZE(x.inflated);
        }
        const Py_ssize_t r0 = rbuf.n, h0 = hbuf.n;
        V2Summary sum;
        PyObject *walked = walk_v2((const unsigned char *)x.data, x.size, x.base_offset, base_ts, (Py_ssize_t)count,
                                   (x.attrs & lat_mask) != 0, max_ts, Py_None, Py_None, !skip, &sum,
                                   skip ? NULL : &rbuf, skip ? NULL : &hbuf);
        if (!walked) {
            rbuf.n = r0;
            hbuf.n = h0;
            Py_XDECREF(x.inflated);
            if (!PyErr_ExceptionMatches(DecodeError)) goto done;
            PyErr_Clear();
            break;
        }
        Py_DECREF(walked);
        if (skip || count == 0) { /* nothing of it in the columns */
            Py_XDECREF(x.inflated);
            continue;
        }
        x.first_span = r0 / (Py_ssize_t)sizeof(KsegRecordSpan);
        x.spans = (rbuf.n - r0) / (Py_ssize_t)sizeof(KsegRecordSpan);
        if (nrun == cap) {
            Py_ssize_t more = cap ? cap * 2 : 64;
            RunBatch *q = PyMem_Realloc(run, (size_t)more * sizeof(RunBatch));
            if (!q) { Py_XDECREF(x.inflated); PyErr_NoMemory(); goto done; }
            run = q;
            cap = more;
        }
        Py_INCREF(b);
        x.batch = b;
        run[nrun++] = x;
        rows += x.spans;
        bytes += x.size;
    }
    if (nrun == 0) {
        result = Py_BuildValue("(nnnOO)", i, (Py_ssize_t)0, (Py_ssize_t)0, Py_None, Py_None);
        goto done;
    }
    src = PyMem_Calloc((size_t)nrun, sizeof(ColSrc));
    if (!src) { PyErr_NoMemory(); goto done; }
    for (Py_ssize_t k = 0; k < nrun; k++)
        src[k] = (ColSrc){run[k].data, run[k].size, (const KsegRecordSpan *)rbuf.p + run[k].first_span, run[k].spans,
                          (const KsegHeaderSpan *)hbuf.p, hbuf.n / (Py_ssize_t)sizeof(KsegHeaderSpan)};
    columns = columns_of(src, nrun);
    if (!columns) goto done;
    {
        /* The header's facts, one value per record: position, leader epoch, producer id and epoch,
         * sequence, codec, each an int when every record has the same (no memory for a column of
         * one value); transactional, control and LogAppendTime as bitmaps. */
        int same[6] = {1, 1, 1, 1, 1, 1};
        for (Py_ssize_t k = 1; k < nrun; k++) {
            same[0] &= run[k].position == run[0].position;
            same[1] &= run[k].leader_epoch == run[0].leader_epoch;
            same[2] &= run[k].producer_id == run[0].producer_id;
            same[3] &= run[k].producer_epoch == run[0].producer_epoch;
            same[5] &= run[k].codec == run[0].codec;
        }
        for (Py_ssize_t k = 0; k < nrun; k++) same[4] &= run[k].base_sequence < 0;  /* none: -1 */
        const long long one[6] = {run[0].position, run[0].leader_epoch, run[0].producer_id, run[0].producer_epoch, -1,
                                  run[0].codec};
        const int width[6] = {8, 4, 8, 4, 4, 1};
        char *at[9] = {NULL};
        PyObject *c[9] = {NULL};
        const Py_ssize_t bits = (rows + 7) / 8;
        int failed = 0;
        for (int k = 0; k < 9; k++) {
            if (k < 6 && same[k]) c[k] = PyLong_FromLongLong(one[k]);
            else if (k < 6) { c[k] = PyBytes_FromStringAndSize(NULL, rows * width[k]); if (c[k]) at[k] = PyBytes_AS_STRING(c[k]); }
            else c[k] = zeroed(bits, &at[k]);
            failed |= c[k] == NULL;
        }
        if (failed) { for (int z = 0; z < 9; z++) Py_XDECREF(c[z]); goto done; }
        int64_t *position = (int64_t *)at[0], *pid = (int64_t *)at[2];
        int32_t *epoch = (int32_t *)at[1], *pepoch = (int32_t *)at[3], *sequence = (int32_t *)at[4];
        int8_t *codec = (int8_t *)at[5];
        unsigned char *txn = (unsigned char *)at[6], *ctl = (unsigned char *)at[7], *lat = (unsigned char *)at[8];
        Py_ssize_t row = 0;
        for (Py_ssize_t k = 0; k < nrun; k++) {
            const RunBatch *x = run + k;
            const KsegRecordSpan *rs = (const KsegRecordSpan *)rbuf.p + x->first_span;
            const Py_ssize_t first = row, end = row + x->spans;
            for (; row < end; row++) {
                if (position) position[row] = x->position;
                if (epoch) epoch[row] = (int32_t)x->leader_epoch;
                if (pid) pid[row] = x->producer_id;
                if (pepoch) pepoch[row] = (int32_t)x->producer_epoch;
                if (codec) codec[row] = (int8_t)x->codec;
                if (sequence) {
                    sequence[row] = kseg_record_sequence(x->base_sequence,
                                                         (int64_t)((uint64_t)rs[row - first].offset - (uint64_t)x->base_offset));
                }
                if (x->attrs & txn_mask) txn[row >> 3] |= (unsigned char)(1u << (row & 7));
                if (x->attrs & control_mask) ctl[row >> 3] |= (unsigned char)(1u << (row & 7));
                if (x->attrs & lat_mask) lat[row >> 3] |= (unsigned char)(1u << (row & 7));
            }
        }
        result = Py_BuildValue("(nnnN(NNNNNNNNN))", i, rows, bytes, columns, c[0], c[1], c[2], c[3], c[4], c[5], c[6],
                               c[7], c[8]);
        columns = NULL;
    }
done:
    Py_XDECREF(columns);
    for (Py_ssize_t k = 0; k < nrun; k++) {
        Py_DECREF(run[k].batch);
        Py_XDECREF(run[k].inflated);
    }
    PyMem_Free(run);
    PyMem_Free(src);
    if (reuse && rbuf.cap + hbuf.cap <= SCRATCH_KEPT * 2) {
        run_record_spans = rbuf;
        run_header_spans = hbuf;
    } else {
        if (reuse) {
            run_record_spans = (SpanBuf){0};
            run_header_spans = (SpanBuf){0};
        }
        PyMem_Free(rbuf.p);
        PyMem_Free(hbuf.p);
    }
    if (reuse) run_spans_busy = 0;
    return result;
}

static PyMethodDef methods[] = {
    {"configure", (PyCFunction)(void (*)(void))configure, METH_VARARGS | METH_KEYWORDS,
     "Set the positions, sizes and masks (kseg.layouts.accelerator_layout()); needed before anything else."},
    {"configure_fields", configure_fields, METH_VARARGS,
     "Set the field order of kseg.model's Batch, Record and Header (their _fields); needed before anything else."},
    {"decode_v2", decode_v2, METH_VARARGS, "Decode (or, with record_type None, check) v2 records."},
    {"scan", scan, METH_VARARGS, "Split .log bytes into entries (twin of decode.scan_entries)."},
    {"encode_v2_records", encode_v2_records, METH_VARARGS, "The records section of a v2 batch."},
    {"encode_legacy_messages", encode_legacy_messages, METH_VARARGS, "v0/v1 messages with framing and CRC."},
    {"legacy_crc_mismatches", legacy_crc_mismatches, METH_VARARGS, "Inner messages with a bad CRC-32."},
    {"legacy_set", legacy_set, METH_VARARGS, "Inner messages of a decompressed v0/v1 wrapper as records."},
    {"legacy_batch_record", legacy_batch_record, METH_VARARGS, "legacy_record of a Batch tuple."},
    {"legacy_record", legacy_record, METH_VARARGS, "Key and value of a v0/v1 message as a record."},
    {"plain_spans", plain_spans, METH_VARARGS, "Spans of a run of uncompressed v0/v1 messages."},
    {"entry_starts", entry_starts, METH_VARARGS, "Where a log's entries start, by their lengths (twin of entry_walk.entry_starts_py)."},
    {"resync", resync, METH_VARARGS, "The next plausible batch start (twin of salvage_scan.find_candidate)."},
    {"span_columns", span_columns, METH_VARARGS, "Record spans as Arrow column buffers (twin of span_columns_py)."},
    {"configure_lz4", configure_lz4, METH_VARARGS, "Find LZ4_decompress_safe in python-lz4's loaded extension."},
    {"lz4_frame_bytes", lz4_frame_bytes, METH_VARARGS, "Kafka's LZ4 frame decompressed (twin: the lz4 codec)."},
    {"sound_v2_run", sound_v2_run, METH_VARARGS, "The v2 batches verify finds nothing in (twin of sound_v2_run_py)."},
    {"stats_v2_run", stats_v2_run, METH_VARARGS, "The v2 batches stats counts at once (twin: stats_v2_run_py)."},
    {"v2_header_run", v2_header_run, METH_VARARGS,
     "The v2 batches a dump shows by their lines alone (twin: v2_header_run_py)."},
    {"v2_record_run", v2_record_run, METH_VARARGS,
     "The v2 batches a dump shows with their records, as spans over one buffer (twin: v2_record_run_py)."},
    {"index_sound", index_sound, METH_VARARGS, "Whether index entries agree with the log (twin: index_sound_py)."},
    {"v2_column_run", v2_column_run, METH_VARARGS,
     "Uncompressed v2 batches as Arrow column buffers (twin of v2_column_run_py)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_speedups", NULL, -1, methods};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    crc32_init(1);
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    DecodeError = PyErr_NewException("kseg.log._speedups.DecodeError", PyExc_ValueError, NULL);
    if (!DecodeError || PyModule_AddObject(m, "DecodeError", DecodeError) < 0) return NULL;
    Py_INCREF(DecodeError);
    return m;
}
