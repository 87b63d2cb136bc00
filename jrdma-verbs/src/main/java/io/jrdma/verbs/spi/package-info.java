/**
 * The provider SPI: how a source of RDMA devices plugs into the verbs API.
 *
 * <p>A provider implements {@link io.jrdma.verbs.spi.RdmaProvider} and is registered as a
 * {@link java.util.ServiceLoader} service: with {@code provides io.jrdma.verbs.spi.RdmaProvider with ...}
 * in its {@code module-info.java} on the module path, and with a
 * {@code META-INF/services/io.jrdma.verbs.spi.RdmaProvider} file on the class path.
 * {@link io.jrdma.verbs.Rdma#providers()} loads every provider present; jrdma's own,
 * {@code rxe} (soft-RoCE over UDP) and {@code siw} (soft-iWARP over TCP), are in the
 * {@code io.jrdma:jrdma-engine} artifact (module {@code io.jrdma.engine}).
 *
 * <p>A provider implements the rest of the API behind its devices: {@link io.jrdma.verbs.Device},
 * {@link io.jrdma.verbs.DeviceContext} and the objects made from it, with the semantics the
 * {@link io.jrdma.verbs} package describes (close order, threading, errors as errno values and
 * work completion statuses). A provider that cannot run on this machine stays loadable and says
 * why in {@link io.jrdma.verbs.spi.RdmaProvider#unavailableReason()}, a sentence that also says
 * what to do; jrdma reports that reason instead of falling back silently. The conformance suite
 * ({@code io.jrdma:jrdma-tck}) checks a provider against the API: subclass its abstract tests with
 * a fixture for the provider.
 *
 * <p>The verbs a provider may lack (UD and UC queue pairs, address handles, shared receive queues, memory
 * windows, fast registration, asynchronous events, {@code queryDevice}) are {@code default} methods of
 * {@link io.jrdma.verbs.DeviceContext}, {@link io.jrdma.verbs.ProtectionDomain} and
 * {@link io.jrdma.verbs.QueuePair} that throw {@link io.jrdma.verbs.RdmaException} with
 * {@code EOPNOTSUPP}, naming the verb, the provider and the device (posting verbs return the errno value),
 * as rdma-core's {@code dummy_ops} do: a provider overrides what it implements and declares it in
 * {@link io.jrdma.verbs.DeviceContext#queryDevice()}, and the conformance suite's
 * {@code UnsupportedVerbsTck} checks that the two agree. Settings of one provider travel in
 * {@link io.jrdma.verbs.DeviceOptions} as that provider's own {@link io.jrdma.verbs.ProviderOptions} record.
 *
 * <p>The methods of {@code RdmaProvider} are called from any thread, possibly at once, and must be
 * thread-safe; jrdma's providers re-read the network interfaces on each
 * {@link io.jrdma.verbs.spi.RdmaProvider#devices()} and
 * {@link io.jrdma.verbs.spi.RdmaProvider#resolve resolve} call.
 */
package io.jrdma.verbs.spi;
