package io.jrdma.engine.shm;

import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.RdmaException.Errno;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Another context (in this process or another) as its peers see it: its control segment mapped
 * here, and the buffers of its regions mapped on first access (each once, by its serial and inode). Shared by
 * the QPs of one context connected to it; unmapped when the last of them lets it go. A buffer its owner freed
 * (closed its memfd) is unmapped when the mappings have grown enough since the last look ({@link #sweep}).
 * Engine thread (or the thread that holds the engine's claim).
 */
final class Peer {
    final int pid;
    final int ctrlFd;
    final MemorySegment ctrl;
    /** the control segment's address here: the data path reaches it through {@link ShmTransport#ALL} */
    final long ctrlAddr;
    /** the QPs of this context that use the peer (their key caches point into its mappings) */
    private ShmQp[] users = new ShmQp[4];
    private int userCount;
    /** the peer process was found gone (its QPs are in ERROR) */
    boolean dead;
    /** the peer process's pidfd (its exit is seen even if the pid is reused), or -1: then kill(pid, 0) is asked */
    final int pidfd;
    /**
     * its engine may sleep on its futex (a DEDICATED context): after a store it must see, a fence and a look at its
     * sleeping flag; an INVOKER context never sleeps, so its peers skip both
     */
    final boolean maySleep;
    /** it reads its partners' own hold words after a membarrier ({@link Ctrl#H_OWN_HOLD}) */
    final boolean ownHold;
    /** the control segment's inode: the context's identity, where its GID's descriptor number may be reused */
    private final long ctrlInode;
    private long[] inodes = new long[8];
    private long[] serials = new long[8];
    private int[] fds = new int[8];
    private MemorySegment[] buffers = new MemorySegment[8];
    private int count;
    /** the mappings' count at which the next new one first looks for buffers gone ({@link #sweep}) */
    private int sweepAt = SWEEP_MIN;
    /** the fewest mappings worth a look for buffers gone */
    static final int SWEEP_MIN = 16;

    Peer(int pid, int ctrlFd) {
        this.pid = pid;
        this.ctrlFd = ctrlFd;
        int fd = Native.openPeerFd(pid, ctrlFd);
        try {
            // the seal first, then the size (a size read before the seal could shrink in between)
            if (!Native.cannotShrink(fd)) { // else the peer could truncate it under this mapping
                throw new RdmaException(Errno.EPROTO, "descriptor " + ctrlFd + " of process " + pid
                        + " is not sealed against shrinking (F_SEAL_SHRINK): not a jrdma shared-memory control segment"
                        + " of this version (update the peer's jrdma)");
            }
            if (Native.size(fd) < Ctrl.SIZE) { // a mapping past the file's end faults (SIGBUS) when touched
                throw new RdmaException(Errno.EPROTO, "descriptor " + ctrlFd + " of process " + pid
                        + " is not a jrdma shared-memory control segment (smaller than " + Ctrl.SIZE + " bytes)");
            }
            ctrlAddr = Native.mmap(fd, Ctrl.SIZE);
            ctrlInode = Native.inode(fd);
        } finally {
            Native.close(fd);
        }
        ctrl = MemorySegment.ofAddress(ctrlAddr).reinterpret(Ctrl.SIZE);
        maySleep = ctrl.get(ValueLayout.JAVA_INT, Ctrl.H_MAY_SLEEP) != 0;
        ownHold = ctrl.get(ValueLayout.JAVA_INT, Ctrl.H_OWN_HOLD) != 0;
        pidfd = pid == Native.getpid() ? -1 : Native.pidfd(pid);
        if (ctrl.get(ValueLayout.JAVA_LONG, Ctrl.H_MAGIC) != Ctrl.MAGIC
                || ctrl.get(ValueLayout.JAVA_INT, Ctrl.H_VERSION) != Ctrl.VERSION
                || ctrl.get(ValueLayout.JAVA_INT, Ctrl.H_PID) != pid) {
            Native.munmap(ctrlAddr, Ctrl.SIZE);
            if (pidfd >= 0) {
                Native.close(pidfd);
            }
            throw new RdmaException(Errno.EPROTO, "descriptor " + ctrlFd + " of process " + pid
                    + " is not a jrdma shared-memory control segment (version " + Ctrl.VERSION + ")");
        }
    }

    void attach(ShmQp qp) {
        if (userCount == users.length) {
            users = java.util.Arrays.copyOf(users, userCount * 2);
        }
        users[userCount++] = qp;
    }

    /** @return true when {@code qp} was the last QP using the peer: it is to be unmapped */
    boolean detach(ShmQp qp) {
        for (int i = 0; i < userCount; i++) {
            if (users[i] == qp) {
                users[i] = users[--userCount];
                users[userCount] = null;
                break;
            }
        }
        return unused();
    }

    /**
     * former partners of this peer whose own hold word is still read after their QP let them go (a hold on memory
     * reached by cross-memory attach: ShmTransport's lingering list); the mapping stays while there are any
     */
    int lingers;

    /** @return true when that was the last reason to keep the peer mapped: it is to be unmapped */
    boolean unlinger() {
        lingers--;
        return unused();
    }

    /** @return true when no QP uses the peer and no former partner's word is read through it */
    private boolean unused() {
        return userCount == 0 && lingers == 0;
    }

    /** @return the buffers mapped here (tests) */
    int mappings() {
        return count;
    }

    /**
     * The peer's buffer with {@code serial} and {@code inode}, mapped here on first use (a few system calls once per
     * buffer, then an array scan). Before a new mapping, once the mappings reached {@link #sweepAt}, unmaps those of
     * buffers their owner freed ({@link #sweep}).
     *
     * @return the mapping, or null when it cannot be mapped (the peer closed it)
     */
    MemorySegment buffer(long inode, long serial, int fd, long size) {
        for (int i = 0; i < count; i++) {
            if (serials[i] == serial && inodes[i] == inode) {
                return buffers[i];
            }
        }
        if (count >= sweepAt) {
            sweep();
            sweepAt = Math.max(SWEEP_MIN, count * 2); // a look costs a few system calls a mapping: once per doubling
        }
        int f;
        try {
            f = Native.openPeerFd(pid, fd);
        } catch (RdmaException e) {
            return null;
        }
        try {
            if (Native.inode(f) != inode) {
                return null; // the descriptor now names another file: the buffer is gone
            }
            // the seal first, then the size: a size read before the seal was seen could shrink in between (the
            // peer truncating and then sealing), leaving the mapping past the file's end (SIGBUS on a touch)
            if (!Native.cannotShrink(f)) {
                return null; // a buffer its owner (or anyone) could truncate under this mapping: not one of jrdma's
            }
            if (size <= 0 || size > Native.size(f)) {
                return null; // the entry says a size its file does not have: a mapping past the end faults (SIGBUS)
            }
            long addr = Native.mmap(f, size);
            if (count == inodes.length) {
                inodes = java.util.Arrays.copyOf(inodes, count * 2);
                serials = java.util.Arrays.copyOf(serials, count * 2);
                fds = java.util.Arrays.copyOf(fds, count * 2);
                buffers = java.util.Arrays.copyOf(buffers, count * 2);
            }
            inodes[count] = inode;
            serials[count] = serial;
            fds[count] = fd;
            buffers[count] = MemorySegment.ofAddress(addr).reinterpret(size);
            return buffers[count++];
        } catch (RdmaException e) {
            return null;
        } finally {
            Native.close(f);
        }
    }

    /**
     * Unmaps the buffers whose owner freed them: the descriptor the peer published for each no longer names its
     * inode (closed, or reused for another file). Each QP using the peer first drops its key cache, which may point
     * into one of them (it maps its entry's buffer again on its next operation). A buffer still open in its owner
     * stays mapped, registered or not. Runs with the engine's claim, as every copy through these mappings does, so
     * none is in progress.
     */
    private void sweep() {
        int kept = 0;
        boolean cachesDropped = false;
        for (int i = 0; i < count; i++) {
            if (open(fds[i], inodes[i])) {
                inodes[kept] = inodes[i];
                serials[kept] = serials[i];
                fds[kept] = fds[i];
                buffers[kept++] = buffers[i];
                continue;
            }
            if (!cachesDropped) { // any QP's cache may point into this one
                for (int u = 0; u < userCount; u++) {
                    users[u].dropKeyCache();
                }
                cachesDropped = true;
            }
            Native.munmap(buffers[i].address(), buffers[i].byteSize());
        }
        for (int i = kept; i < count; i++) {
            buffers[i] = null;
        }
        count = kept;
    }

    /** @return true when the peer's descriptor {@code fd} is still open on the file with {@code inode} */
    private boolean open(int fd, long inode) {
        int f;
        try {
            f = Native.openPeerFd(pid, fd);
        } catch (RuntimeException e) {
            return false;
        }
        try {
            return Native.inode(f) == inode;
        } catch (RuntimeException e) {
            return false;
        } finally {
            Native.close(f);
        }
    }

    /**
     * Control path: whether the peer's GID still names this context: the process lives and its descriptor is still
     * this control segment (a context closed and another opened may get the same descriptor number, and so the
     * same GID).
     */
    boolean stillAt() {
        return !dead && open(ctrlFd, ctrlInode); // the process or its descriptor gone, or another file there now
    }

    /** the peer's attach table mapped read-only here ({@link Ctrl#H_ATTACH_FD}), 0 until first needed */
    private long attachAddr;

    /**
     * @return the address here of the peer's attach table (mapped read-only at first use), or 0 when it published none
     *         or the descriptor it names is not a table only its owner can write (sealed F_SEAL_FUTURE_WRITE, and
     *         against shrinking, at its size or more): a peer's word that names another file is not believed
     */
    long attachTable() {
        if (attachAddr != 0) {
            return attachAddr;
        }
        int fdPlus1 = (int) ShmTransport.INT.getVolatile(ctrl, Ctrl.H_ATTACH_FD);
        if (fdPlus1 <= 0) {
            return 0;
        }
        int fd;
        try {
            fd = Native.openPeerFd(pid, fdPlus1 - 1);
        } catch (RuntimeException gone) {
            return 0;
        }
        try {
            int need = Native.F_SEAL_FUTURE_WRITE | Native.F_SEAL_SHRINK;
            if ((Native.seals(fd) & need) != need || Native.size(fd) < Ctrl.ATTACH_SIZE) {
                return 0;
            }
            long a = Native.mmapReadOnly(fd, Ctrl.ATTACH_SIZE);
            // this context's table, not another's of the same process (the word that names it is peers' to write)
            if (ShmTransport.ALL.get(ValueLayout.JAVA_LONG, a + Ctrl.A_CTRL_INODE) != ctrlInode) {
                Native.munmap(a, Ctrl.ATTACH_SIZE);
                return 0;
            }
            attachAddr = a;
            return a;
        } catch (RuntimeException e) { // a call that failed: no table believed (the request is refused, not thrown)
            return 0;
        } finally {
            Native.close(fd);
        }
    }

    /** Unmaps everything: no QP uses the peer any more. */
    void unmap() {
        if (attachAddr != 0) {
            Native.munmap(attachAddr, Ctrl.ATTACH_SIZE);
            attachAddr = 0;
        }
        for (int i = 0; i < count; i++) {
            Native.munmap(buffers[i].address(), buffers[i].byteSize());
            buffers[i] = null;
        }
        count = 0;
        Native.munmap(ctrlAddr, Ctrl.SIZE);
        if (pidfd >= 0) {
            Native.close(pidfd);
        }
    }
}
