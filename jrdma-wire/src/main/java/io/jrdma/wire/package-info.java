/**
 * RoCEv2 wire codecs.
 *
 * <p>All header codecs are stateless {@code static} methods over a
 * {@link java.lang.foreign.MemorySegment} and a byte offset (the start of that header), using
 * big-endian unaligned value layouts; they never allocate. Field facts come from the IBA
 * Vol 1 chapter 9 (transport layer), the Linux rxe driver ({@code rxe_hdr.h},
 * {@code rxe_opcode.c}, {@code rxe_icrc.c}) and {@code include/rdma/ib_pack.h}, as collected
 * in the repository's {@code docs/wire-formats.md} (sections D1 to D7), and are checked
 * against captures of Linux rdma_rxe traffic.
 */
package io.jrdma.wire;
