package io.jrdma.bench;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * The file two benchmark processes map to share memory ({@link MappedPingPong}, {@link SendShape}): the server
 * creates it, the client maps what the server made. The server's file is deleted when the server ends, also by a
 * failure ({@link Result#fail} exits) or a SIGTERM; the server deletes it once more after its run.
 */
final class SharedFile {
    private SharedFile() {
    }

    /** @return {@code /dev/shm/name}, or the temporary directory's {@code name} where there is no {@code /dev/shm} */
    static Path inShm(String name) {
        Path dir = Path.of("/dev/shm");
        return (Files.isDirectory(dir) ? dir : Path.of(System.getProperty("java.io.tmpdir"))).resolve(name);
    }

    /** The server's side: replaces a stale {@code file} with {@code length} zero bytes and maps them into {@code arena}. */
    static MemorySegment create(Path file, long length, Arena arena) throws IOException {
        Files.deleteIfExists(file);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                Files.deleteIfExists(file);
            } catch (IOException ignored) {
                // nothing more to do at exit
            }
        }));
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.READ,
                StandardOpenOption.WRITE)) {
            ch.write(java.nio.ByteBuffer.allocate(1), length - 1); // a new file reads as zeros
            return ch.map(FileChannel.MapMode.READ_WRITE, 0, length, arena);
        }
    }

    /**
     * The client's side: maps the server's {@code file}, or fails saying what to do: start the server first
     * ({@code serverCommand}), or, for a file shorter than {@code length}, {@code shortHint}.
     */
    static MemorySegment open(Path file, long length, Arena arena, String serverCommand, String shortHint) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            if (ch.size() < length) {
                Result.fail(file + " holds " + ch.size() + " bytes, not " + length + ": " + shortHint);
            }
            return ch.map(FileChannel.MapMode.READ_WRITE, 0, length, arena);
        } catch (NoSuchFileException e) {
            Result.fail(file + " does not exist: start the server first (" + serverCommand + ")");
            throw e; // not reached: fail exits
        }
    }
}
