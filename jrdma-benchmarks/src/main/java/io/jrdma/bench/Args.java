package io.jrdma.bench;

import java.util.HashMap;
import java.util.Map;

/** {@code key=value} command-line arguments of the baseline programs, with defaults. */
final class Args {
    private final Map<String, String> values = new HashMap<>();

    Args(String[] args) {
        for (String a : args) {
            int eq = a.indexOf('=');
            if (eq <= 0) {
                throw new IllegalArgumentException("arguments are key=value, not '" + a + "'");
            }
            values.put(a.substring(0, eq), a.substring(eq + 1));
        }
    }

    String str(String key, String def) {
        return values.getOrDefault(key, def);
    }

    long num(String key, long def) {
        String v = values.get(key);
        if (v == null) {
            return def;
        }
        v = v.trim().toLowerCase(java.util.Locale.ROOT);
        long mul = 1;
        if (v.endsWith("k")) {
            mul = 1024;
        } else if (v.endsWith("m")) {
            mul = 1024 * 1024;
        }
        if (mul != 1) {
            v = v.substring(0, v.length() - 1);
        }
        return Long.parseLong(v) * mul;
    }

    int integer(String key, int def) {
        return Math.toIntExact(num(key, def));
    }

    /** @return {@code key}'s value, true or false; anything else fails the program with a message naming the key */
    boolean bool(String key, boolean def) {
        String v = values.get(key);
        if (v == null) {
            return def;
        }
        if (!v.equals("true") && !v.equals("false")) {
            Result.fail(key + " must be true or false (got " + v + ")");
        }
        return v.equals("true");
    }

    double dbl(String key, double def) {
        String v = values.get(key);
        return v == null ? def : Double.parseDouble(v);
    }
}
