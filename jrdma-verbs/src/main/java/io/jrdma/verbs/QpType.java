package io.jrdma.verbs;

/** Queue pair transport service types. Only RC is implemented in this release. */
public enum QpType {
    /** Reliable connection. */
    RC,
    /** Unreliable connection. */
    UC,
    /** Unreliable datagram. */
    UD
}
