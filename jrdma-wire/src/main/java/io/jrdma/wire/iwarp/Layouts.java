package io.jrdma.wire.iwarp;

import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/** Value layouts of the iWARP codecs: network byte order (big-endian), unaligned. */
final class Layouts {
    private Layouts() {
    }

    static final ValueLayout.OfByte U8 = ValueLayout.JAVA_BYTE;
    static final ValueLayout.OfShort BE16 =
            ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    static final ValueLayout.OfInt BE32 =
            ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    static final ValueLayout.OfLong BE64 =
            ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    /** The MPA CRC field: the CRC32c value with its least significant byte first. */
    static final ValueLayout.OfInt LE32 =
            ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    /** Eight bytes read least significant first, for the CRC32c inner loop. */
    static final ValueLayout.OfLong LE64 =
            ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
}
