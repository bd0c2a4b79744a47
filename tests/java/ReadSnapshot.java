// Kafka's own producer-snapshot reader, for tests/kafka/test_snapshot_reader_live.py: reads file
// paths, one a line, and prints per file what ProducerStateManager.readSnapshot makes of it: "OK n"
// (n entries), "CORRUPT " and the CorruptSnapshotException's message (what kafka-dump-log.sh prints),
// or "THROWS " and any other exception's class.
import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.List;

public class ReadSnapshot {
    public static void main(String[] args) throws Exception {
        Class<?> manager = Class.forName("org.apache.kafka.storage.internals.log.ProducerStateManager");
        Method read = manager.getMethod("readSnapshot", File.class);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        StringBuilder out = new StringBuilder();
        for (String line; (line = in.readLine()) != null; ) {
            try {
                int entries = ((List<?>) read.invoke(null, new File(line))).size();
                out.append("OK ").append(entries);
            } catch (InvocationTargetException e) {
                Throwable cause = e.getCause();
                if (cause.getClass().getSimpleName().equals("CorruptSnapshotException")) {
                    out.append("CORRUPT ").append(String.valueOf(cause.getMessage()).replace('\n', ' '));
                } else {
                    out.append("THROWS ").append(cause.getClass().getName());
                }
            }
            out.append('\n');
        }
        System.out.print(out);
    }
}
