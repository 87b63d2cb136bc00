package io.jrdma.tools;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A small getopt-style parser: short flags ({@code -a}, clustered as {@code -av}), short
 * options with a value ({@code -s 4096} or {@code -s4096}), long options ({@code --size 4096},
 * {@code --size=4096}, {@code --verify}), {@code --} to end the options, and positionals in
 * between. Every option is known by its long name; errors are {@link UsageException}s.
 */
public final class ArgParser {
    /**
     * One option.
     *
     * @param shortName the one-letter name, or 0 for a long-only option
     * @param longName  the long name (the key of the parsed value)
     * @param valueName what the value is called in the usage text, or null for a flag
     * @param help      one line of help
     */
    public record Option(char shortName, String longName, String valueName, String help) {
        boolean takesValue() {
            return valueName != null;
        }

        String display() {
            return shortName != 0 ? "-" + shortName + "/--" + longName : "--" + longName;
        }
    }

    private final String synopsis;
    private final List<Option> options = new ArrayList<>();

    /** @param synopsis the usage line(s) printed above the options */
    public ArgParser(String synopsis) {
        this.synopsis = synopsis;
        option('h', "help", null, "print this help and exit");
    }

    /** Adds an option; {@code shortName} 0 means long only, {@code valueName} null means a flag. */
    public ArgParser option(char shortName, String longName, String valueName, String help) {
        for (Option o : options) {
            if (o.longName.equals(longName) || (shortName != 0 && o.shortName == shortName)) {
                throw new IllegalArgumentException("duplicate option " + longName);
            }
        }
        options.add(new Option(shortName, longName, valueName, help));
        return this;
    }

    /** The outcome of parsing. */
    public static final class Parsed {
        private final Map<String, String> values = new LinkedHashMap<>();
        private final List<String> positionals = new ArrayList<>();

        /** @return true if the option (by long name) was given */
        public boolean has(String longName) {
            return values.containsKey(longName);
        }

        /** @return the option's value (the last one given), or null; flags have the value "" */
        public String value(String longName) {
            return values.get(longName);
        }

        public List<String> positionals() {
            return positionals;
        }

        /** @return true if -h/--help was given */
        public boolean help() {
            return values.containsKey("help");
        }
    }

    /**
     * Parses {@code args}. A {@code -h}/{@code --help} anywhere before {@code --} wins over any
     * error after it, so that {@code jrdma perf --bogus --help} still prints the help.
     */
    public Parsed parse(List<String> args) throws UsageException {
        Parsed p = new Parsed();
        for (String a : args) {
            if (a.equals("--")) {
                break;
            }
            if (a.equals("-h") || a.equals("--help")) {
                p.values.put("help", "");
                return p;
            }
        }
        boolean optionsEnded = false;
        for (int i = 0; i < args.size(); i++) {
            String a = args.get(i);
            if (optionsEnded || a.equals("-") || !a.startsWith("-")) {
                p.positionals.add(a);
            } else if (a.equals("--")) {
                optionsEnded = true;
            } else if (a.startsWith("--")) {
                String name = a.substring(2);
                String value = null;
                int eq = name.indexOf('=');
                if (eq >= 0) {
                    value = name.substring(eq + 1);
                    name = name.substring(0, eq);
                }
                Option o = byLong(name);
                if (o == null) {
                    throw new UsageException("unknown option --" + name + suggestion(name));
                }
                if (o.takesValue()) {
                    if (value == null) {
                        if (i + 1 >= args.size()) {
                            throw new UsageException("option " + o.display() + " needs a value (" + o.valueName + ")");
                        }
                        value = args.get(++i);
                    }
                    p.values.put(o.longName, value);
                } else {
                    if (value != null) {
                        throw new UsageException("option --" + name + " takes no value");
                    }
                    p.values.put(o.longName, "");
                }
            } else {
                for (int k = 1; k < a.length(); k++) {
                    char c = a.charAt(k);
                    Option o = byShort(c);
                    if (o == null) {
                        throw new UsageException("unknown option -" + c + (a.length() > 2 ? " (in " + a + ")" : ""));
                    }
                    if (o.takesValue()) {
                        String value;
                        if (k + 1 < a.length()) {
                            value = a.substring(k + 1);
                        } else if (i + 1 < args.size()) {
                            value = args.get(++i);
                        } else {
                            throw new UsageException("option " + o.display() + " needs a value (" + o.valueName + ")");
                        }
                        p.values.put(o.longName, value);
                        break;
                    }
                    p.values.put(o.longName, "");
                }
            }
        }
        return p;
    }

    private Option byLong(String name) {
        for (Option o : options) {
            if (o.longName.equals(name)) {
                return o;
            }
        }
        return null;
    }

    private Option byShort(char c) {
        for (Option o : options) {
            if (o.shortName != 0 && o.shortName == c) {
                return o;
            }
        }
        return null;
    }

    private String suggestion(String name) {
        if (name.length() == 1 && byShort(name.charAt(0)) != null) {
            return " (did you mean -" + name + "?)";
        }
        for (Option o : options) {
            if (o.longName.replace("-", "").equalsIgnoreCase(name.replace("-", "").replace("_", ""))) {
                return " (did you mean --" + o.longName + "?)";
            }
        }
        return "";
    }

    /** @return the usage text: synopsis, then one line per option */
    public String usage() {
        StringBuilder sb = new StringBuilder(synopsis);
        if (!synopsis.endsWith("\n")) {
            sb.append('\n');
        }
        sb.append("\noptions:\n");
        for (Option o : options) {
            StringBuilder left = new StringBuilder("  ");
            left.append(o.shortName != 0 ? "-" + o.shortName + ", " : "    ");
            left.append("--").append(o.longName);
            if (o.takesValue()) {
                left.append(' ').append(o.valueName);
            }
            while (left.length() < 30) {
                left.append(' ');
            }
            sb.append(left.length() > 30 ? left + "\n" + " ".repeat(30) : left).append(o.help).append('\n');
        }
        return sb.toString();
    }

    /** A bad command line: printed with the usage, exit code 2. */
    public static final class UsageException extends Exception {
        private static final long serialVersionUID = 1L;

        public UsageException(String message) {
            super(message);
        }
    }
}
