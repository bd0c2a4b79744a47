import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;

/** Reads hex byte strings, one per line; prints the UTF-16 code units of new String(bytes, UTF_8) in hex. */
public class Utf8Decode {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII));
        StringBuilder out = new StringBuilder();
        for (String line; (line = in.readLine()) != null; ) {
            String s = new String(HexFormat.of().parseHex(line.trim()), StandardCharsets.UTF_8);
            for (int i = 0; i < s.length(); i++) {
                if (i > 0) out.append(' ');
                out.append(String.format("%04x", (int) s.charAt(i)));
            }
            out.append('\n');
        }
        System.out.print(out);
    }
}
