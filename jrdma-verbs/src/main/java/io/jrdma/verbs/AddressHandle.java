package io.jrdma.verbs;

/**
 * An address handle ({@code ibv_ah}): the path to one remote port, which UD send work requests name
 * ({@link SendWorkRequest#ud}). Made by {@link ProtectionDomain#createAh}; usable by the UD QPs of
 * its PD only. Immutable once made.
 */
public interface AddressHandle extends AutoCloseable {
    /** {@return the protection domain it was created in} */
    ProtectionDomain pd();

    /** {@return the attributes it was created with} */
    AhAttr attr();

    /**
     * Destroys the handle ({@code ibv_destroy_ah}). Send requests already posted with it still go out;
     * posting a new one with it returns EINVAL.
     */
    @Override
    void close();
}
