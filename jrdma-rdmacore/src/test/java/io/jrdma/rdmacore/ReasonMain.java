package io.jrdma.rdmacore;

/** Prints the provider's {@code unavailableReason()}: run in a child JVM by {@link LoadingTest}. */
public final class ReasonMain {
    private ReasonMain() {
    }

    /**
     * Prints the reason, or "usable".
     *
     * @param args ignored
     */
    public static void main(String[] args) {
        String why = new RdmaCoreProvider().unavailableReason();
        System.out.println(why == null ? "usable" : why);
    }
}
