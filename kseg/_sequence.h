/*
 * A producer's sequence numbers as Kafka computes them (DefaultRecordBatch.incrementSequence and
 * its callers), in Java's int arithmetic: a sequence wraps past int32 max to 0, and damaged values
 * (a negative delta, a negative base other than -1) overflow as Java's ints do, so that what kseg
 * prints is what Kafka's tools print. kseg.model holds the same rules in Python (increment_sequence,
 * record_sequence, Batch.last_sequence). Included by kseg/log/_speedups.c and kseg/render/_format.c.
 */
#ifndef KSEG_SEQUENCE_H
#define KSEG_SEQUENCE_H
#include <stdint.h>

/* seq + inc, wrapping past int32 max to 0 (unsigned arithmetic: Java's overflow, no C UB). */
static inline int32_t kseg_increment_sequence(int32_t seq, int32_t inc) {
    int32_t limit = (int32_t)((uint32_t)INT32_MAX - (uint32_t)inc);
    if (seq > limit) return (int32_t)((uint32_t)inc - ((uint32_t)INT32_MAX - (uint32_t)seq) - 1u);
    return (int32_t)((uint32_t)seq + (uint32_t)inc);
}

/* A v2 record's sequence: none (-1) unless its batch's base sequence is >= 0. ``delta``: the record's
 * offset delta (its offset minus the batch's base offset, an int32 in the record). */
static inline int32_t kseg_record_sequence(int64_t base_sequence, int64_t delta) {
    if (base_sequence < 0) return -1;
    return kseg_increment_sequence((int32_t)base_sequence, (int32_t)(uint32_t)(uint64_t)delta);
}

/* A v2 batch's last sequence: none (-1) only when its base sequence is -1. */
static inline int32_t kseg_last_sequence(int64_t base_sequence, int64_t last_offset_delta) {
    if (base_sequence == -1) return -1;
    return kseg_increment_sequence((int32_t)base_sequence, (int32_t)(uint32_t)(uint64_t)last_offset_delta);
}
#endif
