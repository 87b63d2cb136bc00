package io.jrdma.wire;

import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/** The value layouts shared by the codecs: network byte order (big-endian), unaligned. */
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
    /** The ICRC is the one little-endian field on the wire (spec D6 step 4). */
    static final ValueLayout.OfInt LE32 =
            ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
}
