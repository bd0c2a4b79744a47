// Writes a Kafka log segment of internal-topic records, each serialised by the release's own
// generated message classes: oracle/record_types.py describes every record as JSON (a message's
// fields in the form Kafka's *JsonConverter reads), this program reads each with that converter,
// writes it with the message's own write(...) at the given version, frames it as the broker does
// and appends it with MemoryRecordsBuilder (control records with its append*Message methods).
//
//   java -cp <release jars>:<classes> RecordTypes SPEC.json OUT.log
//
// SPEC: {"timestamp": ms, "batches": [{"records": [{"key": PIECES|null, "value": PIECES|null}]}
//                                      | {"control": "LEADER_CHANGE"|..., "class": FQCN, "json": {...}}]}
// PIECES: a list of {"int16": n} | {"class": FQCN, "version": v, "json": {...}}
//         | {"metadata": FQCN, "version": v, "json": {...}} (framed by MetadataRecordSerde)
//
// The record classes moved to org.apache.kafka.common.record.internal in Kafka 4.3; record_types.py
// writes that package in place of RECORD_PACKAGE before compiling.
import RECORD_PACKAGE.*;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.message.KRaftVersionRecord;
import org.apache.kafka.common.message.LeaderChangeMessage;
import org.apache.kafka.common.message.SnapshotFooterRecord;
import org.apache.kafka.common.message.SnapshotHeaderRecord;
import org.apache.kafka.common.message.VotersRecord;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.Message;
import org.apache.kafka.common.protocol.ObjectSerializationCache;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.metadata.MetadataRecordSerde;
import org.apache.kafka.server.common.ApiMessageAndVersion;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.FileOutputStream;
import java.nio.ByteBuffer;

public class RecordTypes {
    static Message read(String cls, short version, JsonNode json) throws Exception {
        Class<?> converter = Class.forName(cls + "JsonConverter");
        return (Message) converter.getMethod("read", JsonNode.class, short.class).invoke(null, json, version);
    }

    static byte[] bytes(Message message, short version) {
        ObjectSerializationCache cache = new ObjectSerializationCache();
        ByteBuffer buf = ByteBuffer.allocate(message.size(cache, version));
        message.write(new ByteBufferAccessor(buf), cache, version);
        return buf.array();
    }

    static byte[] pieces(JsonNode node) throws Exception {
        if (node == null || node.isNull()) return null;
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (JsonNode p : node) {
            if (p.has("int16")) {
                short v = (short) p.get("int16").asInt();
                out.write(v >> 8 & 0xff);
                out.write(v & 0xff);
            } else if (p.has("class")) {
                short v = (short) p.get("version").asInt();
                out.write(bytes(read(p.get("class").asText(), v, p.get("json")), v));
            } else if (p.has("metadata")) {
                short v = (short) p.get("version").asInt();
                ApiMessageAndVersion amv = new ApiMessageAndVersion(
                    (ApiMessage) read(p.get("metadata").asText(), v, p.get("json")), v);
                ObjectSerializationCache cache = new ObjectSerializationCache();
                ByteBuffer buf = ByteBuffer.allocate(MetadataRecordSerde.INSTANCE.recordSize(amv, cache));
                MetadataRecordSerde.INSTANCE.write(amv, cache, new ByteBufferAccessor(buf));
                out.write(buf.array());
            } else {
                throw new IllegalArgumentException("unknown piece " + p);
            }
        }
        return out.toByteArray();
    }

    public static void main(String[] args) throws Exception {
        JsonNode spec = new ObjectMapper().readTree(new File(args[0]));
        long timestamp = spec.get("timestamp").asLong();
        long offset = 0;
        try (FileOutputStream out = new FileOutputStream(args[1])) {
            for (JsonNode batch : spec.get("batches")) {
                ByteBuffer buffer = ByteBuffer.allocate(1 << 20);
                boolean control = batch.has("control");
                long count = 0;
                MemoryRecordsBuilder builder = MemoryRecords.builder(buffer, (byte) 2, Compression.NONE,
                    TimestampType.CREATE_TIME, offset, timestamp, -1L, (short) -1, -1, false, control, 1);
                if (control) {
                    String type = batch.get("control").asText();
                    short v = versionOf(type);
                    Message m = read(batch.get("class").asText(), v, batch.get("json"));
                    switch (type) {
                        case "LEADER_CHANGE": builder.appendLeaderChangeMessage(timestamp, (LeaderChangeMessage) m); break;
                        case "SNAPSHOT_HEADER": builder.appendSnapshotHeaderMessage(timestamp, (SnapshotHeaderRecord) m); break;
                        case "SNAPSHOT_FOOTER": builder.appendSnapshotFooterMessage(timestamp, (SnapshotFooterRecord) m); break;
                        case "KRAFT_VERSION": builder.appendKRaftVersionMessage(timestamp, (KRaftVersionRecord) m); break;
                        case "KRAFT_VOTERS": builder.appendVotersMessage(timestamp, (VotersRecord) m); break;
                        default: throw new IllegalArgumentException("unknown control type " + type);
                    }
                    count = 1;
                } else {
                    for (JsonNode r : batch.get("records")) {
                        builder.append(timestamp, pieces(r.get("key")), pieces(r.get("value")));
                        count++;
                    }
                }
                MemoryRecords records = builder.build();
                ByteBuffer b = records.buffer();
                byte[] raw = new byte[b.remaining()];
                b.get(raw);
                out.write(raw);
                offset += count;
            }
        }
    }

    // The version the append*Message methods write each control message at (the value carries none).
    static short versionOf(String type) {
        switch (type) {
            case "LEADER_CHANGE": return ControlRecordUtils.LEADER_CHANGE_CURRENT_VERSION;
            case "SNAPSHOT_HEADER": return ControlRecordUtils.SNAPSHOT_HEADER_CURRENT_VERSION;
            case "SNAPSHOT_FOOTER": return ControlRecordUtils.SNAPSHOT_FOOTER_CURRENT_VERSION;
            case "KRAFT_VERSION": return ControlRecordUtils.KRAFT_VERSION_CURRENT_VERSION;
            case "KRAFT_VOTERS": return ControlRecordUtils.KRAFT_VOTERS_CURRENT_VERSION;
            default: throw new IllegalArgumentException("unknown control type " + type);
        }
    }
}
