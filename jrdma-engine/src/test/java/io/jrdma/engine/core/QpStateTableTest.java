package io.jrdma.engine.core;

import io.jrdma.verbs.QpAttr;
import io.jrdma.verbs.QpState;
import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.RdmaException.Errno;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The RC state table holds exactly IBA 10.3.1's transitions, and its errors name the rule. */
class QpStateTableTest {
    private static final QpStateTable T = QpStateTable.RC;

    @Test
    void allowsExactlyTheIbaTransitions() {
        Set<String> allowed = Set.of("RESET->INIT", "INIT->INIT", "INIT->RTR", "RTR->RTS", "RTS->RTS", "SQD->RTS",
                "SQE->RTS", "RTS->SQD", "SQD->SQD");
        for (QpState from : QpState.values()) {
            for (QpState to : QpState.values()) {
                boolean expected = to == QpState.RESET || to == QpState.ERROR || allowed.contains(from + "->" + to);
                if (expected) {
                    assertNotNull(T.rule(from, to), from + " -> " + to);
                } else {
                    assertNull(T.rule(from, to), from + " -> " + to);
                    RdmaException e = assertThrows(RdmaException.class, () -> T.check(from, to, QpAttr.STATE));
                    assertEquals(Errno.EINVAL, e.errno());
                }
            }
        }
    }

    @Test
    void missingAndExtraAttributesNameTheRule() {
        RdmaException missing = assertThrows(RdmaException.class,
                () -> T.check(QpState.INIT, QpState.RTR, QpAttr.STATE | QpAttr.AV | QpAttr.PATH_MTU));
        assertTrue(missing.getMessage().contains("RQ_PSN|MIN_RNR_TIMER|MAX_DEST_RD_ATOMIC|DEST_QPN"), missing.getMessage());
        assertTrue(missing.getMessage().contains("'ready-to-receive'"), missing.getMessage());
        RdmaException extra = assertThrows(RdmaException.class,
                () -> T.check(QpState.RTS, QpState.SQD, QpAttr.STATE | QpAttr.TIMEOUT));
        assertTrue(extra.getMessage().contains("TIMEOUT") && extra.getMessage().contains("'drain'"), extra.getMessage());
        int rts = QpAttr.SQ_PSN | QpAttr.TIMEOUT | QpAttr.RETRY_CNT | QpAttr.RNR_RETRY | QpAttr.MAX_QP_RD_ATOMIC;
        assertEquals("ready-to-send", T.check(QpState.RTR, QpState.RTS, rts | QpAttr.STATE | QpAttr.CUR_STATE).name());
    }

    @Test
    void aTransitionNamedTwiceIsRefused() {
        List<QpStateTable.Rule> rules = List.of(
                new QpStateTable.Rule("a", List.of(QpState.RESET), QpState.INIT, 0, 0),
                new QpStateTable.Rule("b", List.of(QpState.RESET, QpState.INIT), QpState.INIT, 0, 0));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new QpStateTable("X", rules));
        assertTrue(e.getMessage().contains("'a'") || e.getMessage().contains("a and b"), e.getMessage());
    }
}
