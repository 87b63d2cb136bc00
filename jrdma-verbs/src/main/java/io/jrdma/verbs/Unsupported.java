package io.jrdma.verbs;

/**
 * The answer of the API's default methods for a verb a provider does not implement, as rdma-core's
 * {@code dummy_ops} answer {@code EOPNOTSUPP}: an exception naming the verb, the provider and the device,
 * and what to do.
 */
final class Unsupported {
    private Unsupported() {
    }

    /**
     * {@return the exception for {@code verb} on {@code device}}
     *
     * @param verb   the Java method and its libibverbs name, e.g. {@code "ProtectionDomain.createSrq (ibv_create_srq)"}
     * @param device the device the call was made on, or null when unknown
     */
    static RdmaException of(String verb, Device device) {
        String where = device == null ? "this provider" : "provider " + device.provider() + " (device " + device.name() + ")";
        return new RdmaException(RdmaException.Errno.EOPNOTSUPP, verb + " is not supported by " + where
                + ": check DeviceContext.queryDevice() before using it, or use a provider that implements it"
                + " (docs/guide/api.md lists which provider has what)");
    }

    /**
     * {@return the device of a context, or null if asking it fails (a closed or half-built context)}
     *
     * @param ctx the context
     */
    static Device device(DeviceContext ctx) {
        try {
            return ctx == null ? null : ctx.device();
        } catch (RuntimeException e) {
            return null;
        }
    }
}
