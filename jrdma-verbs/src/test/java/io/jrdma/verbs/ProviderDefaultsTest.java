package io.jrdma.verbs;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The provider line: a provider that implements only the verbs it had before UD, UC, SRQ, address handles,
 * memory windows, fast registration, asynchronous events and device attributes (a minimal fake, below)
 * answers each of them with EOPNOTSUPP naming the verb, the provider and the device; and the parts of the
 * new API that need no provider (GRH parsing, initAhFromWc, keys, options, reusable requests and completions).
 */
class ProviderDefaultsTest {
    private static final Gid LOCAL6 = Gid.parse("fe80::1");
    private static final Gid PEER6 = Gid.parse("fe80::2");
    private static final Gid LOCAL4 = Gid.parse("10.0.0.1");
    private static final Gid PEER4 = Gid.parse("10.0.0.2");

    private final FakeContext ctx = new FakeContext();
    private final FakePd pd = new FakePd(ctx);

    private static void assertUnsupported(String verb, Executable call) {
        RdmaException e = assertThrows(RdmaException.class, call, verb);
        assertEquals(RdmaException.Errno.EOPNOTSUPP, e.errno(), e.getMessage());
        assertTrue(e.getMessage().contains(verb), "the message names the verb " + verb + ": " + e.getMessage());
        assertTrue(e.getMessage().contains("provider fake (device fake_lo)"), e.getMessage());
        assertTrue(e.getMessage().contains("queryDevice()"), "the message says what to do: " + e.getMessage());
    }

    @Test
    void everyMissingVerbThrowsEopnotsuppNamingIt() {
        assertUnsupported("DeviceContext.queryDevice (ibv_query_device)", ctx::queryDevice);
        assertUnsupported("DeviceContext.pollAsyncEvent (ibv_get_async_event)", () -> ctx.pollAsyncEvent(new AsyncEvent()));
        assertUnsupported("DeviceContext.awaitAsyncEvent (ibv_get_async_event)",
                () -> ctx.awaitAsyncEvent(new AsyncEvent(), Duration.ofMillis(1)));
        assertUnsupported("ProtectionDomain.createAh (ibv_create_ah)", () -> pd.createAh(AhAttr.of(PEER6, 0)));
        assertUnsupported("ProtectionDomain.createSrq (ibv_create_srq)", () -> pd.createSrq(SrqInitAttr.of(16, 1)));
        assertUnsupported("ProtectionDomain.allocMw (ibv_alloc_mw, TYPE_1)", () -> pd.allocMw(MwType.TYPE_1));
        assertUnsupported("ProtectionDomain.allocMw (ibv_alloc_mw, TYPE_2)", () -> pd.allocMw(MwType.TYPE_2));
        assertUnsupported("ProtectionDomain.allocMr (ib_alloc_mr, fast registration)", () -> pd.allocMr(4096));
    }

    @Test
    void createAhFromWcParsesTheGrhThenAsksTheProvider() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment grh = ipv6Grh(arena, PEER6, LOCAL6, 0x12, 0xABCDE, 3);
            WorkCompletion wc = udRecv(WorkCompletion.GRH);
            assertUnsupported("ProtectionDomain.createAh (ibv_create_ah)", () -> pd.createAhFromWc(1, wc, grh));
        }
    }

    @Test
    void postingVerbsReturnAnErrnoAndTheSrqOfAnOldProviderIsNone() {
        FakeQp qp = new FakeQp(pd);
        assertEquals(RdmaException.Errno.EOPNOTSUPP.value(), qp.bindMw(null, new MwBind()));
        assertNull(qp.srq());
    }

    @Test
    void initAhFromWcAnswersTheSenderOverIpv6() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment grh = ipv6Grh(arena, PEER6, LOCAL6, 0x12, 0xABCDE, 3);
            Grh h = Grh.parse(grh);
            assertEquals(new Grh(PEER6, LOCAL6, 0x12, 0xABCDE, 3, false), h);
            WorkCompletion wc = udRecv(WorkCompletion.GRH).ud(0, 0, 5, 0);
            AhAttr ah = ctx.initAhFromWc(1, wc, grh);
            assertEquals(new AhAttr(PEER6, 1, 0xFF, 0x12, 0xABCDE, 5, 1, DeviceOptions.ROCE_V2_PORT), ah);
            assertEquals(AddressVector.of(PEER6, 1).withUdpPort(4791).dgid(), ah.toAddressVector().dgid());
        }
    }

    @Test
    void initAhFromWcAnswersTheSenderOverIpv4() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment grh = arena.allocate(Grh.LENGTH + 8);
            grh.fill((byte) 0x33); // bytes 0..19 are undefined over IPv4: garbage must not matter (not version 6)
            grh.set(ValueLayout.JAVA_BYTE, 20, (byte) 0x45);
            grh.set(ValueLayout.JAVA_BYTE, 21, (byte) 0x60);
            grh.set(ValueLayout.JAVA_BYTE, 28, (byte) 61);
            MemorySegment.copy(PEER4.raw(), 12, grh, ValueLayout.JAVA_BYTE, 32, 4);
            MemorySegment.copy(LOCAL4.raw(), 12, grh, ValueLayout.JAVA_BYTE, 36, 4);
            assertEquals(new Grh(PEER4, LOCAL4, 0x60, 0, 61, true), Grh.parse(grh));
            AhAttr ah = ctx.initAhFromWc(1, udRecv(WorkCompletion.GRH), grh);
            assertEquals(new AhAttr(PEER4, 2, 0xFF, 0x60, 0, 0, 1, 4791), ah);
        }
    }

    @Test
    void initAhFromWcRefusesWhatCannotBeAnswered() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment grh = ipv6Grh(arena, PEER6, LOCAL6, 0, 0, 64);
            RdmaException noFlag = assertThrows(RdmaException.class, () -> ctx.initAhFromWc(1, udRecv(0), grh));
            assertEquals(RdmaException.Errno.EINVAL, noFlag.errno());
            assertTrue(noFlag.getMessage().contains("no GRH flag"), noFlag.getMessage());

            MemorySegment other = ipv6Grh(arena, PEER6, Gid.parse("fe80::99"), 0, 0, 64);
            RdmaException notMine = assertThrows(RdmaException.class,
                    () -> ctx.initAhFromWc(1, udRecv(WorkCompletion.GRH), other));
            assertEquals(RdmaException.Errno.ENOENT, notMine.errno());
            assertTrue(notMine.getMessage().contains("fe80:0000:0000:0000:0000:0000:0000:0099"), notMine.getMessage());

            RdmaException zeros = assertThrows(RdmaException.class, () -> Grh.parse(arena.allocate(40)));
            assertEquals(RdmaException.Errno.EINVAL, zeros.errno());
            assertTrue(zeros.getMessage().contains("hold no GRH"), zeros.getMessage());
            RdmaException shortBuf = assertThrows(RdmaException.class, () -> Grh.parse(grh.asSlice(0, 39)));
            assertTrue(shortBuf.getMessage().contains("a GRH has 40 bytes, the buffer has 39"), shortBuf.getMessage());
        }
    }

    @Test
    void incRkeyChangesOnlyTheKeyByteAndWraps() {
        assertEquals(0x1234_5601, MemoryWindow.incRkey(0x1234_5600));
        assertEquals(0x1234_5600, MemoryWindow.incRkey(0x1234_56FF));
        assertEquals(0xFFFF_FF00, MemoryWindow.incRkey(0xFFFF_FFFF));
        int k = 0xABCD_EF10;
        for (int i = 0; i < 255; i++) {
            int next = MemoryWindow.incRkey(k);
            assertEquals(k & 0xFFFF_FF00, next & 0xFFFF_FF00);
            assertTrue((next & 0xFF) != (k & 0xFF));
            k = next;
        }
    }

    record ShmOptions(long ringBytes) implements ProviderOptions {
    }

    record OtherOptions(int x) implements ProviderOptions {
    }

    @Test
    void providerOptionsAreTypedAndReplacedByClass() {
        DeviceOptions d = DeviceOptions.defaults();
        assertTrue(d.provider(ShmOptions.class).isEmpty());
        DeviceOptions a = d.with(new ShmOptions(1 << 20)).with(new OtherOptions(7)).with(new ShmOptions(4096));
        assertEquals(new ShmOptions(4096), a.provider(ShmOptions.class).orElseThrow());
        assertEquals(new OtherOptions(7), a.provider(OtherOptions.class).orElseThrow());
        assertEquals(2, a.providerOptions().size());
        DeviceOptions b = a.withThreadingMode(ThreadingMode.INVOKER).withIdleStrategy(IdleStrategy.SPIN);
        assertEquals(a.providerOptions(), b.providerOptions(), "every with* keeps the provider options");
        RdmaException twice = assertThrows(RdmaException.class, () -> new DeviceOptions(ThreadingMode.DEDICATED,
                IdleStrategy.PARK, List.of(new OtherOptions(1), new OtherOptions(2))));
        assertEquals(RdmaException.Errno.EINVAL, twice.errno());
    }

    @Test
    void qpInitAttrKeepsItsOldShapeAndCarriesAnSrq() {
        FakeCq cq = new FakeCq();
        QpInitAttr old = new QpInitAttr(QpType.RC, cq, cq, 8, 8, 1, 1, 0, false);
        assertNull(old.srq());
        SharedReceiveQueue srq = new SharedReceiveQueue() {
            public ProtectionDomain pd() {
                return pd;
            }

            public void modify(SrqAttr attr, int mask) {
            }

            public SrqAttr query() {
                return new SrqAttr(1, 1, 0);
            }

            public int postRecv(RecvWorkRequest wr) {
                return 0;
            }

            public void close() {
            }
        };
        QpInitAttr ud = QpInitAttr.ud(cq).withSrq(srq).withDepth(4, 0).withSqSigAll(true).withCqs(cq, cq);
        assertEquals(QpType.UD, ud.type());
        assertSame(srq, ud.srq(), "every with* keeps the SRQ");
        assertEquals(QpType.UC, QpInitAttr.uc(cq).type());
        assertEquals(QpType.RC, QpInitAttr.rc(cq).type());
    }

    @Test
    void qkeyIsAMaskedAttribute() {
        QpAttr a = new QpAttr().state(QpState.INIT).pkeyIndex(0).portNum(1).qkey(0x1111_1111);
        assertTrue(a.has(QpAttr.STATE | QpAttr.PKEY_INDEX | QpAttr.PORT | QpAttr.QKEY));
        assertFalse(a.has(QpAttr.ACCESS_FLAGS));
        assertEquals(0x1111_1111, a.qkey());
        assertEquals(1 << 6, QpAttr.QKEY, "IBV_QP_QKEY");
    }

    @Test
    void resetClearsTheUdBindAndRegistrationFields() {
        try (Arena arena = Arena.ofConfined()) {
            SendWorkRequest wr = new SendWorkRequest();
            wr.ud(null, 0x1ABCDEF, 0x8000_0001);
            assertEquals(0xABCDEF, wr.remoteQpn(), "a QPN has 24 bits");
            wr.bindMw(null, 0x101, null, 64, 128, Access.REMOTE_READ);
            assertEquals(WrOpcode.BIND_MW, wr.opcode());
            wr.regMr(null, arena.allocate(64), 0x202, Access.LOCAL_WRITE);
            assertEquals(WrOpcode.REG_MR, wr.opcode());
            wr.localInv(0x303);
            assertEquals(WrOpcode.LOCAL_INV, wr.opcode());
            assertEquals(0x303, wr.invalidateRkey());
            wr.reset();
            assertEquals(WrOpcode.SEND, wr.opcode());
            assertEquals(0, wr.remoteQpn() | wr.remoteQkey() | wr.mwRkey() | wr.bindAccess() | wr.regKey() | wr.regAccess()
                    | wr.invalidateRkey());
            assertEquals(0, wr.bindAddr() | wr.bindLength());
            assertNull(wr.ah());
            assertNull(wr.mw());
            assertNull(wr.bindMr());
            assertNull(wr.regMr());
            assertNull(wr.regSegment());
        }
    }

    @Test
    void aReusedCompletionLosesTheUdFieldsOfTheLastOne() {
        WorkCompletion wc = udRecv(WorkCompletion.GRH).ud(3, 0x11, 7, 2);
        assertTrue(wc.hasGrh());
        assertEquals(3, wc.pkeyIndex());
        assertEquals(0x11, wc.slid());
        assertEquals(7, wc.sl());
        assertEquals(2, wc.dlidPathBits());
        wc.set(1, WcStatus.SUCCESS, WcOpcode.SEND, 0, 0, 0, 0, 5, 0);
        assertFalse(wc.hasGrh());
        assertEquals(0, wc.pkeyIndex() | wc.slid() | wc.sl() | wc.dlidPathBits());
    }

    @Test
    void everyWorkRequestOpcodeHasItsCompletionOpcode() {
        assertEquals(WcOpcode.LOCAL_INV, WcOpcode.of(WrOpcode.LOCAL_INV));
        assertEquals(WcOpcode.BIND_MW, WcOpcode.of(WrOpcode.BIND_MW));
        assertEquals(WcOpcode.REG_MR, WcOpcode.of(WrOpcode.REG_MR));
        for (WrOpcode op : WrOpcode.values()) {
            assertEquals(op.isLocal(), op == WrOpcode.LOCAL_INV || op == WrOpcode.BIND_MW || op == WrOpcode.REG_MR, op.name());
            if (op.isLocal()) {
                assertFalse(op.consumesRecv() || op.isReadOrAtomic() || op.hasImm(), op.name());
            }
        }
        // the values before the new ones keep their ordinals (providers store them)
        assertEquals(7, WrOpcode.SEND_WITH_INV.ordinal());
        assertEquals(8, WcOpcode.RECV_RDMA_WITH_IMM.ordinal());
        assertEquals(6, WcStatus.MW_BIND_ERR.ordinal(), "IBV_WC_MW_BIND_ERR");
        assertEquals(21, WcStatus.GENERAL_ERR.ordinal(), "IBV_WC_GENERAL_ERR");
        assertEquals(22, WcStatus.TM_ERR.ordinal(), "IBV_WC_TM_ERR");
    }

    @Test
    void asyncEventsNameTheirObjectAndRefuseAnotherKind() {
        FakeQp qp = new FakeQp(pd);
        AsyncEvent e = new AsyncEvent();
        assertNull(e.type());
        e.setQp(AsyncEvent.Type.QP_LAST_WQE_REACHED, qp);
        assertSame(qp, e.queuePair());
        e.setPort(AsyncEvent.Type.PORT_ACTIVE, 1);
        assertNull(e.queuePair(), "a reused event forgets the last object");
        assertEquals(1, e.portNum());
        assertEquals(AsyncEvent.Element.DEVICE, AsyncEvent.Type.DEVICE_FATAL.element());
        IllegalArgumentException wrong = assertThrows(IllegalArgumentException.class,
                () -> e.setQp(AsyncEvent.Type.SRQ_LIMIT_REACHED, qp));
        assertTrue(wrong.getMessage().contains("SRQ_LIMIT_REACHED concerns a SRQ"), wrong.getMessage());
        assertEquals(15, AsyncEvent.Type.SRQ_LIMIT_REACHED.ordinal(), "IBV_EVENT_SRQ_LIMIT_REACHED");
        assertEquals(19, AsyncEvent.Type.WQ_FATAL.ordinal(), "IBV_EVENT_WQ_FATAL");
    }

    @Test
    void attributesAreValidated() {
        assertThrows(RdmaException.class, () -> new SrqInitAttr(0, 1, 0));
        assertThrows(RdmaException.class, () -> new SrqInitAttr(8, 1, 9));
        assertThrows(RdmaException.class, () -> new SrqAttr(-1, 0, 0));
        assertEquals(5, SrqAttr.limit(5).srqLimit());
        RdmaException flow = assertThrows(RdmaException.class, () -> new AhAttr(PEER6, 0, 64, 0, 0x100000, 0, 1, 4791));
        assertTrue(flow.getMessage().contains("flow label must be 0..1048575"), flow.getMessage());
        assertThrows(RdmaException.class, () -> new AhAttr(null, 0, 64, 0, 0, 0, 1, 4791));
        assertThrows(RdmaException.class, () -> AhAttr.of(PEER6, 0).withUdpPort(0));
        assertEquals(AhAttr.of(PEER6, 2), AhAttr.of(AddressVector.of(PEER6, 2)));
    }

    @Test
    void deviceAttributesAnswerWhatIsSupported() {
        DeviceAttr none = attr(0, 0, 0, 0, Set.of(QpType.RC));
        assertFalse(none.supportsMw(MwType.TYPE_1));
        assertFalse(none.supportsSrq());
        assertFalse(none.supports(QpType.UD));
        assertTrue(none.supports(QpType.RC));
        DeviceAttr all = attr(DeviceCap.MEM_WINDOW | DeviceCap.MEM_WINDOW_TYPE_2B, 16, 16, 16,
                Set.of(QpType.RC, QpType.UC, QpType.UD));
        assertTrue(all.supportsMw(MwType.TYPE_2));
        assertTrue(all.supportsSrq());
        assertTrue(all.supports(QpType.UD));
        DeviceAttr type1 = attr(DeviceCap.MEM_WINDOW, 16, 0, 0, Set.of(QpType.UD));
        assertTrue(type1.supportsMw(MwType.TYPE_1));
        assertFalse(type1.supportsMw(MwType.TYPE_2));
        assertFalse(type1.supports(QpType.UD), "UD without address handles");
    }

    private static DeviceAttr attr(int caps, int maxMw, int maxAh, int maxSrq, Set<QpType> types) {
        return attr(caps, maxMw, maxAh, maxSrq, types, 1);
    }

    private static DeviceAttr attr(int caps, int maxMw, int maxAh, int maxSrq, Set<QpType> types, int ports) {
        return new DeviceAttr("0.1", 0, 0, 1L << 40, 4096, 0, 0, 0, 1024, 4096, caps, 4, 4, 1024, 1 << 22, 1024,
                1024, 16, 1024, 16, DeviceAttr.AtomicCap.HCA, maxMw, maxAh, maxSrq, 4096, 4, 1, ports, types);
    }

    // ------------------------------------------------------------------ ports

    private static void assertNoSuchPort(int port, int count, Executable call) {
        RdmaException e = assertThrows(RdmaException.class, call, "port " + port);
        assertEquals(RdmaException.Errno.EINVAL, e.errno(), e.getMessage());
        assertEquals("EINVAL: port " + port + " of fake_lo does not exist: valid ports are 1.." + count + " (phys_port_cnt "
                + count + ")", e.getMessage());
    }

    @Test
    void perPortVerbsAnswerPort1WithTheNoArgumentFormsAndRefuseOtherPortsNamingTheRange() {
        // the provider reports no device attributes: one port, as jrdma's software devices
        assertEquals(1, ctx.portCount());
        assertEquals(ctx.queryPort(), ctx.queryPort(1));
        for (int i = 0; i < ctx.device().gids().size(); i++) {
            assertEquals(ctx.gid(i), ctx.gid(1, i));
        }
        assertEquals(ctx.gidIndexOf(LOCAL4), ctx.gidIndexOf(1, LOCAL4));
        assertEquals(2, ctx.gidIndexOf(1, LOCAL4));
        assertEquals(-1, ctx.gidIndexOf(1, PEER4));
        for (int port : new int[] {0, -1, 2, 255, Integer.MIN_VALUE}) {
            assertNoSuchPort(port, 1, () -> ctx.queryPort(port));
            assertNoSuchPort(port, 1, () -> ctx.gid(port, 0));
            assertNoSuchPort(port, 1, () -> ctx.gidIndexOf(port, LOCAL4));
        }
        // a provider that reports one port in queryDevice: the same
        FakeContext one = new FakeContext(attr(0, 0, 0, 0, Set.of(QpType.RC), 1));
        assertEquals(1, one.portCount());
        assertEquals(one.queryPort(), one.queryPort(1));
        assertNoSuchPort(2, 1, () -> one.queryPort(2));
    }

    @Test
    void aDeviceWithMorePortsThanTheProviderAnswersSaysSoAndStillNamesTheRange() {
        FakeContext two = new FakeContext(attr(0, 0, 0, 0, Set.of(QpType.RC), 2));
        assertEquals(2, two.portCount());
        assertEquals(two.queryPort(), two.queryPort(1));
        assertEquals(two.gid(0), two.gid(1, 0));
        RdmaException e = assertThrows(RdmaException.class, () -> two.queryPort(2));
        assertEquals(RdmaException.Errno.EOPNOTSUPP, e.errno(), e.getMessage());
        assertTrue(e.getMessage().contains("queryPort of port 2 of fake_lo")
                && e.getMessage().contains("answers port 1 only, though the device has 2 ports"), e.getMessage());
        e = assertThrows(RdmaException.class, () -> two.gid(2, 0));
        assertEquals(RdmaException.Errno.EOPNOTSUPP, e.errno(), e.getMessage());
        e = assertThrows(RdmaException.class, () -> two.gidIndexOf(2, LOCAL4));
        assertEquals(RdmaException.Errno.EOPNOTSUPP, e.errno(), e.getMessage());
        assertNoSuchPort(3, 2, () -> two.queryPort(3));
        assertNoSuchPort(0, 2, () -> two.gid(0, 0));
    }

    @Test
    void initAhFromWcSearchesTheReceivingPortsTableAndRefusesAPortTheDeviceLacks() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment grh = ipv6Grh(arena, PEER6, LOCAL6, 0, 0, 64);
            assertNoSuchPort(2, 1, () -> ctx.initAhFromWc(2, udRecv(WorkCompletion.GRH), grh));
            assertEquals(1, ctx.initAhFromWc(1, udRecv(WorkCompletion.GRH), grh).portNum());
        }
    }

    @Test
    void aResolvedAddressIsOnPort1UnlessItSaysOtherwise() {
        ResolvedAddress one = new ResolvedAddress(null, LOCAL4, 2);
        assertEquals(1, one.portNum());
        assertEquals(2, new ResolvedAddress(null, LOCAL4, 0, 2).portNum());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> new ResolvedAddress(null, LOCAL4, 0, 0));
        assertTrue(e.getMessage().contains("ports are numbered from 1"), e.getMessage());
    }

    // ------------------------------------------------------------------ helpers and the fake provider

    private static WorkCompletion udRecv(int flags) {
        return new WorkCompletion().set(9, WcStatus.SUCCESS, WcOpcode.RECV, 0, Grh.LENGTH + 8, 0, flags, 0x12, 0x34);
    }

    private static MemorySegment ipv6Grh(Arena arena, Gid src, Gid dst, int tclass, int flow, int hops) {
        MemorySegment g = arena.allocate(Grh.LENGTH + 8);
        g.set(ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN), 0, (6 << 28) | (tclass << 20) | flow);
        g.set(ValueLayout.JAVA_BYTE, 6, (byte) 17);
        g.set(ValueLayout.JAVA_BYTE, 7, (byte) hops);
        MemorySegment.copy(src.raw(), 0, g, ValueLayout.JAVA_BYTE, 8, 16);
        MemorySegment.copy(dst.raw(), 0, g, ValueLayout.JAVA_BYTE, 24, 16);
        return g;
    }

    /** A device of the fake provider: only what the verbs API asked of providers before this part of it. */
    private static final class FakeDevice implements Device {
        public String name() {
            return "fake_lo";
        }

        public String provider() {
            return "fake";
        }

        public Transport transport() {
            return Transport.ROCE_V2;
        }

        public String netdev() {
            return "lo";
        }

        public List<Gid> gids() {
            return List.of(Gid.parse("fe80::5"), LOCAL6, LOCAL4);
        }

        public boolean isUp() {
            return true;
        }

        public DeviceContext open(DeviceOptions options) {
            return new FakeContext();
        }
    }

    private static final class FakeContext implements DeviceContext {
        private final FakeDevice device = new FakeDevice();
        /** What queryDevice answers; null: EOPNOTSUPP (the default). */
        private final DeviceAttr reported;

        FakeContext() {
            this(null);
        }

        FakeContext(DeviceAttr reported) {
            this.reported = reported;
        }

        @Override
        public DeviceAttr queryDevice() {
            return reported == null ? DeviceContext.super.queryDevice() : reported;
        }

        public Device device() {
            return device;
        }

        public DeviceOptions options() {
            return DeviceOptions.defaults();
        }

        public PortAttr queryPort() {
            return new PortAttr(PortAttr.PortState.ACTIVE, Mtu.MTU_4096, Mtu.MTU_4096, device.gids(), 4791, "Ethernet");
        }

        public Gid gid(int index) {
            return device.gids().get(index);
        }

        public int gidIndexOf(Gid gid) {
            return device.gids().indexOf(gid);
        }

        public ProtectionDomain allocPd() {
            return new FakePd(this);
        }

        public CompletionChannel createCompletionChannel() {
            throw new UnsupportedOperationException();
        }

        public CompletionQueue createCq(int cqe, CompletionChannel channel) {
            return new FakeCq();
        }

        public int progress() {
            return 0;
        }

        public Map<String, Long> counters() {
            return Map.of();
        }

        public ConnectionManager connectionManager() {
            throw new UnsupportedOperationException();
        }

        public void close() {
        }
    }

    private record FakePd(DeviceContext context) implements ProtectionDomain {
        public MemoryRegion register(MemorySegment segment, int access) {
            throw new UnsupportedOperationException();
        }

        public QueuePair createQp(QpInitAttr attr) {
            throw new UnsupportedOperationException();
        }

        public void close() {
        }
    }

    private static final class FakeCq implements CompletionQueue {
        public int capacity() {
            return 1;
        }

        public int poll(WorkCompletion[] wcs) {
            return 0;
        }

        public int poll(WorkCompletion wc) {
            return 0;
        }

        public void requestNotify(boolean solicitedOnly) {
        }

        public CompletionChannel channel() {
            return null;
        }

        public void close() {
        }
    }

    private record FakeQp(ProtectionDomain pd) implements QueuePair {
        public int qpn() {
            return 0x11;
        }

        public QpType type() {
            return QpType.RC;
        }

        public QpState state() {
            return QpState.RESET;
        }

        public CompletionQueue sendCq() {
            return null;
        }

        public CompletionQueue recvCq() {
            return null;
        }

        public void modify(QpAttr attr) {
        }

        public QpAttr query() {
            return new QpAttr();
        }

        public int postSend(SendWorkRequest wr) {
            return 0;
        }

        public int postRecv(RecvWorkRequest wr) {
            return 0;
        }

        public void close() {
        }
    }
}
