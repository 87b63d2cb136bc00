package io.jrdma.tools.oob;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.Arrays;

/** A test's own end of a side channel: plain blocking TCP with a read timeout, bytes in and out as given. */
public final class RawPeer implements AutoCloseable {
    private final Socket s;
    private final InputStream in;
    private final OutputStream out;

    private RawPeer(Socket s) throws IOException {
        this.s = s;
        s.setSoTimeout(10_000);
        s.setTcpNoDelay(true);
        in = s.getInputStream();
        out = s.getOutputStream();
    }

    /** Connects to 127.0.0.1:port, retrying briefly while nobody listens yet. */
    public static RawPeer connect(int port) throws IOException, InterruptedException {
        IOException last = null;
        for (int i = 0; i < 100; i++) {
            try {
                Socket s = new Socket();
                s.connect(new InetSocketAddress(InetAddress.getByName("127.0.0.1"), port), 2000);
                return new RawPeer(s);
            } catch (IOException e) {
                last = e;
                Thread.sleep(50);
            }
        }
        throw last;
    }

    /** Accepts one connection on {@code server} (within 10 s). */
    public static RawPeer accept(ServerSocket server) throws IOException {
        server.setSoTimeout(10_000);
        return new RawPeer(server.accept());
    }

    /** Drops the warning a side prints when another process holds UDP 4791 on this host. */
    public static String withoutPortWarning(String err) {
        return err.lines().filter(l -> !l.contains(": UDP port 4791 is taken on this host"))
                .map(l -> l + "\n").reduce("", String::concat);
    }

    public void write(byte[] b) throws IOException {
        out.write(b);
        out.flush();
    }

    /** Reads exactly {@code n} bytes; fails on end of stream. */
    public byte[] read(int n) throws IOException {
        byte[] b = in.readNBytes(n);
        if (b.length != n) {
            throw new IOException("end of stream after " + b.length + " of " + n + " bytes: " + Arrays.toString(b));
        }
        return b;
    }

    /** @return true once the peer closed (reads until end of stream, within the timeout) */
    public boolean closedByPeer() throws IOException {
        return in.read() < 0;
    }

    @Override
    public void close() throws IOException {
        s.close();
    }
}
