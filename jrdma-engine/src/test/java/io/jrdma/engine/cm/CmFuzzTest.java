package io.jrdma.engine.cm;

import io.jrdma.verbs.CompletionQueue;
import io.jrdma.verbs.ConnParam;
import io.jrdma.verbs.ConnectionManager;
import io.jrdma.verbs.DeviceContext;
import io.jrdma.verbs.DeviceOptions;
import io.jrdma.verbs.Gid;
import io.jrdma.verbs.Mtu;
import io.jrdma.verbs.ProtectionDomain;
import io.jrdma.verbs.QpInitAttr;
import io.jrdma.verbs.QpState;
import io.jrdma.verbs.QueuePair;
import io.jrdma.verbs.Rdma;
import io.jrdma.verbs.ThreadingMode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Fuzzing jrdma's connection manager (soft-RoCE) through the bytes on its TCP socket only: random bytes, cut and
 * mutated REQ messages, each on a connection of its own that the fuzzer then closes. The listener must survive all
 * of them (a request that still parses is rejected) and then connect a real client whose QP reaches RTS.
 * {@code -Djrdma.fuzz.cm=N} sets the number of inputs.
 */
@Timeout(value = 3, unit = TimeUnit.HOURS) // bounded inside; the scripts run 10^6 inputs
class CmFuzzTest {
    @Test
    void hostileHellosNeitherCrashNorStopTheListener() throws Exception {
        int inputs = Integer.getInteger("jrdma.fuzz.cm", 1_000);
        SplittableRandom r = new SplittableRandom(Long.getLong("jrdma.fuzz.seed", 16));
        var dev = Rdma.resolve(InetAddress.getByName("127.0.0.1"), io.jrdma.verbs.Transport.ROCE_V2).device();
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        TcpConnectionManager.write(new DataOutputStream(bytes), TcpConnectionManager.REQ,
                new TcpConnectionManager.Hello(0x123456, 0xABCDEF, Gid.of(InetAddress.getByName("127.0.0.1")), 4791,
                        new ConnParam(new byte[] {1, 2, 3}, 4, 5, 6, 7, Mtu.MTU_1024), 0));
        byte[] valid = bytes.toByteArray();
        try (DeviceContext server = dev.open(DeviceOptions.defaults().withThreadingMode(ThreadingMode.DEDICATED));
             DeviceContext client = dev.open(DeviceOptions.defaults().withThreadingMode(ThreadingMode.DEDICATED));
             ProtectionDomain spd = server.allocPd();
             ProtectionDomain cpd = client.allocPd();
             CompletionQueue scq = server.createCq(16);
             CompletionQueue ccq = client.createCq(16)) {
            ConnectionManager.Listener listener = server.connectionManager()
                    .listen(new InetSocketAddress(InetAddress.getByName("127.0.0.1"), 0));
            long t0 = System.nanoTime();
            int parsed = 0;
            long runDeadline = System.nanoTime() + 60_000_000_000L + inputs * 50_000_000L; // no hang
            for (int i = 0; i < inputs; i++) {
                assertTrue(System.nanoTime() < runDeadline, "the fuzzing stopped making progress at input " + i);
                byte[] in = switch (i % 3) {
                    case 0 -> {
                        byte[] b = new byte[r.nextInt(0, 200)];
                        r.nextBytes(b);
                        yield b;
                    }
                    case 1 -> java.util.Arrays.copyOf(valid, r.nextInt(0, valid.length));
                    default -> {
                        byte[] b = valid.clone();
                        for (int k = 1 + r.nextInt(3); k > 0; k--) {
                            b[r.nextInt(b.length)] ^= (byte) (1 << r.nextInt(8));
                        }
                        yield b;
                    }
                };
                try (SocketChannel ch = SocketChannel.open(listener.address())) {
                    ch.write(ByteBuffer.wrap(in));
                    ch.shutdownOutput();
                    ConnectionManager.ConnectRequest req = listener.poll(Duration.ofMillis(i % 3 == 2 ? 20 : 0));
                    if (req != null) {
                        req.reject(new byte[0]);
                        parsed++;
                    }
                }
            }
            long ms = (System.nanoTime() - t0) / 1_000_000;
            try (QueuePair sqp = spd.createQp(QpInitAttr.rc(scq)); QueuePair cqp = cpd.createQp(QpInitAttr.rc(ccq))) {
                CompletableFuture<ConnectionManager.Connection> accepted = CompletableFuture.supplyAsync(() -> {
                    long deadline = System.nanoTime() + 20_000_000_000L;
                    while (System.nanoTime() < deadline) {
                        ConnectionManager.ConnectRequest req = listener.poll(Duration.ofMillis(100));
                        if (req != null && req.peerParam().privateData().length == 1) {
                            return req.accept(sqp, ConnParam.defaults(), Duration.ofSeconds(10));
                        }
                        if (req != null) {
                            req.reject(new byte[0]); // a late hostile one
                        }
                    }
                    throw new AssertionError("the real client's request never came");
                });
                ConnectionManager.Connection c = client.connectionManager().connect(cqp, listener.address(),
                        ConnParam.defaults().withPrivateData(new byte[] {42}), Duration.ofSeconds(20));
                ConnectionManager.Connection s = accepted.get(30, TimeUnit.SECONDS);
                assertEquals(QpState.RTS, cqp.state());
                assertEquals(QpState.RTS, sqp.state());
                c.close();
                s.close();
            }
            listener.close();
            System.out.println("cm fuzz: " + inputs + " inputs in " + ms + " ms (" + parsed
                    + " still parsed, rejected); then a real client connected");
            assertTrue(parsed < inputs);
        }
    }

    /**
     * A client whose REQ was accepted and that then sends RTU after RTU (a stream of valid headers, faster than the
     * server reads them) has its connection ended: after the one RTU only a DREQ comes (before, every further RTU was
     * ignored and the read loop, on the listener's thread, never ran out of input: the connection never ended and the
     * listener served no one else).
     */
    @Test
    void aStreamOfRtusEndsTheConnection() throws Exception {
        withServer((listener, sqp) -> {
            ByteArrayOutputStream rtus = new ByteArrayOutputStream();
            for (int i = 0; i < 4096; i++) {
                TcpConnectionManager.write(new DataOutputStream(rtus), TcpConnectionManager.RTU, null);
            }
            byte[] burst = rtus.toByteArray();
            try (SocketChannel ch = SocketChannel.open(listener.address())) {
                ch.write(ByteBuffer.wrap(rawReq()));
                ConnectionManager.ConnectRequest req = listener.poll(Duration.ofSeconds(10));
                assertTrue(req != null, "the REQ");
                ConnectionManager.Connection conn = req.accept(sqp, ConnParam.defaults(), Duration.ofSeconds(10));
                Thread flood = Thread.ofPlatform().daemon().start(() -> {
                    try {
                        long end = System.nanoTime() + 15_000_000_000L;
                        while (System.nanoTime() < end) {
                            ch.write(ByteBuffer.wrap(burst));
                        }
                    } catch (java.io.IOException closed) {
                        // the server ended the connection: the point
                    }
                });
                assertEquals(ConnectionManager.Event.DISCONNECTED, conn.pollEvent(Duration.ofSeconds(10)),
                        "the connection ends on the second RTU");
                assertEquals(QpState.ERROR, sqp.state());
                ch.close();
                flood.join(20_000);
                conn.close();
            }
        });
    }

    /** A raw client's REQ (a QP at 127.0.0.1 that does not exist: the server's QP goes to RTS all the same). */
    private static byte[] rawReq() throws Exception {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        TcpConnectionManager.write(new DataOutputStream(bytes), TcpConnectionManager.REQ,
                new TcpConnectionManager.Hello(0x123456, 0xABCDEF, Gid.of(InetAddress.getByName("127.0.0.1")), 4791,
                        new ConnParam(new byte[] {7}, 4, 5, 6, 7, Mtu.MTU_1024), 0));
        return bytes.toByteArray();
    }

    /**
     * An accept refused for its QP (not in RESET or INIT) leaves the request unanswered: a reject after it still
     * reaches the client (before, the refused accept had counted as the answer, the reject failed with EINVAL, and
     * the client's socket stayed open until its own timeout).
     */
    @Test
    void anAcceptRefusedForItsQpLeavesTheRequestToBeAnswered() throws Exception {
        withServer((listener, sqp) -> {
            try (SocketChannel ch = SocketChannel.open(listener.address())) {
                ch.write(ByteBuffer.wrap(rawReq()));
                ConnectionManager.ConnectRequest req = listener.poll(Duration.ofSeconds(10));
                assertTrue(req != null, "the REQ");
                sqp.modify(new io.jrdma.verbs.QpAttr().state(QpState.ERROR));
                io.jrdma.verbs.RdmaException e = org.junit.jupiter.api.Assertions.assertThrows(io.jrdma.verbs.RdmaException.class,
                        () -> req.accept(sqp, ConnParam.defaults(), Duration.ofSeconds(10)));
                assertEquals(io.jrdma.verbs.RdmaException.Errno.EINVAL, e.errno(), e.getMessage());
                req.reject(new byte[] {9});
                ch.socket().setSoTimeout(10_000);
                java.io.DataInputStream in = new java.io.DataInputStream(ch.socket().getInputStream());
                assertEquals(TcpConnectionManager.MAGIC, in.readInt());
                assertEquals(TcpConnectionManager.REJ, in.readByte(), "the client got the REJ");
            }
        });
    }

    /**
     * A client that resets its side channel after its REQ: the accept's REP finds the connection broken, and the
     * server's QP, already in RTS, moves to ERROR (before, it stayed in RTS toward a peer that was gone, and a
     * connect or accept refused it).
     */
    @Test
    void anAcceptWhoseRepFindsTheClientGoneLeavesItsQpInError() throws Exception {
        withServer((listener, sqp) -> {
            SocketChannel ch = SocketChannel.open(listener.address());
            ch.write(ByteBuffer.wrap(rawReq()));
            ConnectionManager.ConnectRequest req = listener.poll(Duration.ofSeconds(10));
            assertTrue(req != null, "the REQ");
            ch.socket().setSoLinger(true, 0);
            ch.close(); // a reset, not a FIN
            io.jrdma.verbs.RdmaException e = org.junit.jupiter.api.Assertions.assertThrows(io.jrdma.verbs.RdmaException.class,
                    () -> {
                        ConnectionManager.Connection c = req.accept(sqp, ConnParam.defaults(), Duration.ofSeconds(10));
                        c.close(); // the REP went out before the reset arrived: not this test's case
                    });
            assertEquals(QpState.ERROR, sqp.state(), e.getMessage());
        });
    }

    /**
     * A server that sends its REP a byte every 200 ms cannot hold {@code connect} past its timeout: with 1 s, connect
     * fails with ETIMEDOUT within 3 s (before, the read timeout was set once and each later read had all of it
     * again: the REP's 40-odd bytes took some 9 s, and connect waited for all of them).
     */
    @Test
    void aServerThatTricklesItsRepCannotHoldConnectPastItsTimeout() throws Exception {
        var dev = Rdma.resolve(InetAddress.getByName("127.0.0.1"), io.jrdma.verbs.Transport.ROCE_V2).device();
        ByteArrayOutputStream rep = new ByteArrayOutputStream();
        TcpConnectionManager.write(new DataOutputStream(rep), TcpConnectionManager.REP,
                new TcpConnectionManager.Hello(0x123456, 0xABCDEF, Gid.of(InetAddress.getByName("127.0.0.1")), 4791,
                        new ConnParam(new byte[0], 4, 5, 6, 7, Mtu.MTU_1024), 0));
        byte[] bytes = rep.toByteArray();
        try (var server = java.nio.channels.ServerSocketChannel.open();
             DeviceContext client = dev.open(DeviceOptions.defaults().withThreadingMode(ThreadingMode.DEDICATED));
             ProtectionDomain cpd = client.allocPd();
             CompletionQueue ccq = client.createCq(16);
             QueuePair cqp = cpd.createQp(QpInitAttr.rc(ccq))) {
            server.bind(new InetSocketAddress(InetAddress.getByName("127.0.0.1"), 0));
            Thread trickle = Thread.ofPlatform().daemon().start(() -> {
                try (SocketChannel ch = server.accept()) {
                    for (byte b : bytes) {
                        ch.write(ByteBuffer.wrap(new byte[] {b}));
                        Thread.sleep(200);
                    }
                } catch (Exception gone) {
                    // the client gave up: the point
                }
            });
            long t0 = System.nanoTime();
            io.jrdma.verbs.RdmaException e = org.junit.jupiter.api.Assertions.assertThrows(io.jrdma.verbs.RdmaException.class,
                    () -> client.connectionManager().connect(cqp, (InetSocketAddress) server.getLocalAddress(),
                            ConnParam.defaults(), Duration.ofSeconds(1)));
            long took = (System.nanoTime() - t0) / 1_000_000;
            assertEquals(io.jrdma.verbs.RdmaException.Errno.ETIMEDOUT, e.errno(), e.getMessage());
            assertTrue(took < 3_000, "connect took " + took + " ms with a timeout of 1 s");
            trickle.interrupt();
            trickle.join(10_000);
        }
    }

    /** What a test does with a listening server on soft-RoCE over 127.0.0.1 and its QP. */
    private interface ServerTest {
        void run(ConnectionManager.Listener listener, QueuePair sqp) throws Exception;
    }

    /** Runs {@code body} against a DEDICATED server context listening on 127.0.0.1, then closes it all. */
    private static void withServer(ServerTest body) throws Exception {
        var dev = Rdma.resolve(InetAddress.getByName("127.0.0.1"), io.jrdma.verbs.Transport.ROCE_V2).device();
        try (DeviceContext server = dev.open(DeviceOptions.defaults().withThreadingMode(ThreadingMode.DEDICATED));
             ProtectionDomain spd = server.allocPd();
             CompletionQueue scq = server.createCq(16);
             QueuePair sqp = spd.createQp(QpInitAttr.rc(scq))) {
            ConnectionManager.Listener listener = server.connectionManager()
                    .listen(new InetSocketAddress(InetAddress.getByName("127.0.0.1"), 0));
            try {
                body.run(listener, sqp);
            } finally {
                listener.close();
            }
        }
    }
}
