// Writes a Kafka log segment of internal-topic records, each serialised by the release's own
// generated message classes: oracle/record_types.py describes every record as JSON (a message's
// fields in the form Kafka's *JsonConverter reads), this program reads each with that converter,
// writes it with the message's own write(...) at the given version, frames it as the broker does
// and appends it with MemoryRecordsBuilder (control records with its append*Message methods).
// Where a release generated no JsonConverter for a message (the coordinators' records before 3.7),
// or its converter does not read the JSON (2.8's read bytes from binary JSON nodes only, never base64
// text), the message is built from the same JSON with its own setters (set<Field>(value), one per field).
//
//   java -cp <release jars>:<classes> RecordTypes SPEC.json OUT.log
//
// SPEC: {"timestamp": ms, "batches": [{"records": [{"key": PIECES|null, "value": PIECES|null}]}
//                                      | {"control": "LEADER_CHANGE"|..., "class": FQCN, "json": {...}}]}
// PIECES: a list of {"int16": n} | {"class": FQCN, "version": v, "json": {...}}
//         | {"metadata": FQCN, "version": v, "json": {...}} (framed by MetadataRecordSerde)
//
// What differs between releases is looked up by name (the metadata serde, the control records'
// append methods) or written in before compiling by record_types.py: RECORD_PACKAGE (the record
// classes moved to org.apache.kafka.common.record.internal in Kafka 4.3) and COMPRESSION_NONE
// (CompressionType.NONE before 3.8, Compression.NONE since).
import RECORD_PACKAGE.*;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.Message;
import org.apache.kafka.common.protocol.ObjectSerializationCache;
import org.apache.kafka.common.record.TimestampType;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.FileOutputStream;
import java.lang.reflect.Method;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;
import java.nio.ByteBuffer;
import java.util.Base64;
import java.util.Collection;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

public class RecordTypes {
    static Message read(String cls, short version, JsonNode json) throws Exception {
        Class<?> converter;
        try {
            converter = Class.forName(cls + "JsonConverter");
        } catch (ClassNotFoundException e) {
            return (Message) build(Class.forName(cls), json);
        }
        try {
            return (Message) converter.getMethod("read", JsonNode.class, short.class).invoke(null, json, version);
        } catch (java.lang.reflect.InvocationTargetException e) {
            // 2.8's converters read bytes only from a binary JSON node, never from base64 text
            if (!String.valueOf(e.getCause().getMessage()).contains("expected Base64-encoded binary data")) throw e;
            return (Message) build(Class.forName(cls), json);
        }
    }

    // A generated message (or struct) from JSON by its setters, for a class without a JsonConverter.
    static Object build(Class<?> cls, JsonNode json) throws Exception {
        Object out = cls.getConstructor().newInstance();
        Iterator<Map.Entry<String, JsonNode>> fields = json.fields();
        while (fields.hasNext()) {
            Map.Entry<String, JsonNode> f = fields.next();
            String name = "set" + Character.toUpperCase(f.getKey().charAt(0)) + f.getKey().substring(1);
            Method setter = null;
            for (Method m : cls.getMethods()) {
                if (m.getName().equals(name) && m.getParameterCount() == 1) setter = m;
            }
            if (setter == null) throw new IllegalArgumentException(cls.getName() + " has no " + name);
            setter.invoke(out, value(setter.getGenericParameterTypes()[0], f.getValue()));
        }
        return out;
    }

    static Object value(Type type, JsonNode v) throws Exception {
        if (v.isNull()) return null;
        Class<?> raw = (Class<?>) (type instanceof ParameterizedType ? ((ParameterizedType) type).getRawType() : type);
        if (raw == byte.class || raw == Byte.class) return (byte) v.asInt();
        if (raw == short.class || raw == Short.class) return (short) v.asInt();
        if (raw == int.class || raw == Integer.class) return v.asInt();
        if (raw == long.class || raw == Long.class) return v.asLong();
        if (raw == double.class || raw == Double.class) return v.asDouble();
        if (raw == boolean.class || raw == Boolean.class) return v.asBoolean();
        if (raw == String.class) return v.asText();
        if (raw == Uuid.class) return Uuid.fromString(v.asText());
        if (raw == byte[].class) return Base64.getDecoder().decode(v.asText());
        if (raw == ByteBuffer.class) return ByteBuffer.wrap(Base64.getDecoder().decode(v.asText()));
        if (Collection.class.isAssignableFrom(raw)) {
            Type elem;
            @SuppressWarnings("unchecked")
            Collection<Object> out = raw == List.class ? new java.util.ArrayList<>()
                : (Collection<Object>) raw.getConstructor().newInstance();
            if (type instanceof ParameterizedType) {
                elem = ((ParameterizedType) type).getActualTypeArguments()[0];
            } else {  // a generated collection class (ImplicitLinkedHashMultiCollection<Element>)
                elem = ((ParameterizedType) raw.getGenericSuperclass()).getActualTypeArguments()[0];
            }
            for (JsonNode e : v) out.add(value(elem, e));
            return out;
        }
        return build(raw, v);
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
                out.write(metadataRecord((ApiMessage) read(p.get("metadata").asText(), v, p.get("json")), v));
            } else {
                throw new IllegalArgumentException("unknown piece " + p);
            }
        }
        return out.toByteArray();
    }

    // The first of the names that the release has.
    static Class<?> firstClass(String... names) throws ClassNotFoundException {
        for (String name : names) {
            try {
                return Class.forName(name);
            } catch (ClassNotFoundException e) {
                // not in this release
            }
        }
        throw new ClassNotFoundException(String.join(", ", names));
    }

    // A metadata record as the release's MetadataRecordSerde frames it (2.8 had it in kafka-raft, with
    // ApiMessageAndVersion in kafka-metadata; both moved in 3.x).
    static byte[] metadataRecord(ApiMessage message, short version) throws Exception {
        Class<?> amvClass = firstClass("org.apache.kafka.server.common.ApiMessageAndVersion",
            "org.apache.kafka.metadata.ApiMessageAndVersion");
        Object amv = amvClass.getConstructor(ApiMessage.class, short.class).newInstance(message, version);
        Object serde = firstClass("org.apache.kafka.metadata.MetadataRecordSerde",
            "org.apache.kafka.raft.metadata.MetadataRecordSerde").getConstructor().newInstance();
        ObjectSerializationCache cache = new ObjectSerializationCache();
        int size = (Integer) serde.getClass().getMethod("recordSize", Object.class, ObjectSerializationCache.class)
            .invoke(serde, amv, cache);
        ByteBuffer buf = ByteBuffer.allocate(size);
        serde.getClass().getMethod("write", Object.class, ObjectSerializationCache.class,
            org.apache.kafka.common.protocol.Writable.class).invoke(serde, amv, cache, new ByteBufferAccessor(buf));
        return buf.array();
    }

    // MemoryRecordsBuilder's append method of a control record type, as the release names it.
    static final Map<String, String> APPEND = Map.of("LEADER_CHANGE", "appendLeaderChangeMessage",
        "SNAPSHOT_HEADER", "appendSnapshotHeaderMessage", "SNAPSHOT_FOOTER", "appendSnapshotFooterMessage",
        "KRAFT_VERSION", "appendKRaftVersionMessage", "KRAFT_VOTERS", "appendVotersMessage");

    public static void main(String[] args) throws Exception {
        JsonNode spec = new ObjectMapper().readTree(new File(args[0]));
        long timestamp = spec.get("timestamp").asLong();
        long offset = 0;
        try (FileOutputStream out = new FileOutputStream(args[1])) {
            for (JsonNode batch : spec.get("batches")) {
                ByteBuffer buffer = ByteBuffer.allocate(1 << 20);
                boolean control = batch.has("control");
                long count = 0;
                MemoryRecordsBuilder builder = MemoryRecords.builder(buffer, (byte) 2, COMPRESSION_NONE,
                    TimestampType.CREATE_TIME, offset, timestamp, -1L, (short) -1, -1, false, control, 1);
                if (control) {
                    String type = batch.get("control").asText();
                    short v = versionOf(type);
                    Message m = read(batch.get("class").asText(), v, batch.get("json"));
                    builder.getClass().getMethod(APPEND.get(type), long.class, m.getClass()).invoke(builder, timestamp, m);
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

    // The version the append*Message methods write each control message at (the value carries none):
    // ControlRecordUtils.<TYPE>_CURRENT_VERSION, LEADER_CHANGE_SCHEMA_VERSION in 2.8.
    static short versionOf(String type) throws Exception {
        for (String name : new String[] {type + "_CURRENT_VERSION", type + "_SCHEMA_VERSION"}) {
            try {
                return ControlRecordUtils.class.getField(name).getShort(null);
            } catch (NoSuchFieldException e) {
                // the other name
            }
        }
        throw new IllegalArgumentException("no version of control type " + type);
    }
}
