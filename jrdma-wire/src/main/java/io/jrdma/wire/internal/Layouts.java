package io.jrdma.wire.internal;

import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * The value layouts every codec of this module uses: network byte order (big-endian),
 * unaligned, plus the two little-endian fields on the wire. Public for the module's packages
 * only: {@code io.jrdma.wire.internal} is not exported.
 */
public final class Layouts {
    private Layouts() {
    }

    public static final ValueLayout.OfByte U8 = ValueLayout.JAVA_BYTE;
    public static final ValueLayout.OfShort BE16 =
            ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    public static final ValueLayout.OfInt BE32 =
            ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    public static final ValueLayout.OfLong BE64 =
            ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    /**
     * Little-endian 32 bits: the RoCE ICRC (docs/wire-formats.md D6 step 4) and the MPA CRC field (the CRC32c
     * value, least significant byte first).
     */
    public static final ValueLayout.OfInt LE32 =
            ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    /** Eight bytes read least significant first, for the CRC32c inner loop. */
    public static final ValueLayout.OfLong LE64 =
            ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
}
