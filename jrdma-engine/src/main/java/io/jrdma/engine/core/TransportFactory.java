package io.jrdma.engine.core;

/** Makes the transport of a device context's engine, once, while the engine is built. */
@FunctionalInterface
public interface TransportFactory {
    /**
     * @param engine the engine (its context, counters and QP table are set; its transport is not)
     * @return the transport the engine will drive
     */
    Transport create(Engine engine);
}
