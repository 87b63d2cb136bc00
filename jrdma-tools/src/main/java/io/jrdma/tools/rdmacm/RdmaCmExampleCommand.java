package io.jrdma.tools.rdmacm;

import io.jrdma.tools.ArgParser;
import io.jrdma.tools.DeviceChoice;
import io.jrdma.tools.pingpong.PingpongCommand;
import io.jrdma.verbs.Access;
import io.jrdma.verbs.CompletionQueue;
import io.jrdma.verbs.ConnParam;
import io.jrdma.verbs.ConnectionManager;
import io.jrdma.verbs.Device;
import io.jrdma.verbs.DeviceContext;
import io.jrdma.verbs.DeviceOptions;
import io.jrdma.verbs.MemoryRegion;
import io.jrdma.verbs.ProtectionDomain;
import io.jrdma.verbs.QpInitAttr;
import io.jrdma.verbs.QpType;
import io.jrdma.verbs.QueuePair;
import io.jrdma.verbs.Rdma;
import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.RecvWorkRequest;
import io.jrdma.verbs.SendFlags;
import io.jrdma.verbs.SendWorkRequest;
import io.jrdma.verbs.Transport;
import io.jrdma.verbs.WcStatus;
import io.jrdma.verbs.WorkCompletion;
import io.jrdma.verbs.WrOpcode;

import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.time.Duration;
import java.util.List;
import java.util.function.IntConsumer;
import java.util.concurrent.locks.LockSupport;

/**
 * {@code jrdma rdma_server} and {@code jrdma rdma_client}: librdmacm's two smallest examples
 * ({@code librdmacm/examples/rdma_server.c}, {@code rdma_client.c}), so that either end can be the Linux
 * program. The client posts a 16-byte receive, connects (rdma_cm, port 7471, default parameters), SENDs 16
 * bytes (inline), waits for both completions and disconnects; the server takes one connection request,
 * posts its receive, accepts, waits for the client's message, SENDs 16 bytes back and disconnects. Each
 * prints {@code rdma_<role>: start} and {@code rdma_<role>: end 0} as the examples do.
 */
public final class RdmaCmExampleCommand {
    static final int MESSAGE = 16;
    static final int DEFAULT_PORT = 7471;

    private RdmaCmExampleCommand() {
    }

    static ArgParser parser(boolean server) {
        String name = server ? "rdma_server" : "rdma_client";
        return new ArgParser("usage: jrdma " + name + " [-s address] [-p port] [-D device] [--timeout SEC]\n\n"
                + "As librdmacm's " + name + " example: one 16-byte SEND each way over an rdma_cm connection, then"
                + " a\ndisconnect. The Linux program can be the peer, over RoCE (roce_<if>: the InfiniBand CM) or"
                + " iWARP\n(iwarp_<if>). The device is the RoCE device of the address unless -D names one.")
                .option('s', "server", "ADDRESS", server ? "the address to listen on (default: all)"
                        : "the server's address (default 127.0.0.1)")
                .option('p', "port", "PORT", "port (default 7471)")
                .option('D', "device", "DEV", "use device DEV (jrdma; default: the RoCE device of the address)")
                .option((char) 0, "timeout", "SEC", "fail after SEC s (default 30)");
    }

    /** Runs {@code jrdma rdma_server} ({@code server}) or {@code rdma_client}; @return the exit code. */
    public static int run(boolean server, List<String> args, PrintStream out, PrintStream err) {
        return run(server, args, out, err, port -> { });
    }

    /** As {@link #run(boolean, List, PrintStream, PrintStream)}, telling a server's port to {@code listening}. */
    public static int run(boolean server, List<String> args, PrintStream out, PrintStream err, IntConsumer listening) {
        String name = server ? "rdma_server" : "rdma_client";
        ArgParser parser = parser(server);
        InetAddress addr;
        int port;
        int timeout;
        String dev;
        try {
            ArgParser.Parsed p = parser.parse(args);
            if (p.help()) {
                out.print(parser.usage());
                return 0;
            }
            if (!p.positionals().isEmpty()) {
                throw new ArgParser.UsageException("unexpected argument '" + p.positionals().getFirst() + "'");
            }
            String a = p.has("server") ? p.value("server") : server ? "0.0.0.0" : "127.0.0.1";
            try {
                addr = InetAddress.getByName(a);
            } catch (UnknownHostException e) {
                err.println("jrdma " + name + ": cannot resolve host '" + a + "'");
                return 1;
            }
            port = (int) PingpongCommand.number(p, "port", 'p', server ? 0 : 1, 65535, DEFAULT_PORT);
            timeout = (int) PingpongCommand.number(p, "timeout", (char) 0, 1, 86_400, 30);
            dev = p.value("device");
        } catch (ArgParser.UsageException e) {
            err.println("jrdma " + name + ": " + e.getMessage());
            err.print(parser.usage());
            return 2;
        }
        Device device;
        try {
            device = dev != null ? DeviceChoice.named(dev)
                    : server && addr.isAnyLocalAddress() ? DeviceChoice.forServer(Transport.ROCE_V2)
                    : Rdma.resolve(addr, Transport.ROCE_V2).device();
        } catch (DeviceChoice.NoSuchDevice | RdmaException e) {
            err.println("jrdma " + name + ": " + e.getMessage());
            return 2;
        }
        out.println(name + ": start");
        int rc;
        try {
            rc = server ? serve(device, new InetSocketAddress(addr, port), timeout, listening)
                    : connect(device, new InetSocketAddress(addr, port), timeout);
        } catch (RdmaException | IllegalStateException e) {
            err.println("jrdma " + name + ": " + e.getMessage());
            rc = 1;
        }
        out.println(name + ": end " + rc);
        return rc;
    }

    /** The resources of one side: 16 bytes to send, 16 to receive, a QP with one of each. */
    private static final class Side implements AutoCloseable {
        final DeviceContext ctx;
        final Arena arena = Arena.ofShared();
        final ProtectionDomain pd;
        final CompletionQueue cq;
        final QueuePair qp;
        final MemorySegment sendBuf;
        final MemorySegment recvBuf;
        final MemoryRegion sendMr;
        final MemoryRegion recvMr;
        final long deadline;
        final WorkCompletion wc = new WorkCompletion();

        /** @param address the server's address, or the one listened on: its port is the QP's ({@link DeviceChoice#portFor}) */
        Side(Device dev, int timeoutSec, java.net.InetAddress address) {
            deadline = System.nanoTime() + timeoutSec * 1_000_000_000L;
            ctx = dev.open(dev.transport() == Transport.ROCE_V2
                    ? DeviceOptions.defaults().with(io.jrdma.soft.SoftRoceOptions.defaults().withAnyIpv4Id(true))
                    : DeviceOptions.defaults());
            pd = ctx.allocPd();
            cq = ctx.createCq(4);
            // rdma_create_ep's attributes in the examples: one send and one receive, 16 bytes inline, all signaled
            qp = pd.createQp(new QpInitAttr(QpType.RC, cq, cq, 1, 1, 1, 1, MESSAGE, true));
            sendBuf = arena.allocate(MESSAGE, 64);
            recvBuf = arena.allocate(MESSAGE, 64);
            sendMr = pd.register(sendBuf, Access.LOCAL_WRITE);
            recvMr = pd.register(recvBuf, Access.LOCAL_WRITE);
            // as rdma_create_ep leaves it: INIT on the address's port, so that the receive can be posted before
            // connecting (rdma_cm on RoCE moves it to its rdma_cm_id's port, INIT to INIT, as librdmacm)
            qp.modify(new io.jrdma.verbs.QpAttr().state(io.jrdma.verbs.QpState.INIT).pkeyIndex(0)
                    .portNum(DeviceChoice.portFor(ctx, address))
                    .accessFlags(Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ));
        }

        void postRecv() {
            if (qp.postRecv(new RecvWorkRequest().wrId(1).sge(0, recvMr, 0, MESSAGE)) != 0) {
                throw new IllegalStateException("rdma_post_recv failed");
            }
        }

        void postSend() {
            if (qp.postSend(new SendWorkRequest().wrId(2).opcode(WrOpcode.SEND)
                    .flags(SendFlags.SIGNALED | SendFlags.INLINE).sge(0, sendMr, 0, MESSAGE)) != 0) {
                throw new IllegalStateException("rdma_post_send failed");
            }
        }

        /** rdma_get_send_comp / rdma_get_recv_comp: the next completion, which must be a success. */
        void await(String what) {
            int idle = 0;
            while (cq.poll(wc) == 0) {
                if (System.nanoTime() - deadline > 0) {
                    throw new IllegalStateException("timed out waiting for the " + what + " completion");
                }
                if (++idle > 1000) {
                    LockSupport.parkNanos(50_000);
                }
            }
            if (wc.status() != WcStatus.SUCCESS) {
                throw new IllegalStateException(what + " completion failed: " + wc.status());
            }
        }

        Duration left() {
            return Duration.ofNanos(Math.max(1, deadline - System.nanoTime()));
        }

        @Override
        public void close() {
            qp.close();
            sendMr.close();
            recvMr.close();
            cq.close();
            pd.close();
            ctx.close();
            arena.close();
        }
    }

    private static int connect(Device dev, InetSocketAddress server, int timeout) {
        try (Side s = new Side(dev, timeout, server.getAddress())) {
            s.postRecv();
            ConnectionManager.Connection c = s.ctx.rdmaCm().connect(s.qp, server, ConnParam.defaults(), s.left());
            s.postSend();
            s.await("send");
            s.await("recv");
            c.close(); // rdma_disconnect
            return 0;
        }
    }

    private static int serve(Device dev, InetSocketAddress at, int timeout, IntConsumer listening) {
        try (Side s = new Side(dev, timeout, at.getAddress()); ConnectionManager.Listener l = s.ctx.rdmaCm().listen(at)) {
            listening.accept(l.address().getPort());
            ConnectionManager.ConnectRequest r = l.poll(s.left());
            if (r == null) {
                throw new IllegalStateException("no connection request within " + timeout + " s");
            }
            s.postRecv();
            ConnectionManager.Connection c = r.accept(s.qp, ConnParam.defaults(), s.left());
            s.await("recv");
            s.postSend();
            s.await("send");
            c.close(); // rdma_disconnect
            return 0;
        }
    }
}
