package io.jrdma.engine.shm;

import io.jrdma.engine.core.Context;
import io.jrdma.verbs.DeviceContext;
import io.jrdma.verbs.DeviceOptions;
import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.ThreadingMode;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The memfds the provider makes (control segments, buffers) are sealed at their size, so no process can truncate one
 * under another's mapping (a touch past a file's end faults, SIGBUS, which would end the JVM); and a peer's file that
 * is not sealed so is never mapped: its control segment is refused with a clear error, its buffer is not reachable.
 */
class ShmSealTest {
    private static final int SEALED = Native.F_SEAL_SHRINK | Native.F_SEAL_GROW | Native.F_SEAL_SEAL;

    /** @return the descriptor number this process holds for {@code file} (from /proc/self/fd) */
    private static int fdOf(Path file) throws IOException {
        try (Stream<Path> fds = Files.list(Path.of("/proc/self/fd"))) {
            return fds.filter(f -> {
                try {
                    return Files.readSymbolicLink(f).equals(file);
                } catch (IOException e) {
                    return false; // a descriptor closed meanwhile
                }
            }).map(f -> Integer.parseInt(f.getFileName().toString())).findFirst().orElseThrow();
        }
    }

    @Test
    void theProvidersMemfdsCannotBeResized() throws IOException {
        int fd = Native.memfd("jrdma-seal-test", 4096);
        try {
            assertEquals(SEALED, Native.seals(fd) & SEALED, "shrink, grow and seal sealed");
            assertTrue(Native.cannotShrink(fd));
            try (RandomAccessFile f = new RandomAccessFile("/proc/self/fd/" + fd, "rw")) {
                assertThrows(IOException.class, () -> f.setLength(0), "a truncation of a sealed memfd");
                assertThrows(IOException.class, () -> f.setLength(8192), "a growth of a sealed memfd");
                assertEquals(4096, f.length());
            }
        } finally {
            Native.close(fd);
        }
    }

    @Test
    void aPeersFileThatCanShrinkIsNeverMapped() throws IOException {
        Path file = Files.createTempFile(Path.of("/dev/shm"), "jrdma-seal-test-", ".bin");
        try (DeviceContext ctx = ShmDevice.INSTANCE.open(DeviceOptions.defaults().withThreadingMode(ThreadingMode.INVOKER));
             RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw");
             Arena arena = Arena.ofConfined()) {
            raf.setLength(Ctrl.SIZE); // the size of a control segment, and a buffer's: only the seal is missing
            int fd = fdOf(file);
            RdmaException e = assertThrows(RdmaException.class, () -> new Peer(Native.getpid(), fd));
            assertEquals(RdmaException.Errno.EPROTO, e.errno());
            assertTrue(e.getMessage().contains("not sealed against shrinking"), e.getMessage());

            // a peer whose control segment is sealed (this context's own): its sealed buffer maps, the file does not
            ShmTransport t = (ShmTransport) ((Context) ctx).engine.transport;
            Peer self = new Peer(Native.getpid(), t.ctrlFd);
            try {
                MemorySegment buf = ctx.allocateBuffer(4096, 4096, arena);
                SharedBuffers.Buffer b = SharedBuffers.find(buf.address(), 4096);
                assertNotNull(b);
                assertNotNull(self.buffer(b.inode(), b.serial(), b.fd(), b.size()), "a buffer of allocateBuffer");
                assertNull(self.buffer(Native.inode(fd), 0, fd, 4096), "a file that can shrink");
            } finally {
                self.unmap();
            }
        } finally {
            Files.deleteIfExists(file);
        }
    }
}
