package io.jrdma.verbs;

/** The wire a device speaks. */
public enum Transport {
    /** InfiniBand transport over UDP/IP (port 4791), as Linux rdma_rxe and RoCE NICs. */
    ROCE_V2,
    /** RDMAP/DDP/MPA over TCP, as Linux siw and iWARP NICs. */
    IWARP,
    /** Shared memory between processes of one host. */
    SHM
}
