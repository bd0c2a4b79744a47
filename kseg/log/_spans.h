/*
 * Where a batch's records lie in its (decompressed) payload, without one Python
 * object per record: _speedups.c writes these spans while it validates the records
 * (decode_v2 and legacy_set with spans=True), and _format.c writes lines from them.
 * Lengths are -1 for null; positions are byte offsets into the payload.
 */
#ifndef KSEG_SPANS_H
#define KSEG_SPANS_H
#include <stdint.h>

typedef struct {
    int64_t offset;       /* absolute */
    int64_t timestamp;    /* effective: LogAppendTime batches impose theirs */
    int64_t key_at, key_len;
    int64_t value_at, value_len;
    int64_t first_header, header_count; /* v2: into the header spans */
    int64_t message_at, message_end;    /* v0/v1: the bytes the message's CRC covers */
    int64_t stored_crc;                 /* v0/v1: the CRC the message carries; v2: -1 */
} KsegRecordSpan;

typedef struct {
    int64_t key_at, key_len;
    int64_t value_at, value_len;
} KsegHeaderSpan;

#endif
