// Kafka's own producer-sequence rules, for tests/kafka/test_sequences_live.py: reads lines
// "base delta" and prints, per line, what Kafka's DefaultRecordBatch.incrementSequence gives
// for them (found by reflection: the class moved to record.internal in Kafka 4.3).
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.reflect.Method;

public class IncrementSequence {
    public static void main(String[] args) throws Exception {
        Class<?> batch;
        try {
            batch = Class.forName("org.apache.kafka.common.record.internal.DefaultRecordBatch");
        } catch (ClassNotFoundException e) {
            batch = Class.forName("org.apache.kafka.common.record.DefaultRecordBatch");
        }
        Method increment = batch.getMethod("incrementSequence", int.class, int.class);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        StringBuilder out = new StringBuilder();
        for (String line; (line = in.readLine()) != null; ) {
            String[] parts = line.trim().split(" ");
            out.append(increment.invoke(null, Integer.parseInt(parts[0]), Integer.parseInt(parts[1]))).append('\n');
        }
        System.out.print(out);
    }
}
