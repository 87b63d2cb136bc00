/**
 * Typed options of jrdma's software providers, the part of the API that belongs to them alone (as
 * rdma-core keeps a device's own knobs in its provider header, {@code mlx5dv.h}, not in
 * {@code verbs.h}): {@link io.jrdma.soft.SoftRoceOptions} for soft-RoCE ({@code rxe}) and
 * {@link io.jrdma.soft.SoftIwarpOptions} for soft-iWARP ({@code siw}). Add them to the neutral
 * {@link io.jrdma.verbs.DeviceOptions} with {@link io.jrdma.verbs.DeviceOptions#with}; another provider
 * ignores them.
 */
package io.jrdma.soft;
