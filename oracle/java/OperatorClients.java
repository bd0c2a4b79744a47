// The Java clients of the operator scenario (tests/kafka/admin.py): what Kafka's own tools do not
// do from the command line. Compiled against one release's jars; prints one JSON line of what it did.
//
//   txn BOOTSTRAP TOPIC TRANSACTIONAL_ID     a transactional producer (transactions v2 on 4.x):
//                                            commit, abort, commit, and an offset commit for GROUP
//                                            inside the last transaction
//   consumers BOOTSTRAP TOPIC GROUP          two consumers with group.protocol=consumer (KIP-848):
//                                            one joins and commits, the second joins, the first leaves,
//                                            the second reads to the end, commits and leaves
//   streams BOOTSTRAP APP_ID IN OUT          a Kafka Streams application with group.protocol=streams
//                                            (KIP-1071, 4.1+) copying IN to OUT until OUT holds IN's records
//
// It compiles against every 4.x release's jars (the config names are strings where a release's classes
// lack their constants: 4.0's StreamsConfig has no GROUP_PROTOCOL_CONFIG).

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;

public final class OperatorClients {
    private OperatorClients() {}

    public static void main(String[] args) throws Exception {
        switch (args[0]) {
            case "txn": txn(args[1], args[2], args[3], args[4]); break;
            case "consumers": consumers(args[1], args[2], args[3]); break;
            case "streams": streams(args[1], args[2], args[3], args[4]); break;
            default: throw new IllegalArgumentException("unknown action " + args[0]);
        }
    }

    private static void txn(String bootstrap, String topic, String txnId, String group) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("transactional.id", txnId);
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        p.put("linger.ms", "5");
        List<String> outcomes = new ArrayList<>();
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            producer.initTransactions();
            String[] plan = {"commit", "abort", "commit-with-offsets"};
            for (int t = 0; t < plan.length; t++) {
                producer.beginTransaction();
                for (int i = 0; i < 6; i++) {
                    producer.send(new ProducerRecord<>(topic, 0, "t" + t + "-k" + i, plan[t] + " record " + i)).get();
                }
                if (plan[t].equals("abort")) {
                    producer.abortTransaction();
                } else {
                    if (plan[t].equals("commit-with-offsets")) {
                        Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                        offsets.put(new TopicPartition(topic, 0), new OffsetAndMetadata(7, "txn-commit"));
                        try (KafkaConsumer<String, String> meta = new KafkaConsumer<>(consumerProps(bootstrap, group))) {
                            producer.sendOffsetsToTransaction(offsets, meta.groupMetadata());
                        }
                    }
                    producer.commitTransaction();
                }
                outcomes.add("\"" + plan[t] + "\"");
            }
        }
        System.out.println("{\"transactions\": [" + String.join(", ", outcomes) + "]}");
    }

    private static Properties consumerProps(String bootstrap, String group) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("group.id", group);
        p.put("group.protocol", "consumer");
        p.put("key.deserializer", StringDeserializer.class.getName());
        p.put("value.deserializer", StringDeserializer.class.getName());
        p.put("auto.offset.reset", "earliest");
        p.put("enable.auto.commit", "false");
        p.put("max.poll.records", "5");
        return p;
    }

    private static int pollSome(KafkaConsumer<String, String> c, int atLeast, long timeoutMs) {
        int n = 0;
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (n < atLeast && System.currentTimeMillis() < deadline) {
            ConsumerRecords<String, String> rs = c.poll(Duration.ofMillis(200));
            n += rs.count();
        }
        return n;
    }

    private static void consumers(String bootstrap, String topic, String group) {
        int first, second;
        KafkaConsumer<String, String> a = new KafkaConsumer<>(consumerProps(bootstrap, group));
        a.subscribe(Collections.singletonList(topic));
        first = pollSome(a, 5, 60_000);
        a.commitSync();
        KafkaConsumer<String, String> b = new KafkaConsumer<>(consumerProps(bootstrap, group));
        b.subscribe(Collections.singletonList(topic));
        // both members in the group for a while: the second is given nothing (one partition) until
        // the first leaves
        long deadline = System.currentTimeMillis() + 5_000;
        while (System.currentTimeMillis() < deadline) {
            b.poll(Duration.ofMillis(200));
            first += a.poll(Duration.ofMillis(200)).count();
        }
        a.commitSync();
        a.close();
        second = 0;
        deadline = System.currentTimeMillis() + 60_000;
        while (System.currentTimeMillis() < deadline) {
            ConsumerRecords<String, String> rs = b.poll(Duration.ofMillis(500));
            second += rs.count();
            if (rs.isEmpty() && !b.assignment().isEmpty()) {
                TopicPartition tp = new TopicPartition(topic, 0);
                if (b.position(tp) >= b.endOffsets(Collections.singletonList(tp)).get(tp)) {
                    break;
                }
            }
        }
        b.commitSync();
        b.close();
        System.out.println("{\"first\": " + first + ", \"second\": " + second + "}");
    }

    private static void streams(String bootstrap, String appId, String in, String out) throws Exception {
        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put("group.protocol", "streams"); // StreamsConfig.GROUP_PROTOCOL_CONFIG since 4.1
        p.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class.getName());
        p.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class.getName());
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, "500");
        p.put(StreamsConfig.STATE_DIR_CONFIG, System.getProperty("java.io.tmpdir") + "/kseg-streams-" + appId);
        p.put("consumer.auto.offset.reset", "earliest");
        StreamsBuilder builder = new StreamsBuilder();
        builder.<String, String>stream(in).mapValues(v -> v.toUpperCase()).to(out);
        KafkaStreams streams = new KafkaStreams(builder.build(), p);
        streams.start();
        long expected;
        Properties cp = consumerProps(bootstrap, appId + "-check");
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(cp)) {
            TopicPartition tin = new TopicPartition(in, 0);
            TopicPartition tout = new TopicPartition(out, 0);
            expected = c.endOffsets(Collections.singletonList(tin)).get(tin);
            long deadline = System.currentTimeMillis() + 90_000;
            while (c.endOffsets(Collections.singletonList(tout)).get(tout) < expected
                   && System.currentTimeMillis() < deadline) {
                Thread.sleep(300);
            }
            Thread.sleep(2000); // a commit after the last record
            long copied = c.endOffsets(Collections.singletonList(tout)).get(tout);
            streams.close(Duration.ofSeconds(30));
            System.out.println("{\"expected\": " + expected + ", \"copied\": " + copied
                               + ", \"state\": \"" + streams.state() + "\"}");
        }
    }
}
