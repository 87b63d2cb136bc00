package io.jrdma.rdmacore;

import io.jrdma.verbs.MwType;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The keys of type 2 binds: kept when the bind completes, given back when it fails (a struct ibv_mw written by hand). */
class PendingBindsTest {
    private static RdmaCoreMw window(Arena a, int key) {
        MemorySegment s = a.allocate(Structs.IBV_MW);
        s.set(JAVA_INT, Structs.MW_RKEY, key);
        return new RdmaCoreMw(null, s, MwType.TYPE_2);
    }

    @Test
    void aFailedBindGivesTheOldKeyBackAndASuccessfulOneKeepsTheNew() {
        try (Arena a = Arena.ofConfined()) {
            PendingBinds p = new PendingBinds();
            RdmaCoreMw ok = window(a, 0x100);
            RdmaCoreMw bad = window(a, 0x200);
            assertFalse(p.any());
            ok.setKey(0x101);
            p.add(7, 1, ok, 0x100, 0x101);
            bad.setKey(0x201);
            p.add(7, 2, bad, 0x200, 0x201);
            assertTrue(p.any());
            p.completed(8, 1, false); // another QP's completion with the same wr_id: not this bind
            assertEquals(0x101, ok.rkey());
            p.completed(7, 1, true);
            assertEquals(0x101, ok.rkey());
            p.completed(7, 2, false); // MW_BIND_ERR or flushed
            assertEquals(0x200, bad.rkey());
            assertFalse(p.any());
            p.completed(7, 1, false); // nothing pending any more: nothing changes
            assertEquals(0x101, ok.rkey());
        }
    }

    @Test
    void aKeyThatMovedOnIsNotPutBackAndTheRingWraps() {
        try (Arena a = Arena.ofConfined()) {
            PendingBinds p = new PendingBinds();
            RdmaCoreMw mw = window(a, 0x300);
            mw.setKey(0x301);
            p.add(1, 9, mw, 0x300, 0x301);
            mw.setKey(0x302); // a later bind already gave it another key
            p.completed(1, 9, false);
            assertEquals(0x302, mw.rkey());
            for (int i = 0; i < PendingBinds.SIZE * 2; i++) { // unsignaled binds never complete: the ring wraps
                p.add(1, 100 + i, mw, 0x302, 0x302);
            }
            assertTrue(p.any());
            for (int i = PendingBinds.SIZE; i < PendingBinds.SIZE * 2; i++) {
                p.completed(1, 100 + i, true);
            }
            assertFalse(p.any(), "the entries the ring wrapped over are gone, the rest completed");
        }
    }
}
