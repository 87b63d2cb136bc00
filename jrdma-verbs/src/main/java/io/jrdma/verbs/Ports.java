package io.jrdma.verbs;

/**
 * The port number checks of {@link DeviceContext}'s per-port verbs: ports are numbered 1 to
 * {@link DeviceAttr#physPortCnt()}, as libibverbs numbers them.
 */
final class Ports {
    private Ports() {
    }

    /**
     * {@return how many ports {@code ctx}'s device has: {@code queryDevice().physPortCnt()}, or 1 when the provider
     * does not report device attributes (jrdma's software devices have one port)}
     *
     * @param ctx the context
     */
    static int count(DeviceContext ctx) {
        try {
            return Math.max(1, ctx.queryDevice().physPortCnt());
        } catch (RdmaException e) {
            if (e.errno() != RdmaException.Errno.EOPNOTSUPP) {
                throw e;
            }
            return 1;
        }
    }

    /**
     * Checks {@code port} for a default per-port verb, which answers port 1 with the verb's no-argument form.
     *
     * @param ctx  the context
     * @param port the port asked for
     * @param verb the verb, for the message
     * @throws RdmaException EINVAL naming the range for a port outside 1..physPortCnt; EOPNOTSUPP for a port
     *                       above 1 that the device has when the provider does not override the verb
     */
    static void check(DeviceContext ctx, int port, String verb) {
        if (port == 1) {
            return;
        }
        int count = count(ctx);
        Device d = Unsupported.device(ctx);
        String name = d == null ? "the device" : d.name();
        if (port < 1 || port > count) {
            throw RdmaException.noSuchPort(name, port, count);
        }
        throw new RdmaException(RdmaException.Errno.EOPNOTSUPP, "DeviceContext." + verb + " of port " + port + " of "
                + name + ": the provider" + (d == null ? "" : " " + d.provider()) + " answers port 1 only, though the"
                + " device has " + count + " ports");
    }
}
