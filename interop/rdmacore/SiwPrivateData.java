import io.jrdma.verbs.Access;
import io.jrdma.verbs.CompletionQueue;
import io.jrdma.verbs.ConnParam;
import io.jrdma.verbs.ConnectionManager;
import io.jrdma.verbs.DeviceContext;
import io.jrdma.verbs.DeviceOptions;
import io.jrdma.verbs.Mtu;
import io.jrdma.verbs.ProtectionDomain;
import io.jrdma.verbs.QpAttr;
import io.jrdma.verbs.QpInitAttr;
import io.jrdma.verbs.QpState;
import io.jrdma.verbs.QpType;
import io.jrdma.verbs.QueuePair;
import io.jrdma.verbs.Rdma;
import io.jrdma.verbs.RdmaException;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * How much MPA private data a connection between jrdma's soft-iWARP engine and Linux siw carries: run in the interop
 * guests (interop/rdmacore-privdata.sh), one side a listener over the rdma-core provider on siw0 (Linux siw through
 * librdmacm), the other a client on jrdma's own iWARP engine (iwarp_eth1), or the reverse.
 *
 * <pre>
 * server DEVICE ADDRESS PORT N        accepts N connections; replies to each with 8 bytes: the length of the private
 *                                     data it was given and whether every byte was the client's pattern (1) or not (0)
 * client DEVICE ADDRESS PORT LEN...   one connection per LEN bytes of application private data, in order; prints
 *                                     each outcome; exit status 0 when it ran (the lines are the result)
 * </pre>
 * Over the engine a client appends its 16-byte jrdma trailer when the application's data leaves room for it within
 * 256 bytes with MPA's 4 IRD/ORD bytes (docs/iwarp-design.md), so LEN 236 puts 256 bytes on the wire.
 */
public final class SiwPrivateData {
    private static final Duration WAIT = Duration.ofSeconds(30);

    private SiwPrivateData() {
    }

    static byte pattern(int len, int i) {
        return (byte) (len * 31 + i * 7 + 1);
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 4 || !(args[0].equals("server") || args[0].equals("client"))) {
            System.err.println("usage: SiwPrivateData server DEVICE ADDRESS PORT N | client DEVICE ADDRESS PORT LEN...");
            System.exit(2);
        }
        boolean server = args[0].equals("server");
        InetSocketAddress at = new InetSocketAddress(args[2], Integer.parseInt(args[3]));
        List<AutoCloseable> open = new ArrayList<>();
        try (DeviceContext ctx = Rdma.device(args[1]).open(DeviceOptions.defaults())) {
            System.out.println(args[1] + ": " + ctx.device().transport());
            ProtectionDomain pd = ctx.allocPd();
            open.add(pd);
            CompletionQueue cq = ctx.createCq(16);
            open.add(cq);
            ConnectionManager cm = ctx.rdmaCm();
            if (server) {
                serve(ctx, cm, pd, cq, at, Integer.parseInt(args[4]), open);
            } else {
                for (int k = 4; k < args.length; k++) {
                    connect(cm, qp(pd, cq, open), at, Integer.parseInt(args[k]), open);
                }
            }
            for (int i = open.size() - 1; i >= 0; i--) {
                open.get(i).close();
            }
        }
    }

    private static QueuePair qp(ProtectionDomain pd, CompletionQueue cq, List<AutoCloseable> open) {
        QueuePair qp = pd.createQp(new QpInitAttr(QpType.RC, cq, cq, 4, 4, 1, 1, 0, false));
        qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).portNum(1)
                .accessFlags(Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ));
        open.add(qp);
        return qp;
    }

    private static void serve(DeviceContext ctx, ConnectionManager cm, ProtectionDomain pd, CompletionQueue cq,
                              InetSocketAddress at, int n, List<AutoCloseable> open) {
        ConnectionManager.Listener l = cm.listen(at);
        System.out.println("listening on " + l.address());
        System.out.flush();
        for (int c = 0; c < n; c++) {
            ConnectionManager.ConnectRequest r = l.poll(Duration.ofSeconds(240));
            if (r == null) {
                System.out.println("no connection request " + (c + 1) + " of " + n + " within 240 s");
                break;
            }
            byte[] d = r.peerParam().privateData();
            boolean same = true;
            for (int i = 0; i < d.length; i++) {
                same &= d[i] == pattern(d.length, i);
            }
            System.out.println("request " + (c + 1) + " from " + r.peerAddress() + ": " + d.length
                    + " bytes of private data, " + (same ? "the client's pattern" : "NOT the client's pattern"));
            byte[] reply = new byte[8];
            java.nio.ByteBuffer.wrap(reply).putInt(d.length).putInt(same ? 1 : 0);
            try {
                ConnectionManager.Connection conn = r.accept(qp(pd, cq, open), new ConnParam(reply, 0, 0, 7, 7,
                        Mtu.MTU_1024), WAIT);
                open.add(conn);
                System.out.println("accepted");
            } catch (RdmaException e) {
                System.out.println("accept failed: " + e.getMessage());
            }
            System.out.flush();
        }
        l.close();
    }

    private static void connect(ConnectionManager cm, QueuePair qp, InetSocketAddress at, int len,
                                List<AutoCloseable> open) {
        byte[] d = new byte[len];
        for (int i = 0; i < len; i++) {
            d[i] = pattern(len, i);
        }
        String what = "client, " + len + " bytes of private data";
        try {
            ConnectionManager.Connection conn = cm.connect(qp, at, new ConnParam(d, 0, 0, 7, 7, Mtu.MTU_1024), WAIT);
            open.add(conn);
            byte[] reply = conn.peerParam().privateData();
            java.nio.ByteBuffer b = java.nio.ByteBuffer.wrap(reply);
            System.out.println(what + ": CONNECTED; the server saw " + (reply.length >= 8 ? b.getInt() + " bytes, "
                    + (b.getInt() == 1 ? "the pattern" : "NOT the pattern") : "a reply of " + reply.length + " bytes")
                    + "; peer QPN " + conn.peerQpn());
        } catch (RdmaException e) {
            System.out.println(what + ": FAILED: " + e.getMessage());
        }
        System.out.flush();
    }
}
