package io.jrdma.verbs;

/**
 * Device capability flags ({@code ibv_device_cap_flags}), with libibverbs' values, as
 * {@link DeviceAttr#deviceCapFlags()} reports them. Test with {@link DeviceAttr#has(int)}.
 */
public final class DeviceCap {
    /** The depth of a QP's queues can be changed ({@code IBV_DEVICE_RESIZE_MAX_WR}). */
    public static final int RESIZE_MAX_WR = 1;
    /** Bad P_Key packets are counted ({@code IBV_DEVICE_BAD_PKEY_CNTR}). */
    public static final int BAD_PKEY_CNTR = 1 << 1;
    /** Bad Q_Key packets are counted ({@code IBV_DEVICE_BAD_QKEY_CNTR}). */
    public static final int BAD_QKEY_CNTR = 1 << 2;
    /** Raw packet multicast ({@code IBV_DEVICE_RAW_MULTI}). */
    public static final int RAW_MULTI = 1 << 3;
    /** Automatic path migration ({@code IBV_DEVICE_AUTO_PATH_MIG}). */
    public static final int AUTO_PATH_MIG = 1 << 4;
    /** A QP's port can change in SQD ({@code IBV_DEVICE_CHANGE_PHY_PORT}). */
    public static final int CHANGE_PHY_PORT = 1 << 5;
    /** A UD address handle's port is enforced ({@code IBV_DEVICE_UD_AV_PORT_ENFORCE}). */
    public static final int UD_AV_PORT_ENFORCE = 1 << 6;
    /** The current state may be given to modify ({@code IBV_DEVICE_CURR_QP_STATE_MOD}). */
    public static final int CURR_QP_STATE_MOD = 1 << 7;
    /** A port can be shut down ({@code IBV_DEVICE_SHUTDOWN_PORT}). */
    public static final int SHUTDOWN_PORT = 1 << 8;
    /** Init type ({@code IBV_DEVICE_INIT_TYPE}). */
    public static final int INIT_TYPE = 1 << 9;
    /** {@link AsyncEvent.Type#PORT_ACTIVE} is raised ({@code IBV_DEVICE_PORT_ACTIVE_EVENT}). */
    public static final int PORT_ACTIVE_EVENT = 1 << 10;
    /** The system image GUID is meaningful ({@code IBV_DEVICE_SYS_IMAGE_GUID}). */
    public static final int SYS_IMAGE_GUID = 1 << 11;
    /** An RC responder sends RNR NAKs ({@code IBV_DEVICE_RC_RNR_NAK_GEN}). */
    public static final int RC_RNR_NAK_GEN = 1 << 12;
    /** An SRQ can be resized ({@code IBV_DEVICE_SRQ_RESIZE}, {@link SrqAttr#MAX_WR}). */
    public static final int SRQ_RESIZE = 1 << 13;
    /** A CQ can be re-armed before its event is consumed ({@code IBV_DEVICE_N_NOTIFY_CQ}). */
    public static final int N_NOTIFY_CQ = 1 << 14;
    /** Memory windows ({@code IBV_DEVICE_MEM_WINDOW}); which types: {@link #MEM_WINDOW_TYPE_2A}, {@link #MEM_WINDOW_TYPE_2B}. */
    public static final int MEM_WINDOW = 1 << 17;
    /** UD checksum offload ({@code IBV_DEVICE_UD_IP_CSUM}). */
    public static final int UD_IP_CSUM = 1 << 18;
    /** XRC ({@code IBV_DEVICE_XRC}). */
    public static final int XRC = 1 << 20;
    /** Memory management extensions: fast registration ({@link WrOpcode#REG_MR}), LOCAL_INV, SEND_WITH_INV ({@code IBV_DEVICE_MEM_MGT_EXTENSIONS}). */
    public static final int MEM_MGT_EXTENSIONS = 1 << 21;
    /** Type 2A memory windows: bound to a QP number ({@code IBV_DEVICE_MEM_WINDOW_TYPE_2A}). */
    public static final int MEM_WINDOW_TYPE_2A = 1 << 23;
    /** Type 2B memory windows: bound to a QP number and a PD ({@code IBV_DEVICE_MEM_WINDOW_TYPE_2B}). */
    public static final int MEM_WINDOW_TYPE_2B = 1 << 24;
    /** RC checksum offload ({@code IBV_DEVICE_RC_IP_CSUM}). */
    public static final int RC_IP_CSUM = 1 << 25;
    /** Raw IP checksum offload ({@code IBV_DEVICE_RAW_IP_CSUM}). */
    public static final int RAW_IP_CSUM = 1 << 26;
    /** Managed flow steering ({@code IBV_DEVICE_MANAGED_FLOW_STEERING}). */
    public static final int MANAGED_FLOW_STEERING = 1 << 29;

    private DeviceCap() {
    }
}
