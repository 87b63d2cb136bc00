package io.jrdma.wire.iwarp;

/**
 * Why a frame was rejected, with the TERMINATE error (layer / error type / error code) a
 * receiver would report for it.
 *
 * <p>The validating methods of this package do not throw on malformed input: they return an
 * {@code int} that is negative for an error, namely {@code -error.code()}; {@link #of(int)}
 * turns it back into the constant. The framing methods return a positive length on
 * success and 0 when more bytes are needed; the {@code check} methods return 0 or a header
 * length on success.
 */
public enum IwarpError {
    /** The 16 bytes at the start of a connection are neither MPA key. */
    MPA_BAD_KEY(1, "not an MPA Request/Reply frame: the 16-byte key is wrong",
            Terminate.LAYER_LLP, Terminate.LLP_ETYPE_MPA, Terminate.LLP_INVALID_REQUEST_REPLY),
    /** A Reply key where a Request was expected, or the reverse. */
    MPA_WRONG_KEY(2, "MPA key of the other frame type (Request instead of Reply or vice versa)",
            Terminate.LAYER_LLP, Terminate.LLP_ETYPE_MPA, Terminate.LLP_INVALID_REQUEST_REPLY),
    /** The Rev field is neither 1 (RFC 5044) nor 2 (RFC 6581). */
    MPA_BAD_REVISION(3, "MPA revision is not 1 or 2",
            Terminate.LAYER_LLP, Terminate.LLP_ETYPE_MPA, Terminate.LLP_INVALID_REQUEST_REPLY),
    /** The M bit asks for markers, which jrdma never uses (and Linux siw does not implement). */
    MPA_MARKERS_UNSUPPORTED(4, "MPA markers requested; markers are not supported",
            Terminate.LAYER_LLP, Terminate.LLP_ETYPE_MPA, Terminate.LLP_INVALID_REQUEST_REPLY),
    /** PD_Length is above the RFC 5044 limit of 512. */
    MPA_PRIVATE_DATA_TOO_LONG(5, "MPA private data longer than 512 bytes",
            Terminate.LAYER_LLP, Terminate.LLP_ETYPE_MPA, Terminate.LLP_INVALID_REQUEST_REPLY),
    /** Revision 2 without the 4 bytes of IRD/ORD (RFC 6581) at the start of the private data. */
    MPA_ENHANCED_DATA_MISSING(6, "MPA revision 2 frame with less than 4 bytes of private data"
            + " (no IRD/ORD)",
            Terminate.LAYER_LLP, Terminate.LLP_ETYPE_MPA, Terminate.LLP_INVALID_REQUEST_REPLY),
    /** The buffer ends before the Request/Reply frame does. */
    MPA_FRAME_TRUNCATED(7, "MPA Request/Reply frame truncated",
            Terminate.LAYER_LLP, Terminate.LLP_ETYPE_MPA, Terminate.LLP_INVALID_REQUEST_REPLY),
    /** The buffer ends before the FPDU its ULPDU_Length announces. */
    FPDU_TRUNCATED(8, "FPDU truncated: fewer bytes than ULPDU_Length + pad + CRC",
            Terminate.LAYER_LLP, Terminate.LLP_ETYPE_MPA, Terminate.LLP_ULPDU_LENGTH),
    /** ULPDU_Length is smaller than the DDP/RDMAP headers the control bytes announce. */
    ULPDU_TOO_SHORT(9, "ULPDU_Length smaller than the DDP/RDMAP header it must contain",
            Terminate.LAYER_LLP, Terminate.LLP_ETYPE_MPA, Terminate.LLP_ULPDU_LENGTH),
    /** ULPDU_Length is larger than the receiver's maximum (MULPDU). */
    ULPDU_TOO_LONG(10, "ULPDU_Length larger than the maximum ULPDU size",
            Terminate.LAYER_LLP, Terminate.LLP_ETYPE_MPA, Terminate.LLP_ULPDU_LENGTH),
    /** The CRC field does not match the CRC32c of the FPDU (CRC negotiated). */
    CRC_MISMATCH(11, "MPA CRC32c mismatch",
            Terminate.LAYER_LLP, Terminate.LLP_ETYPE_MPA, Terminate.LLP_CRC_ERROR),
    /** DDP version (DV) is not 1 in a tagged segment. */
    DDP_TAGGED_BAD_VERSION(12, "DDP version is not 1 (tagged segment)",
            Terminate.LAYER_DDP, Terminate.DDP_ETYPE_TAGGED, Terminate.DDP_TAGGED_INVALID_VERSION),
    /** DDP version (DV) is not 1 in an untagged segment. */
    DDP_UNTAGGED_BAD_VERSION(13, "DDP version is not 1 (untagged segment)",
            Terminate.LAYER_DDP, Terminate.DDP_ETYPE_UNTAGGED,
            Terminate.DDP_UNTAGGED_INVALID_VERSION),
    /** The untagged queue number is not the one the RDMAP opcode uses. */
    DDP_INVALID_QN(14, "DDP queue number does not match the RDMAP opcode",
            Terminate.LAYER_DDP, Terminate.DDP_ETYPE_UNTAGGED, Terminate.DDP_UNTAGGED_INVALID_QN),
    /** RDMAP version (RV) is not 1. */
    RDMAP_BAD_VERSION(15, "RDMAP version is not 1",
            Terminate.LAYER_RDMAP, Terminate.RDMAP_ETYPE_REMOTE_OPERATION,
            Terminate.RDMAP_INVALID_VERSION),
    /** The RDMAP opcode is not defined (12 to 15). */
    RDMAP_UNKNOWN_OPCODE(16, "RDMAP opcode not defined",
            Terminate.LAYER_RDMAP, Terminate.RDMAP_ETYPE_REMOTE_OPERATION,
            Terminate.RDMAP_UNEXPECTED_OPCODE),
    /** The DDP T bit disagrees with the opcode (WRITE and READ RESPONSE are the tagged ones). */
    RDMAP_TAGGED_MISMATCH(17, "RDMAP opcode carried in the wrong DDP buffer model (T bit)",
            Terminate.LAYER_RDMAP, Terminate.RDMAP_ETYPE_REMOTE_OPERATION,
            Terminate.RDMAP_UNEXPECTED_OPCODE);

    private static final IwarpError[] BY_CODE = new IwarpError[32];

    static {
        for (IwarpError e : values()) {
            BY_CODE[e.code] = e;
        }
    }

    private final int code;
    private final String message;
    private final int layer;
    private final int errorType;
    private final int errorCode;

    IwarpError(int code, String message, int layer, int errorType, int errorCode) {
        this.code = code;
        this.message = message;
        this.layer = layer;
        this.errorType = errorType;
        this.errorCode = errorCode;
    }

    /** Positive code; the validating methods return its negation. */
    public int code() {
        return code;
    }

    /** What was wrong, for logs and exception messages. */
    public String message() {
        return message;
    }

    /** TERMINATE Layer to report ({@link Terminate#LAYER_RDMAP} ...). */
    public int terminateLayer() {
        return layer;
    }

    /** TERMINATE EType to report. */
    public int terminateErrorType() {
        return errorType;
    }

    /** TERMINATE Error Code to report. */
    public int terminateErrorCode() {
        return errorCode;
    }

    /** The constant with this code, or null. */
    public static IwarpError of(int code) {
        return code > 0 && code < BY_CODE.length ? BY_CODE[code] : null;
    }

    /** The error a validating method's result stands for, or null if it is not negative. */
    public static IwarpError fromResult(long result) {
        return result < 0 && result > -BY_CODE.length ? BY_CODE[(int) -result] : null;
    }

    /** The result value for this error: {@code -code()}. */
    public int result() {
        return -code;
    }
}
