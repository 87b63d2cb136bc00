package io.jrdma.bench.jmh;

import io.jrdma.wire.Bth;
import io.jrdma.wire.Icrc;
import io.jrdma.wire.Reth;

import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;

/**
 * The wire codecs on the data path: BTH + RETH encode and decode (the header of an RDMA WRITE
 * FIRST/ONLY packet) in a direct packet buffer viewed as a {@link MemorySegment}, as the engine
 * uses them; and the ICRC of a 64 B and a 4 KiB packet over IPv4.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"-XX:+UseParallelGC"})
public class WireBench {
    /** Bytes from the BTH through the payload (ICRC excluded). */
    @Param({"64", "4096"})
    public int packet;

    private ByteBuffer buf;
    private MemorySegment seg;
    private final Icrc icrc = new Icrc();
    private int psn;

    @Setup
    public void setup() {
        buf = ByteBuffer.allocateDirect(8192);
        seg = MemorySegment.ofBuffer(buf);
        for (int i = 0; i < 8192; i++) {
            buf.put(i, (byte) (i * 31));
        }
        Bth.write(seg, 0, 0x0A, false, false, 0, Bth.DEFAULT_PKEY, 0x123456, true, 1);
        Reth.write(seg, Bth.LENGTH, 0x7f00_1234_5000L, 0xCAFEBABE, 4096);
    }

    /** Encode BTH + RETH, then decode every field the responder reads. */
    @Benchmark
    public long bthRethEncodeDecode() {
        int p = (psn + 1) & Bth.PSN_MASK;
        psn = p;
        Bth.write(seg, 0, 0x0A, false, false, 0, Bth.DEFAULT_PKEY, 0x123456, true, p);
        Reth.write(seg, Bth.LENGTH, 0x7f00_1234_5000L + p, 0xCAFEBABE, 4096);
        return Bth.opcode(seg, 0) + Bth.destQp(seg, 0) + Bth.psn(seg, 0) + (Bth.ackReq(seg, 0) ? 1 : 0)
                + Bth.pkey(seg, 0) + Bth.padCnt(seg, 0) + Reth.va(seg, Bth.LENGTH) + Reth.rkey(seg, Bth.LENGTH)
                + Reth.dmaLength(seg, Bth.LENGTH);
    }

    /** ICRC over IPv4 of a packet of {@link #packet} bytes (BTH through payload). */
    @Benchmark
    public int icrcIpv4() {
        return icrc.computeIpv4(0x7F000001, 0x7F000001, 0, 49152, 4791, buf, 0, packet);
    }

}
