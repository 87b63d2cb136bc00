package io.jrdma.tools.perf;

import io.jrdma.tools.oob.SideChannel;

/**
 * What perftest's {@code ctx_xchg_data} and {@code ctx_hand_shake} run over ({@code struct
 * perftest_comm}): the TCP socket ({@link Tcp}, perftest without {@code -R}) or an rdma_cm
 * "comm" QP ({@link RdmaCmExchange}, {@code -R}). The order of the messages (the client writes
 * first, the server reads first) is the caller's; this is one message each way at a time.
 */
interface PerftestExchange extends AutoCloseable {
    /** Sends one message whole ({@code ethernet_write_data} / {@code rdma_write_data}). */
    void write(byte[] message, String what);

    /** @return the peer's next message, exactly {@code n} bytes ({@code ethernet_read_data} / {@code rdma_read_data}) */
    byte[] read(int n, String what);

    /** @return the key message for {@code d}: {@code ethernet_write_keys}' text or {@code rdma_write_keys}' struct */
    byte[] encodeKeys(PerftestWire.Dest d);

    /** Parses the peer's key message. */
    PerftestWire.Dest decodeKeys(byte[] m);

    /** @return the length of a key message */
    int keySize();

    /** What {@code ctx_close_connection} does after its last handshake. */
    void finish();

    @Override
    void close();

    /** perftest's TCP side channel: text keys, and "done" at the end. */
    final class Tcp implements PerftestExchange {
        private final SideChannel sc;
        private final SideChannel.Pump pump;

        Tcp(SideChannel sc, SideChannel.Pump pump) {
            this.sc = sc;
            this.pump = pump;
        }

        @Override
        public void write(byte[] message, String what) {
            sc.write(message, what);
        }

        @Override
        public byte[] read(int n, String what) {
            return sc.read(n, what, pump);
        }

        @Override
        public byte[] encodeKeys(PerftestWire.Dest d) {
            return PerftestWire.encode(d);
        }

        @Override
        public PerftestWire.Dest decodeKeys(byte[] m) {
            return PerftestWire.decode(m);
        }

        @Override
        public int keySize() {
            return PerftestWire.KEY_SIZE;
        }

        /**
         * Both sides write "done" with its NUL and close; the peer's "done" (or its close) is awaited for up to
         * 1 s, and no longer once it came: a long-running server is ready for its next client at once.
         */
        @Override
        public void finish() {
            sc.write(PerftestWire.DONE, "\"done\"");
            sc.drain(PerftestWire.DONE.length, 1_000_000_000L);
        }

        @Override
        public void close() {
            sc.close();
        }

        /** @return whether the peer closed the side channel (never blocks) */
        boolean peerClosed() {
            return sc.peerClosed();
        }
    }
}
