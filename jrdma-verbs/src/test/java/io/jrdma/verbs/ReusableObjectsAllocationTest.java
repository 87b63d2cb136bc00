package io.jrdma.verbs;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.management.ManagementFactory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The data-path objects the new verbs add to stay allocation-free: filling a reused send work request for
 * UD, BIND_MW, REG_MR and LOCAL_INV, a reused completion with the UD fields, a reused asynchronous event,
 * and the next rkey. Measured as the bytes this thread allocates (the best of several rounds, so a JIT or
 * GC thread's doings do not count), as the engine's AllocationTest measures posting and polling.
 */
class ReusableObjectsAllocationTest {
    private static final com.sun.management.ThreadMXBean THREADS =
            (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();

    private final SendWorkRequest wr = new SendWorkRequest();
    private final WorkCompletion wc = new WorkCompletion();
    private final AsyncEvent event = new AsyncEvent();
    private long sink;

    private void round(int i, AddressHandle ah, MemoryWindow mw, MemoryRegion mr, MemorySegment seg, QueuePair qp,
                       SharedReceiveQueue srq) {
        wr.reset().wrId(i).opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED).sge(0, 0x1000L + i, 64, 7).ud(ah, i, 0x1111);
        sink += wr.remoteQpn() + wr.totalLength();
        int key = MemoryWindow.incRkey(i);
        wr.reset().wrId(i).bindMw(mw, key, mr, 0x2000L + i, 4096, Access.REMOTE_READ);
        sink += wr.bindAddr() + wr.mwRkey();
        wr.reset().wrId(i).regMr(mr, seg, key, Access.LOCAL_WRITE);
        sink += wr.regKey();
        wr.reset().wrId(i).localInv(key);
        sink += wr.invalidateRkey();
        wc.set(i, WcStatus.SUCCESS, WcOpcode.RECV, 0, Grh.LENGTH + i, 0, WorkCompletion.GRH, 5, i).ud(0, 0, i & 15, 0);
        sink += wc.srcQp() + wc.sl() + (wc.hasGrh() ? 1 : 0);
        event.setQp(AsyncEvent.Type.QP_LAST_WQE_REACHED, qp);
        event.setSrq(AsyncEvent.Type.SRQ_LIMIT_REACHED, srq);
        event.setPort(AsyncEvent.Type.PORT_ACTIVE, 1);
        sink += event.portNum() + event.type().ordinal() + WcOpcode.of(WrOpcode.of(i & 7)).ordinal();
    }

    @Test
    void fillingReusedObjectsAllocatesNothing() {
        assertTrue(THREADS.isThreadAllocatedMemorySupported() && THREADS.isThreadAllocatedMemoryEnabled(),
                "this JVM cannot measure allocation per thread");
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment seg = arena.allocate(4096);
            AddressHandle ah = new AddressHandle() {
                public ProtectionDomain pd() {
                    return null;
                }

                public AhAttr attr() {
                    return null;
                }

                public void close() {
                }
            };
            for (int i = 0; i < 20_000; i++) { // warm up: JIT compiles the setters
                round(i, ah, null, null, seg, null, null);
            }
            long best = Long.MAX_VALUE;
            for (int r = 0; r < 5; r++) {
                long before = THREADS.getCurrentThreadAllocatedBytes();
                for (int i = 0; i < 10_000; i++) {
                    round(i, ah, null, null, seg, null, null);
                }
                best = Math.min(best, THREADS.getCurrentThreadAllocatedBytes() - before);
            }
            assertEquals(0, best, "bytes allocated by 10,000 rounds of filling the reused objects (sink " + sink + ")");
        }
    }
}
