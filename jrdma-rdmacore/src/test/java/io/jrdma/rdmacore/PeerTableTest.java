package io.jrdma.rdmacore;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** The QPN to destination QPN table behind {@code src_qp} of RC/UC receives. */
class PeerTableTest {
    @Test
    void setGetReplaceRemoveAndGrowPastItsFirstSize() {
        PeerTable t = new PeerTable();
        assertEquals(-1, t.get(17));
        t.set(17, 0x123456);
        assertEquals(0x123456, t.get(17));
        t.set(17, 0x42);
        assertEquals(0x42, t.get(17), "a second modify with DEST_QPN replaces the entry");
        for (int q = 1000; q < 3000; q++) { // past the first 64 slots: the table grows
            t.set(q, q + 1);
        }
        for (int q = 1000; q < 3000; q++) {
            assertEquals(q + 1, t.get(q));
        }
        t.set(17, -1);
        assertEquals(-1, t.get(17), "a destroyed QP is forgotten");
        assertEquals(1001, t.get(1000));
        t.set(0xFFFFFF, 0); // the largest QPN, and destination QPN 0
        assertEquals(0, t.get(0xFFFFFF));
    }
}
