package io.jrdma.engine.core;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A device context's counters file, after Aeron's CnC counters file: a memory-mapped file that the
 * engine thread writes with plain single-writer stores and any process of the same user reads
 * without disturbing it ({@code jrdma stat}). One file per open context, in a directory per user
 * ({@link #directory()}: {@code /dev/shm/jrdma-<user>} where Linux has it), named
 * {@code <pid>-<device>-<n>.stat}; removed when the context closes. A reader ignores and deletes the
 * files of processes that are gone (a pid that is not running, or runs a process started at
 * another time).
 * <p>
 * Layout (version {@value #VERSION}, native byte order, all offsets from the file's start):
 * <pre>
 *   0  8 B   magic "JRDMASTA"
 *   8  int   version
 *  12  int   header length ({@value #HEADER})
 *  16  long  pid
 *  24  long  the process's start, epoch milliseconds (0 when unknown)
 *  32  long  the context's opening, epoch milliseconds
 *  40  int   device counters N            44  int  label length ({@value #LABEL} B, UTF-8, NUL-padded)
 *  48  int   device labels offset         52  int  device values offset (N longs)
 *  56  int   QP slots S                   60  int  QP counters M
 *  64  int   QP labels offset             68  int  QP slots offset
 *  72  int   QP slot length
 * 128  64 B  device name                 192  64 B  transport
 * </pre>
 * A QP slot is a long {@code generation << 32 | qpn} (0: free), then M counters. The engine zeroes a
 * slot's counters, then stores its word with release; a reader loads the word with acquire, the
 * counters, then the word again, and skips a slot whose word changed. The values are single-writer
 * longs: a reader on x86-64 and AArch64 sees each whole.
 */
public final class StatsFile {
    static final int VERSION = 1;
    static final int HEADER = 4096;
    static final int LABEL = 64;
    private static final byte[] MAGIC = "JRDMASTA".getBytes(StandardCharsets.US_ASCII);
    /** QP slots per context; QPs beyond them count in a hidden overflow slot. */
    static final int QP_SLOTS = 1024;
    private static final AtomicInteger SEQUENCE = new AtomicInteger();
    /** this process's files: a JVM that exits (or is stopped by SIGTERM) with contexts open removes them */
    private static final java.util.Set<Path> OPEN = java.util.concurrent.ConcurrentHashMap.newKeySet();

    static {
        try {
            Runtime.getRuntime().addShutdownHook(Thread.ofPlatform().name("jrdma-stat-cleanup").unstarted(() -> {
                for (Path f : OPEN) {
                    try {
                        Files.deleteIfExists(f);
                    } catch (IOException ignored) {
                        // readers remove the files of a process that is gone
                    }
                }
            }));
        } catch (IllegalStateException | SecurityException ignored) {
            // already shutting down: readers remove what is left
        }
    }
    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG;
    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT;
    static final VarHandle LONG_VH = LONG.varHandle();

    final MemorySegment seg;
    /** the file, or null when the counters live in memory only */
    final Path path;
    /** why there is no file, or null */
    final String noFileReason;
    final long valuesOffset;
    final long qpSlotsOffset;
    final int qpSlotLength;
    private final boolean[] slotTaken = new boolean[QP_SLOTS];
    private final int[] generation = new int[QP_SLOTS];

    private StatsFile(MemorySegment seg, Path path, String noFileReason) {
        this.seg = seg;
        this.path = path;
        this.noFileReason = noFileReason;
        this.valuesOffset = seg.get(INT, 52);
        this.qpSlotsOffset = seg.get(INT, 68);
        this.qpSlotLength = seg.get(INT, 72);
    }

    /** @return the directory of this user's counters files: {@code jrdma.stat.dir}, {@code JRDMA_STAT_DIR}, or the default */
    public static Path directory() {
        String p = System.getProperty("jrdma.stat.dir");
        if (p == null || p.isEmpty()) {
            p = System.getenv("JRDMA_STAT_DIR");
        }
        if (p != null && !p.isEmpty()) {
            return Path.of(p);
        }
        String user = System.getProperty("user.name", "unknown").replaceAll("[^A-Za-z0-9._-]", "_");
        Path shm = Path.of("/dev/shm");
        return (Files.isDirectory(shm) ? shm : Path.of(System.getProperty("java.io.tmpdir"))).resolve("jrdma-" + user);
    }

    private static long size(int n, int m) {
        return HEADER + align(n * (long) LABEL) + align(n * 8L) + align(m * (long) LABEL) + (QP_SLOTS + 1L) * slotLength(m);
    }

    private static int slotLength(int m) {
        return (int) align(8 + m * 8L);
    }

    private static long align(long v) {
        return (v + 63) & ~63L;
    }

    /**
     * Opens a context's counters: a file in {@link #directory()}, or memory only when files are turned off
     * ({@code -Djrdma.stat=false}) or cannot be made (the reason is kept for {@code limitations}).
     */
    static StatsFile open(String device, String transport) {
        Counter[] dev = Counter.values();
        QpCounter[] qp = QpCounter.values();
        long size = size(dev.length, qp.length);
        if (!Boolean.parseBoolean(System.getProperty("jrdma.stat", "true"))) {
            return new StatsFile(format(Arena.ofAuto().allocate(size, 64), device, transport), null,
                    "counters files are turned off (-Djrdma.stat=false)");
        }
        Path dir = directory();
        Path file = dir.resolve(ProcessHandle.current().pid() + "-" + device.replaceAll("[^A-Za-z0-9._-]", "_") + "-"
                + SEQUENCE.incrementAndGet() + ".stat");
        try {
            if (!Files.isDirectory(dir)) {
                try {
                    Files.createDirectories(dir, PosixFilePermissions.asFileAttribute(
                            PosixFilePermissions.fromString("rwx------")));
                } catch (UnsupportedOperationException e) {
                    Files.createDirectories(dir);
                }
            }
            MemorySegment seg;
            try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.READ,
                    StandardOpenOption.WRITE)) {
                // an automatic arena: the mapping lives while the context's counters are reachable, so no
                // thread can touch an unmapped page; the file itself is removed at close
                seg = ch.map(FileChannel.MapMode.READ_WRITE, 0, size, Arena.ofAuto());
            }
            OPEN.add(file);
            return new StatsFile(format(seg, device, transport), file, null);
        } catch (IOException | RuntimeException e) {
            try {
                Files.deleteIfExists(file);
            } catch (IOException ignored) {
                // nothing was made
            }
            return new StatsFile(format(Arena.ofAuto().allocate(size, 64), device, transport), null,
                    "no counters file in " + dir + " (" + e + "): jrdma stat cannot see this context");
        }
    }

    private static MemorySegment format(MemorySegment s, String device, String transport) {
        Counter[] dev = Counter.values();
        QpCounter[] qp = QpCounter.values();
        int n = dev.length;
        int m = qp.length;
        long labels = HEADER;
        long values = labels + align(n * (long) LABEL);
        long qpLabels = values + align(n * 8L);
        long slots = qpLabels + align(m * (long) LABEL);
        s.asSlice(0, HEADER).fill((byte) 0);
        s.set(INT, 12, HEADER);
        s.set(LONG, 16, ProcessHandle.current().pid());
        s.set(LONG, 24, processStart(ProcessHandle.current()));
        s.set(LONG, 32, System.currentTimeMillis());
        s.set(INT, 40, n);
        s.set(INT, 44, LABEL);
        s.set(INT, 48, (int) labels);
        s.set(INT, 52, (int) values);
        s.set(INT, 56, QP_SLOTS);
        s.set(INT, 60, m);
        s.set(INT, 64, (int) qpLabels);
        s.set(INT, 68, (int) slots);
        s.set(INT, 72, slotLength(m));
        putString(s, 128, device);
        putString(s, 192, transport);
        for (int i = 0; i < n; i++) {
            putString(s, labels + (long) i * LABEL, dev[i].counterName());
        }
        for (int i = 0; i < m; i++) {
            putString(s, qpLabels + (long) i * LABEL, qp[i].label());
        }
        s.set(INT, 8, VERSION);
        MemorySegment.copy(MemorySegment.ofArray(MAGIC), 0, s, 0, 8);
        VarHandle.releaseFence(); // a reader that finds the magic finds the header
        return s;
    }

    private static long processStart(ProcessHandle p) {
        return p.info().startInstant().map(java.time.Instant::toEpochMilli).orElse(0L);
    }

    private static void putString(MemorySegment s, long at, String v) {
        byte[] b = v.getBytes(StandardCharsets.UTF_8);
        int len = Math.min(b.length, LABEL - 1);
        MemorySegment.copy(MemorySegment.ofArray(b), 0, s, at, len);
        s.asSlice(at + len, LABEL - len).fill((byte) 0);
    }

    private static String getString(MemorySegment s, long at) {
        byte[] b = new byte[LABEL];
        MemorySegment.copy(s, ValueLayout.JAVA_BYTE, at, b, 0, LABEL);
        int len = 0;
        while (len < LABEL && b[len] != 0) {
            len++;
        }
        return new String(b, 0, len, StandardCharsets.UTF_8);
    }

    /**
     * Control path: a slot for QP {@code qpn}, its counters zeroed and its word published.
     *
     * @return the slot's offset, or the overflow slot's when all are taken
     */
    synchronized long takeQpSlot(int qpn) {
        for (int i = 0; i < QP_SLOTS; i++) {
            if (!slotTaken[i]) {
                slotTaken[i] = true;
                long off = qpSlotsOffset + (long) i * qpSlotLength;
                seg.asSlice(off + 8, qpSlotLength - 8).fill((byte) 0);
                int gen = ++generation[i];
                LONG_VH.setRelease(seg, off, (long) gen << 32 | qpn);
                return off;
            }
        }
        return qpSlotsOffset + (long) QP_SLOTS * qpSlotLength;
    }

    /** Control path: frees a slot of {@link #takeQpSlot}. */
    synchronized void freeQpSlot(long off) {
        long i = (off - qpSlotsOffset) / qpSlotLength;
        if (i >= 0 && i < QP_SLOTS && slotTaken[(int) i]) {
            LONG_VH.setRelease(seg, off, 0L);
            slotTaken[(int) i] = false;
        }
    }

    /** Removes the file (the mapping goes with the last reference). */
    void delete() {
        if (path != null) {
            OPEN.remove(path);
            try {
                Files.deleteIfExists(path);
            } catch (IOException ignored) {
                // a file left behind belongs to a process that is gone once this one exits: readers delete it then
            }
        }
    }

    // ---------------------------------------------------------------- reading

    /** What a reader found in one counters file. */
    public record Snapshot(Path file, long pid, String device, String transport, long openedMillis,
                           Map<String, Long> deviceCounters, List<QpSnapshot> qps) {
    }

    /** One QP's counters. */
    public record QpSnapshot(int qpn, Map<String, Long> counters) {
    }

    /**
     * Reads every counters file of live processes in {@code dir} (deleting those of processes that are gone).
     *
     * @param pid only this process's files, or -1 for all
     * @return one snapshot per open context, by pid then name
     */
    public static List<Snapshot> readAll(Path dir, long pid) throws IOException {
        List<Snapshot> out = new ArrayList<>();
        if (!Files.isDirectory(dir)) {
            return out;
        }
        List<Path> files;
        try (var s = Files.list(dir)) {
            files = s.filter(f -> f.getFileName().toString().endsWith(".stat")).sorted().toList();
        }
        for (Path f : files) {
            Snapshot snap = read(f);
            if (snap != null && (pid < 0 || snap.pid() == pid)) {
                out.add(snap);
            }
        }
        return out;
    }

    /**
     * Reads one counters file, read-only: the writer is not disturbed.
     *
     * @return its snapshot, or null when it is not a counters file, is being made, or its process is gone
     *         (then the file is deleted)
     */
    public static Snapshot read(Path f) throws IOException {
        try (Arena arena = Arena.ofConfined(); FileChannel ch = FileChannel.open(f, StandardOpenOption.READ)) {
            long size = ch.size();
            if (size < HEADER) {
                return null;
            }
            MemorySegment s = ch.map(FileChannel.MapMode.READ_ONLY, 0, size, arena);
            byte[] magic = new byte[8];
            MemorySegment.copy(s, ValueLayout.JAVA_BYTE, 0, magic, 0, 8);
            VarHandle.acquireFence();
            if (!java.util.Arrays.equals(magic, MAGIC) || s.get(INT, 8) != VERSION) {
                return null;
            }
            long pid = s.get(LONG, 16);
            long start = s.get(LONG, 24);
            var proc = ProcessHandle.of(pid);
            if (proc.isEmpty() || !proc.get().isAlive() || start != 0 && processStart(proc.get()) != 0
                    && Math.abs(processStart(proc.get()) - start) > 1000) {
                Files.deleteIfExists(f); // a stale file of a process that is gone (or whose pid was reused)
                return null;
            }
            int n = s.get(INT, 40);
            long labels = s.get(INT, 48);
            long values = s.get(INT, 52);
            int slots = s.get(INT, 56);
            int m = s.get(INT, 60);
            long qpLabels = s.get(INT, 64);
            long slotOff = s.get(INT, 68);
            int slotLen = s.get(INT, 72);
            if (n < 0 || m < 0 || slots < 0 || (long) slotOff + (slots + 1L) * slotLen > size) {
                return null;
            }
            Map<String, Long> dev = new LinkedHashMap<>();
            for (int i = 0; i < n; i++) {
                dev.put(getString(s, labels + (long) i * LABEL), (long) LONG_VH.getOpaque(s, values + i * 8L));
            }
            String[] qpNames = new String[m];
            for (int i = 0; i < m; i++) {
                qpNames[i] = getString(s, qpLabels + (long) i * LABEL);
            }
            List<QpSnapshot> qps = new ArrayList<>();
            for (int i = 0; i < slots; i++) {
                long off = slotOff + (long) i * slotLen;
                long word = (long) LONG_VH.getAcquire(s, off);
                if (word == 0) {
                    continue;
                }
                Map<String, Long> c = new LinkedHashMap<>();
                for (int k = 0; k < m; k++) {
                    c.put(qpNames[k], (long) LONG_VH.getOpaque(s, off + 8 + k * 8L));
                }
                VarHandle.loadLoadFence();
                if ((long) LONG_VH.getAcquire(s, off) == word) {
                    qps.add(new QpSnapshot((int) word & 0xFFFFFF, c));
                }
            }
            return new Snapshot(f, pid, getString(s, 128), getString(s, 192), s.get(LONG, 32), dev, qps);
        } catch (java.nio.file.NoSuchFileException e) {
            return null; // its context closed while we looked
        }
    }
}
