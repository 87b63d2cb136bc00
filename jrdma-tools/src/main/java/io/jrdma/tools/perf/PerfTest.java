package io.jrdma.tools.perf;

import io.jrdma.verbs.WrOpcode;

/** The eight perftest benchmarks jrdma runs. */
public enum PerfTest {
    WRITE_BW("write_bw", WrOpcode.RDMA_WRITE, true, "RDMA_Write BW Test"),
    WRITE_LAT("write_lat", WrOpcode.RDMA_WRITE, false, "RDMA_Write Latency Test"),
    READ_BW("read_bw", WrOpcode.RDMA_READ, true, "RDMA_Read BW Test"),
    READ_LAT("read_lat", WrOpcode.RDMA_READ, false, "RDMA_Read Latency Test"),
    SEND_BW("send_bw", WrOpcode.SEND, true, "Send BW Test"),
    SEND_LAT("send_lat", WrOpcode.SEND, false, "Send Latency Test"),
    ATOMIC_BW("atomic_bw", WrOpcode.ATOMIC_FETCH_AND_ADD, true, "Atomic FETCH_AND_ADD BW Test"),
    ATOMIC_LAT("atomic_lat", WrOpcode.ATOMIC_FETCH_AND_ADD, false, "Atomic FETCH_AND_ADD Latency Test");

    /** The largest message size (perftest's MAX_SIZE), the top of {@code -a}. */
    public static final int MAX_SIZE = 8 * 1024 * 1024;
    /** The largest TX depth of the atomic tests (the responder keeps 16 atomic results). */
    public static final int MAX_ATOMIC_DEPTH = 16;

    private static final PerfTest[] VALUES = values();

    final String cliName;
    final WrOpcode opcode;
    final boolean bw;
    final String title;

    PerfTest(String cliName, WrOpcode opcode, boolean bw, String title) {
        this.cliName = cliName;
        this.opcode = opcode;
        this.bw = bw;
        this.title = title;
    }

    /** @return the name on the command line, e.g. {@code write_bw} */
    public String cliName() {
        return cliName;
    }

    public boolean isBw() {
        return bw;
    }

    public boolean isAtomic() {
        return opcode.isAtomic();
    }

    public boolean isSend() {
        return opcode == WrOpcode.SEND;
    }

    /**
     * @return true when the server has nothing to do while the client runs (it is only an RDMA
     *         target): it then uses a DEDICATED engine thread and blocks
     */
    public boolean serverPassive() {
        return this == WRITE_BW || this == READ_BW || this == ATOMIC_BW;
    }

    public int defaultSize() {
        return isAtomic() ? 8 : bw ? 65536 : 2;
    }

    public long defaultIterations() {
        return bw ? 5000 : 1000;
    }

    public int defaultTxDepth() {
        return this == ATOMIC_BW ? MAX_ATOMIC_DEPTH : bw ? 128 : 1;
    }

    static PerfTest ofOrdinal(int ordinal) {
        if (ordinal < 0 || ordinal >= VALUES.length) {
            return null;
        }
        return VALUES[ordinal];
    }

    /** @return the test with this command-line name, or null */
    public static PerfTest byName(String name) {
        for (PerfTest t : VALUES) {
            if (t.cliName.equals(name)) {
                return t;
            }
        }
        return null;
    }

    /** @return the command-line names, space-separated */
    public static String names() {
        StringBuilder sb = new StringBuilder();
        for (PerfTest t : VALUES) {
            sb.append(sb.isEmpty() ? "" : " ").append(t.cliName);
        }
        return sb.toString();
    }
}
