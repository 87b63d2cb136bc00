package io.jrdma.tck;

import io.jrdma.verbs.AhAttr;
import io.jrdma.verbs.AsyncEvent;
import io.jrdma.verbs.CompletionQueue;
import io.jrdma.verbs.DeviceAttr;
import io.jrdma.verbs.DeviceCap;
import io.jrdma.verbs.MwBind;
import io.jrdma.verbs.MwType;
import io.jrdma.verbs.QpInitAttr;
import io.jrdma.verbs.QpType;
import io.jrdma.verbs.QueuePair;
import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.SrqInitAttr;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.function.ThrowingSupplier;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Runs on every provider: each verb beyond RC that the provider does not declare (in {@code queryDevice()},
 * or at all when it does not report device attributes) throws {@link RdmaException.Errno#EOPNOTSUPP} with a
 * message naming the verb; each verb it declares does not. Posting verbs answer with the errno value
 * instead. Nothing here is skipped: a provider with every verb checks that none of them says EOPNOTSUPP.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
public abstract class UnsupportedVerbsTck extends VerbsTckSupport {
    /** For subclasses. */
    protected UnsupportedVerbsTck() {
    }

    /**
     * Calls {@code verb}: when {@code supported} it must not answer EOPNOTSUPP (what it creates is closed at
     * cleanup); otherwise it must throw EOPNOTSUPP with {@code name} in the message.
     */
    private void check(List<String> problems, boolean supported, String name, ThrowingSupplier<?> verb) {
        Object made;
        try {
            made = verb.get();
        } catch (RdmaException e) {
            if (e.errno() != RdmaException.Errno.EOPNOTSUPP) {
                problems.add(name + " threw " + e.getMessage() + " (expected " + (supported ? "success" : "EOPNOTSUPP") + ")");
            } else if (supported) {
                problems.add(name + " is declared in queryDevice() but threw " + e.getMessage());
            } else if (!e.getMessage().contains(name)) {
                problems.add(name + ": the EOPNOTSUPP message does not name the verb: " + e.getMessage());
            }
            return;
        } catch (Throwable t) {
            problems.add(name + " threw " + t);
            return;
        }
        if (!supported) {
            problems.add(name + " is not declared in queryDevice() but succeeded (declare it, or answer EOPNOTSUPP)");
        }
        if (made instanceof AutoCloseable c) {
            track(client, name, c);
        }
    }

    @Test
    void everyUndeclaredVerbAnswersEopnotsuppNamingIt() {
        DeviceAttr a = attrOrNull(client); // checks that an EOPNOTSUPP here names queryDevice
        List<String> problems = new ArrayList<>();
        CompletionQueue cq = client.newCq(16);

        check(problems, a != null && a.supports(QpType.UD), "UD", () -> client.pd.createQp(QpInitAttr.ud(cq)));
        check(problems, a != null && a.supports(QpType.UC), "UC", () -> client.pd.createQp(QpInitAttr.uc(cq)));
        check(problems, a != null && a.maxAh() > 0, "createAh",
                () -> client.pd.createAh(AhAttr.of(fx.gid(server.ctx), gidIndex(client))));
        check(problems, a != null && a.supportsSrq(), "createSrq", () -> client.pd.createSrq(SrqInitAttr.of(16, 1)));
        check(problems, a != null && a.supportsMw(MwType.TYPE_1), "allocMw", () -> client.pd.allocMw(MwType.TYPE_1));
        check(problems, a != null && a.supportsMw(MwType.TYPE_2), "allocMw", () -> client.pd.allocMw(MwType.TYPE_2));
        check(problems, a != null && a.has(DeviceCap.MEM_MGT_EXTENSIONS), "allocMr", () -> client.pd.allocMr(4096));
        if (a != null && a.supportsSrq()) { // a resize (ibv_modify_srq with IBV_SRQ_MAX_WR) as SRQ_RESIZE says
            io.jrdma.verbs.SharedReceiveQueue srq = track(client, "SRQ", client.pd.createSrq(SrqInitAttr.of(16, 1)));
            check(problems, a.has(DeviceCap.SRQ_RESIZE), "resize", () -> {
                srq.modify(new io.jrdma.verbs.SrqAttr(32, 0, 0), io.jrdma.verbs.SrqAttr.MAX_WR);
                return null;
            });
        }

        // asynchronous events have no capability bit: either both calls work or both name themselves
        boolean events;
        try {
            client.ctx.pollAsyncEvent(new AsyncEvent());
            events = true;
        } catch (RdmaException e) {
            events = false;
        }
        check(problems, events, "pollAsyncEvent", () -> client.ctx.pollAsyncEvent(new AsyncEvent()));
        check(problems, events, "awaitAsyncEvent", () -> client.ctx.awaitAsyncEvent(new AsyncEvent(), Duration.ZERO));

        // ibv_bind_mw posts: without memory windows it answers with the errno value
        if (a == null || !a.supportsMw(MwType.TYPE_1)) {
            QueuePair qp = client.newQp(QpInitAttr.rc(cq));
            assertEquals(RdmaException.Errno.EOPNOTSUPP.value(), qp.bindMw(null, new MwBind()),
                    "bindMw on a provider without type 1 windows");
        }
        if (!problems.isEmpty()) {
            fail(problems.size() + " verb(s) misreport their support on provider " + fx.device().provider() + ":\n  "
                    + String.join("\n  ", problems));
        }
    }
}
