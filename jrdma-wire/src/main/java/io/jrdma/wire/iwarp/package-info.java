/**
 * iWARP wire codecs: MPA Request/Reply frames and FPDU framing (RFC 5044, RFC 6581), DDP
 * segment headers (RFC 5041), RDMAP headers (RFC 5040, RFC 7306), TERMINATE error codes,
 * and CRC32c.
 *
 * <p>As in {@code io.jrdma.wire}, header codecs are stateless {@code static} methods over a
 * {@link java.lang.foreign.MemorySegment} and the byte offset of that header, big-endian,
 * allocation-free. Validation on the receive path never throws: methods return an
 * {@code int} that is negative for an {@link io.jrdma.wire.iwarp.IwarpError}. Checked
 * byte for byte against captures of two Linux 6.1 siw peers (see docs/iwarp-wire.md).
 *
 * <p>Layering of offsets: an FPDU starts with the 2-byte ULPDU_Length
 * ({@link io.jrdma.wire.iwarp.Fpdu}); the DDP header ({@link io.jrdma.wire.iwarp.Ddp}) and
 * the RDMAP control byte ({@link io.jrdma.wire.iwarp.Rdmap}) are addressed by the offset
 * of the DDP header ({@code fpdu + 2}); the RDMAP headers that follow an untagged DDP
 * header ({@link io.jrdma.wire.iwarp.ReadRequest}, {@link io.jrdma.wire.iwarp.Terminate},
 * ...) by their own offset ({@code fpdu + 2 + 18}).
 */
package io.jrdma.wire.iwarp;
