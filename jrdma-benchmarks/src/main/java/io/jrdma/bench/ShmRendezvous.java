package io.jrdma.bench;

import io.jrdma.verbs.AddressVector;
import io.jrdma.verbs.Device;
import io.jrdma.verbs.Gid;
import io.jrdma.verbs.Mtu;
import io.jrdma.verbs.QpAttr;
import io.jrdma.verbs.QpState;
import io.jrdma.verbs.QueuePair;
import io.jrdma.verbs.Rdma;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.HexFormat;

/**
 * The two-process shm0 benchmarks' setup ({@link ShmPingPong}, {@link ShmBwPair}): each side publishes what its
 * peer needs (GID, QPN, buffers) in a file of a shared directory, waits for the peer's, and connects its RC QP
 * to it. Nothing here is measured.
 */
final class ShmRendezvous {
    private ShmRendezvous() {
    }

    /** {@return the device named by {@code dev=} (default shm0)}; ends the run with an error when there is none */
    static Device device(Args a) {
        Device dev = Rdma.devices().stream().filter(d -> d.name().equals(a.str("dev", "shm0"))).findFirst().orElse(null);
        if (dev == null) {
            Result.fail("no shm0 device (needs --enable-native-access=ALL-UNNAMED on Linux)");
        }
        return dev;
    }

    /** Moves {@code qp} to RTS towards {@code peer} ({hex GID, QPN, ...}) with the access flags {@code access}. */
    static void connect(QueuePair qp, String[] peer, int access) {
        Gid gid = Gid.of(HexFormat.of().parseHex(peer[0]));
        qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).portNum(1).accessFlags(access));
        qp.modify(new QpAttr().state(QpState.RTR).av(new AddressVector(gid, 0, 64, 0, 4791)).pathMtu(Mtu.MTU_4096)
                .destQpn(Integer.parseInt(peer[1])).rqPsn(0).maxDestRdAtomic(16).minRnrTimer(1));
        qp.modify(new QpAttr().state(QpState.RTS).sqPsn(0).timeout(14).retryCnt(7).rnrRetry(7).maxRdAtomic(16));
    }

    /** Writes {@code s} to {@code f} whole (a temporary file moved into place), so a reader never sees part of it. */
    static void publish(Path f, String s) throws IOException {
        Path tmp = f.resolveSibling(f.getFileName() + ".tmp");
        Files.writeString(tmp, s);
        Files.move(tmp, f, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    }

    /** {@return the fields the peer published in {@code f}}, once it exists; fails the run after {@code deadline} */
    static String[] await(Path f, long deadline) throws IOException, InterruptedException {
        while (!Files.exists(f)) {
            if (System.nanoTime() > deadline) {
                Result.fail("the peer did not write " + f + " within the timeout");
            }
            Thread.sleep(1); // a rendezvous before the measurement, not a data path
        }
        return Files.readString(f).trim().split(" ");
    }

    private static final java.lang.management.ThreadMXBean THREADS =
            java.lang.management.ManagementFactory.getThreadMXBean();

    /** {@return the calling thread's CPU time in ns} */
    static long threadCpu() {
        return THREADS.getCurrentThreadCpuTime();
    }
}
