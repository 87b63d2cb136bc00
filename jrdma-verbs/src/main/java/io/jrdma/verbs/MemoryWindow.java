package io.jrdma.verbs;

/**
 * A memory window ({@code ibv_mw}): a remote key for a range of a memory region, bound and re-bound
 * through the send queue without re-registering the region. Made by {@link ProtectionDomain#allocMw}.
 *
 * <p>Each bind gives the window a new rkey whose low byte (the "key" part, IBA 10.6.7.1) differs from
 * the last one, so a peer holding an old rkey is refused with {@link WcStatus#REM_ACCESS_ERR}. A type 1
 * bind ({@link QueuePair#bindMw}) picks the new key itself ({@link #incRkey(int)} of the current one) and
 * {@link #rkey()} returns it at once, as {@code ibv_bind_mw} updates {@code mw->rkey}; a type 2 bind
 * ({@link WrOpcode#BIND_MW}) takes the new key from the work request, whose upper 24 bits must be the
 * window's (use {@code incRkey(mw.rkey())}). A bind completes with {@link WcStatus#MW_BIND_ERR} when the
 * region lacks {@link Access#MW_BIND}.
 */
public interface MemoryWindow extends AutoCloseable {
    /** {@return the protection domain it was allocated in} */
    ProtectionDomain pd();

    /** {@return its type} */
    MwType type();

    /** {@return the current remote key (changes on each bind; valid while bound and not invalidated)} */
    int rkey();

    /**
     * {@return {@code rkey} with its low 8 bits (the key part) incremented, wrapping at 256, as libibverbs'
     * {@code ibv_inc_rkey}: the key for a window's or fast-registration region's next bind or registration}
     *
     * @param rkey the current key
     */
    static int incRkey(int rkey) {
        return (rkey & 0xFFFF_FF00) | ((rkey + 1) & 0xFF);
    }

    /**
     * Deallocates the window ({@code ibv_dealloc_mw}): its rkey stops working at once.
     *
     * @throws RdmaException EINVAL if it is already closed
     */
    @Override
    void close();
}
