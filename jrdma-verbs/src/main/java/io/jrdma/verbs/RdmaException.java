package io.jrdma.verbs;

/**
 * The one unchecked exception thrown by control verbs (create, modify, destroy, connect).
 * It carries an errno-like {@link Errno} so callers can branch as they would on the return
 * value of a libibverbs call. Data-path verbs never throw: they return a status code or
 * complete the work request with an error {@link WcStatus}.
 */
public class RdmaException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** The errno values jrdma reports, named as in Linux. */
    public enum Errno {
        /** Operation not permitted. */
        EPERM(1),
        /** No such entry. */
        ENOENT(2),
        /** Interrupted. */
        EINTR(4),
        /** An I/O error, for example a socket that failed. */
        EIO(5),
        /** Try again: a resource is busy for now. */
        EAGAIN(11),
        /** Out of resources: a full queue (posting) or no free QP number. */
        ENOMEM(12),
        /** Access denied. */
        EACCES(13),
        /** A bad address. */
        EFAULT(14),
        /** Still in use: close what was made from the object first. */
        EBUSY(16),
        /** Already exists. */
        EEXIST(17),
        /** No such device or provider, or a provider that cannot run here. */
        ENODEV(19),
        /** An invalid argument or a call the object's state forbids. */
        EINVAL(22),
        /** No space left in a table. */
        ENOSPC(28),
        /** Not implemented. */
        ENOSYS(38),
        /** A protocol error: the peer sent something malformed or is not a jrdma peer. */
        EPROTO(71),
        /** A message too long. */
        EMSGSIZE(90),
        /** An operation this provider, transport or peer does not support. */
        EOPNOTSUPP(95),
        /** An address or port is in use. */
        EADDRINUSE(98),
        /** No device has a route to the address. */
        ENETUNREACH(101),
        /** The peer reset the connection. */
        ECONNRESET(104),
        /** Timed out. */
        ETIMEDOUT(110),
        /** Connection refused: nothing listens there, or the server rejected the request. */
        ECONNREFUSED(111),
        /** The host is unreachable. */
        EHOSTUNREACH(113);

        private final int value;

        Errno(int value) {
            this.value = value;
        }

        /** {@return the numeric errno, as in Linux's errno.h} */
        public int value() {
            return value;
        }

        /**
         * {@return the constant for a numeric errno, or EIO for an unknown one}
         *
         * @param value a Linux errno number, such as a {@code postSend} result
         */
        public static Errno of(int value) {
            for (Errno e : values()) {
                if (e.value == value) {
                    return e;
                }
            }
            return EIO;
        }
    }

    /** What went wrong, as an errno. */
    private final Errno errno;

    /**
     * Makes an exception whose message is {@code errno + ": " + message}.
     *
     * @param errno   what went wrong
     * @param message what was wrong and what to do
     */
    public RdmaException(Errno errno, String message) {
        super(errno + ": " + message);
        this.errno = errno;
    }

    /**
     * Makes an exception whose message is {@code errno + ": " + message}, with its cause.
     *
     * @param errno   what went wrong
     * @param message what was wrong and what to do
     * @param cause   the underlying exception
     */
    public RdmaException(Errno errno, String message, Throwable cause) {
        super(errno + ": " + message, cause);
        this.errno = errno;
    }

    /**
     * {@return the EINVAL for a port a device does not have, naming the valid range} Ports are numbered 1 to
     * {@link DeviceAttr#physPortCnt()}, as libibverbs numbers them; every provider refuses another port with this.
     *
     * @param device the device's name
     * @param port   the port asked for
     * @param count  the device's ports ({@code phys_port_cnt})
     */
    public static RdmaException noSuchPort(String device, int port, int count) {
        return new RdmaException(Errno.EINVAL, "port " + port + " of " + device + " does not exist: valid ports are 1.."
                + count + " (phys_port_cnt " + count + ")");
    }

    /** {@return what went wrong, as an errno} */
    public Errno errno() {
        return errno;
    }
}
