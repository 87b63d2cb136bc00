/**
 * The README's tutorial as a module: it compiles against the verbs API only. At run time the
 * providers (module io.jrdma.engine, artifact io.jrdma:jrdma-engine) are found on the module path
 * through the service io.jrdma.verbs.spi.RdmaProvider.
 */
module hello {
    requires io.jrdma.verbs;
}
