/**
 * The jrdma conformance suite (TCK): abstract JUnit 5 tests of the verbs API that every
 * provider runs by subclassing them with a {@link io.jrdma.tck.ProviderFixture}.
 */
module io.jrdma.tck {
    requires transitive io.jrdma.verbs;
    requires transitive org.junit.jupiter.api;
    requires transitive org.junit.jupiter.params;

    exports io.jrdma.tck;

    opens io.jrdma.tck to org.junit.platform.commons;
}
