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
        EPERM(1), ENOENT(2), EINTR(4), EIO(5), EAGAIN(11), ENOMEM(12), EACCES(13), EFAULT(14), EBUSY(16),
        EEXIST(17), ENODEV(19), EINVAL(22), ENOSPC(28), ENOSYS(38), EPROTO(71), EMSGSIZE(90),
        EOPNOTSUPP(95), EADDRINUSE(98), ENETUNREACH(101), ECONNRESET(104), ETIMEDOUT(110),
        ECONNREFUSED(111), EHOSTUNREACH(113);

        private final int value;

        Errno(int value) {
            this.value = value;
        }

        /** @return the numeric errno, as in Linux's errno.h */
        public int value() {
            return value;
        }

        /** @return the constant for a numeric errno, or EIO for an unknown one */
        public static Errno of(int value) {
            for (Errno e : values()) {
                if (e.value == value) {
                    return e;
                }
            }
            return EIO;
        }
    }

    private final Errno errno;

    public RdmaException(Errno errno, String message) {
        super(errno + ": " + message);
        this.errno = errno;
    }

    public RdmaException(Errno errno, String message, Throwable cause) {
        super(errno + ": " + message, cause);
        this.errno = errno;
    }

    /** @return what went wrong, as an errno */
    public Errno errno() {
        return errno;
    }
}
