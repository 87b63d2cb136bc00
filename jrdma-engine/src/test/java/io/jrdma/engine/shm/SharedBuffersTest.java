package io.jrdma.engine.shm;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

/**
 * {@link SharedBuffers#find}: the buffer that holds a whole range, among several made and let go in any order (its
 * table is a sorted array searched without a lock or an allocation; a skip list before, whose lookup boxed the address
 * in some compilations).
 */
class SharedBuffersTest {

    private static long start(SharedBuffers.Buffer b) {
        return b.address();
    }

    @Test
    void findTellsWhichBufferHoldsARangeAsBuffersComeAndGo() {
        Native.check();
        Arena two = Arena.ofShared();
        try (Arena one = Arena.ofShared(); Arena three = Arena.ofShared()) {
            MemorySegment a = SharedBuffers.allocate(10_000, 64, one);
            MemorySegment b = SharedBuffers.allocate(3 * 4096, 64, two);
            MemorySegment c = SharedBuffers.allocate(100, 8, three);
            for (MemorySegment s : new MemorySegment[] {a, b, c}) {
                SharedBuffers.Buffer f = SharedBuffers.find(s.address(), s.byteSize());
                assertNotNull(f, "the whole of a buffer");
                assertEquals(s.address(), start(f));
                assertEquals(f, SharedBuffers.find(s.address() + s.byteSize() - 1, 1), "its last byte");
                SharedBuffers.Buffer g = SharedBuffers.find(s.address() + 1, 8);
                assertEquals(f, g, "a range inside it");
                long mapped = f.size(); // whole pages
                assertNull(SharedBuffers.find(s.address(), mapped + 1), "a range past its mapping's end");
                assertNull(SharedBuffers.find(s.address() - 1, 2), "a range that starts before it");
            }
            two.close(); // b let go: the others still found, b's range no more
            assertNull(SharedBuffers.find(b.address(), 8), "a buffer let go");
            assertEquals(a.address(), start(SharedBuffers.find(a.address(), 8)));
            assertEquals(c.address(), start(SharedBuffers.find(c.address(), 8)));
            try (Arena four = Arena.ofShared()) {
                MemorySegment d = SharedBuffers.allocate(5000, 64, four);
                assertEquals(d.address(), start(SharedBuffers.find(d.address() + 4999, 1)), "one made after");
            }
        } finally {
            if (two.scope().isAlive()) {
                two.close();
            }
        }
        try (Arena none = Arena.ofConfined()) {
            MemorySegment plain = none.allocate(4096, 4096);
            assertNull(SharedBuffers.find(plain.address(), 8), "memory no buffer holds");
        }
    }
}
