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

    /** UD and UC allow the same transitions as RC, with the attributes of ibv_modify_qp(3)'s UD and UC columns. */
    @Test
    void udAndUcTablesTakeTheirOwnAttributes() {
        for (QpStateTable t : List.of(QpStateTable.UD, QpStateTable.UC)) {
            for (QpState from : QpState.values()) {
                for (QpState to : QpState.values()) {
                    assertEquals(T.rule(from, to) == null, t.rule(from, to) == null, t + ": " + from + " -> " + to);
                }
            }
        }
        QpStateTable ud = QpStateTable.UD;
        int init = QpAttr.STATE | QpAttr.PKEY_INDEX | QpAttr.PORT;
        RdmaException noQkey = assertThrows(RdmaException.class, () -> ud.check(QpState.RESET, QpState.INIT, init));
        assertTrue(noQkey.getMessage().contains("QKEY") && noQkey.getMessage().contains("UD state table"),
                noQkey.getMessage());
        assertEquals("init", ud.check(QpState.RESET, QpState.INIT, init | QpAttr.QKEY).name());
        assertEquals("ready-to-receive", ud.check(QpState.INIT, QpState.RTR, QpAttr.STATE).name());
        RdmaException path = assertThrows(RdmaException.class,
                () -> ud.check(QpState.INIT, QpState.RTR, QpAttr.STATE | QpAttr.AV));
        assertTrue(path.getMessage().contains("does not take attributes AV"), path.getMessage());
        assertEquals("ready-to-send", ud.check(QpState.RTR, QpState.RTS, QpAttr.STATE | QpAttr.SQ_PSN).name());
        assertEquals("rts-modify", ud.check(QpState.RTS, QpState.RTS, QpAttr.QKEY).name());

        QpStateTable uc = QpStateTable.UC;
        int rtr = QpAttr.STATE | QpAttr.AV | QpAttr.PATH_MTU | QpAttr.DEST_QPN | QpAttr.RQ_PSN;
        assertEquals("ready-to-receive", uc.check(QpState.INIT, QpState.RTR, rtr).name());
        RdmaException rd = assertThrows(RdmaException.class,
                () -> uc.check(QpState.INIT, QpState.RTR, rtr | QpAttr.MAX_DEST_RD_ATOMIC));
        assertTrue(rd.getMessage().contains("MAX_DEST_RD_ATOMIC") && rd.getMessage().contains("UC state table"),
                rd.getMessage());
        assertEquals("ready-to-send", uc.check(QpState.RTR, QpState.RTS, QpAttr.STATE | QpAttr.SQ_PSN).name());
        RdmaException retry = assertThrows(RdmaException.class,
                () -> uc.check(QpState.RTR, QpState.RTS, QpAttr.STATE | QpAttr.SQ_PSN | QpAttr.RETRY_CNT));
        assertTrue(retry.getMessage().contains("RETRY_CNT"), retry.getMessage());
        assertEquals(QpStateTable.UD, QpStateTable.of(io.jrdma.verbs.QpType.UD));
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
