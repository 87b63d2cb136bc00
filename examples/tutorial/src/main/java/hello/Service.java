package hello;

import io.jrdma.verbs.*;
import java.lang.foreign.*;
import java.net.*;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.*;
import java.time.Duration;
import java.util.*;

/**
 * A long-running service on jrdma's verbs API: it listens once, accepts client after client (at
 * most {@code --max-clients} at a time), gives each a registered region of its own that the client
 * updates with ATOMIC_FETCH_AND_ADD and RDMA WRITE, answers its SEND requests with a SEND, frees a
 * departed client's resources, and stops cleanly on SIGTERM (Ctrl-C).
 *
 * <p>One thread polls everything (the listener, each client's CQ and connection events): it owns
 * every verbs object, so nothing is shared between threads and nothing needs a lock. The engine's
 * own thread (a DEDICATED context) serves the clients' READs, WRITEs and atomics without it.
 *
 * <pre>java ... hello.Service [--port P] [--port-file FILE] [--max-clients N]</pre>
 */
public class Service {
    static final int REGION = 4096;          // per client: [0, 8) a counter, [8, 72) a note
    static final int MSG = 256;              // one request, one reply
    static final Duration IDLE = Duration.ofMillis(5);

    /** What the service holds for one client; freed child first. */
    record Client(int id, Arena arena, ProtectionDomain pd, CompletionQueue cq, QueuePair qp, MemoryRegion region,
                  MemoryRegion msgs, MemorySegment mem, MemorySegment buf, ConnectionManager.Connection conn) {
        void free() {
            conn.close();
            qp.close();
            region.close();
            msgs.close();
            cq.close();
            pd.close();
            arena.close();                      // the memory last: no key reaches it any more
        }
    }

    static volatile boolean running = true;

    public static void main(String[] args) throws Exception {
        int port = 0, maxClients = 8;
        Path portFile = null;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--port" -> port = Integer.parseInt(args[++i]);
                case "--port-file" -> portFile = Path.of(args[++i]);
                case "--max-clients" -> maxClients = Integer.parseInt(args[++i]);
                default -> throw new IllegalArgumentException("unknown option " + args[i]
                        + "; usage: hello.Service [--port P] [--port-file FILE] [--max-clients N]");
            }
        }
        InetAddress host = InetAddress.getByName("127.0.0.1");
        Device dev = Rdma.resolve(host, Transport.ROCE_V2).device();

        Thread main = Thread.currentThread();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {     // SIGTERM, Ctrl-C
            running = false;
            try { main.join(10_000); } catch (InterruptedException e) { }
        }));

        Map<Integer, Client> clients = new LinkedHashMap<>();
        WorkCompletion wc = new WorkCompletion();
        SendWorkRequest send = new SendWorkRequest();
        RecvWorkRequest recv = new RecvWorkRequest();
        int served = 0;
        try (DeviceContext ctx = dev.open();
             var listener = ctx.connectionManager().listen(new InetSocketAddress(host, port))) {
            if (portFile != null) {
                Files.writeString(portFile, listener.address().getPort() + "\n");
            }
            System.out.println("listening, at most " + maxClients + " clients");

            while (running) {
                // 1. a new client: the listener's poll is also this loop's idle wait
                var request = listener.poll(IDLE);
                if (request != null && clients.size() >= maxClients) {
                    request.reject(("busy: " + clients.size() + " clients").getBytes(StandardCharsets.UTF_8));
                    System.out.println("request rejected: " + clients.size() + " clients already");
                } else if (request != null) {
                    int id = ++served;
                    Arena arena = Arena.ofShared();        // the client's memory, freed with it
                    ProtectionDomain pd = ctx.allocPd();    // a PD per client: its rkey opens only its region
                    CompletionQueue cq = ctx.createCq(16);
                    QueuePair qp = pd.createQp(QpInitAttr.rc(cq));
                    MemorySegment mem = arena.allocate(REGION, 4096);
                    MemoryRegion region = pd.register(mem, Access.LOCAL_WRITE | Access.REMOTE_READ
                            | Access.REMOTE_WRITE | Access.REMOTE_ATOMIC);
                    MemorySegment buf = arena.allocate(2 * MSG, 64);
                    MemoryRegion msgs = pd.register(buf, Access.LOCAL_WRITE);
                    byte[] where = ByteBuffer.allocate(16).putLong(region.address()).putInt(region.rkey())
                            .putInt(REGION).array();
                    try {
                        var conn = request.accept(qp, ConnParam.defaults().withPrivateData(where), Duration.ofSeconds(5));
                        qp.postRecv(recv.reset().wrId(0).sge(0, msgs, 0, MSG));  // a SEND before it waits (RNR retry)
                        clients.put(id, new Client(id, arena, pd, cq, qp, region, msgs, mem, buf, conn));
                        System.out.println("client " + id + " connected");
                    } catch (RdmaException e) {              // the client went away during its handshake
                        System.out.println("client " + id + " failed to connect: " + e.getMessage());
                        qp.close(); region.close(); msgs.close(); cq.close(); pd.close(); arena.close();
                    }
                }

                // 2. each client: its completions, then its connection's events
                for (Iterator<Client> it = clients.values().iterator(); it.hasNext(); ) {
                    Client c = it.next();
                    while (c.cq.poll(wc) > 0) {
                        if (wc.status() != WcStatus.SUCCESS) {
                            continue;                       // WR_FLUSH_ERR once it disconnected: the event follows
                        }
                        if (wc.opcode() == WcOpcode.RECV) {
                            String req = c.buf.getString(0);
                            String reply = req + ": counter " + c.mem.get(ValueLayout.JAVA_LONG, 0)
                                    + ", note '" + c.mem.getString(8) + "'";
                            System.out.println("client " + c.id + ": " + reply);
                            byte[] bytes = reply.getBytes(StandardCharsets.UTF_8);
                            int len = Math.min(bytes.length, MSG - 1);
                            MemorySegment.copy(bytes, 0, c.buf, ValueLayout.JAVA_BYTE, MSG, len);
                            c.buf.set(ValueLayout.JAVA_BYTE, MSG + len, (byte) 0);
                            c.qp.postRecv(recv.reset().wrId(0).sge(0, c.msgs, 0, MSG));
                            int err = c.qp.postSend(send.reset().wrId(1).opcode(WrOpcode.SEND)
                                    .flags(SendFlags.SIGNALED).sge(0, c.msgs, MSG, len + 1));
                            if (err != 0) {                 // only once the QP is in ERROR: the event follows
                                System.out.println("client " + c.id + ": reply not posted, errno " + err);
                            }
                        }
                    }
                    var event = c.conn.pollEvent(Duration.ZERO);
                    if (event == ConnectionManager.Event.DISCONNECTED) {
                        System.out.println("client " + c.id + " departed");
                    } else if (event == ConnectionManager.Event.TIMEWAIT_EXIT) {
                        c.free();                           // its QP, regions, CQ and PD
                        it.remove();
                        System.out.println("client " + c.id + " freed");
                    }
                }
            }

            // 3. shutdown: no new clients, then each client disconnected and freed, then the context
            listener.close();
            System.out.println("stopping: disconnecting the clients left: " + clients.size());
            for (Client c : clients.values()) {
                c.conn.close();
                for (int i = 0; i < 4 && c.conn.pollEvent(Duration.ofSeconds(1)) != ConnectionManager.Event.TIMEWAIT_EXIT; i++) { }
                c.free();
            }
            System.out.println("stopped after " + served + " clients");
        }
    }
}
