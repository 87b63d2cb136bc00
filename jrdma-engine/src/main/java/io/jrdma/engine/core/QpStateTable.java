package io.jrdma.engine.core;

import io.jrdma.verbs.QpAttr;
import io.jrdma.verbs.QpState;
import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.RdmaException.Errno;

import java.util.List;

/**
 * The QP state machine of one QP type as data (IBA 10.3.1, table 91 "QP state transition
 * properties", and {@code ibv_modify_qp(3)}): which transitions {@code modify_qp} allows and,
 * for each, which attributes it requires and which it permits besides. Every row has a name,
 * so a refused modify says which rule refused it. A new QP type (UD, UC) is a new table, not
 * a new branch in the QP.
 *
 * <p>Control path only: {@link #rule} is an array lookup, {@link #check} allocates only to
 * build the message of the exception it throws.
 */
public final class QpStateTable {
    /**
     * One allowed transition.
     *
     * @param name     the rule's name, quoted in errors
     * @param from     the states it leaves from
     * @param to       the state it enters
     * @param required the {@link QpAttr} bits it needs
     * @param optional the {@link QpAttr} bits it takes besides
     */
    public record Rule(String name, List<QpState> from, QpState to, int required, int optional) {
        /** @return the attributes this transition takes at all */
        public int allowed() {
            return required | optional;
        }
    }

    private static final int ANY = QpState.values().length;
    private static final List<QpState> ALL = List.of(QpState.values());
    private static final int RTS_MUTABLE = QpAttr.ACCESS_FLAGS | QpAttr.MIN_RNR_TIMER | QpAttr.TIMEOUT
            | QpAttr.RETRY_CNT | QpAttr.RNR_RETRY | QpAttr.MAX_QP_RD_ATOMIC;

    /** Reliable connection (IBA 10.3.1 with the RC column of table 91; rxe's {@code qp_state_table} for RC). */
    public static final QpStateTable RC = new QpStateTable("RC", List.of(
            new Rule("reset", ALL, QpState.RESET, 0, 0),
            new Rule("error", ALL, QpState.ERROR, 0, 0),
            new Rule("init", List.of(QpState.RESET), QpState.INIT,
                    QpAttr.PKEY_INDEX | QpAttr.PORT | QpAttr.ACCESS_FLAGS, 0),
            new Rule("init-modify", List.of(QpState.INIT), QpState.INIT,
                    0, QpAttr.PKEY_INDEX | QpAttr.PORT | QpAttr.ACCESS_FLAGS),
            new Rule("ready-to-receive", List.of(QpState.INIT), QpState.RTR,
                    QpAttr.AV | QpAttr.PATH_MTU | QpAttr.DEST_QPN | QpAttr.RQ_PSN | QpAttr.MAX_DEST_RD_ATOMIC
                            | QpAttr.MIN_RNR_TIMER,
                    QpAttr.PKEY_INDEX | QpAttr.ACCESS_FLAGS),
            new Rule("ready-to-send", List.of(QpState.RTR), QpState.RTS,
                    QpAttr.SQ_PSN | QpAttr.TIMEOUT | QpAttr.RETRY_CNT | QpAttr.RNR_RETRY | QpAttr.MAX_QP_RD_ATOMIC,
                    QpAttr.ACCESS_FLAGS | QpAttr.MIN_RNR_TIMER),
            new Rule("rts-modify", List.of(QpState.RTS, QpState.SQD, QpState.SQE), QpState.RTS, 0, RTS_MUTABLE),
            new Rule("drain", List.of(QpState.RTS, QpState.SQD), QpState.SQD, 0, 0)));

    /**
     * Unreliable datagram (IBA 10.3.1 with the UD column of table 91; rxe's {@code qp_state_table} for UD):
     * no path, no PSN on receive, no retry or timeout; the Q_Key is set at INIT and may change later.
     */
    public static final QpStateTable UD = new QpStateTable("UD", List.of(
            new Rule("reset", ALL, QpState.RESET, 0, 0),
            new Rule("error", ALL, QpState.ERROR, 0, 0),
            new Rule("init", List.of(QpState.RESET), QpState.INIT, QpAttr.PKEY_INDEX | QpAttr.PORT | QpAttr.QKEY, 0),
            new Rule("init-modify", List.of(QpState.INIT), QpState.INIT, 0,
                    QpAttr.PKEY_INDEX | QpAttr.PORT | QpAttr.QKEY),
            new Rule("ready-to-receive", List.of(QpState.INIT), QpState.RTR, 0, QpAttr.PKEY_INDEX | QpAttr.QKEY),
            new Rule("ready-to-send", List.of(QpState.RTR), QpState.RTS, QpAttr.SQ_PSN, QpAttr.QKEY),
            new Rule("rts-modify", List.of(QpState.RTS, QpState.SQD, QpState.SQE), QpState.RTS, 0, QpAttr.QKEY),
            new Rule("drain", List.of(QpState.RTS, QpState.SQD), QpState.SQD, 0, 0)));

    /**
     * Unreliable connection (IBA 10.3.1 with the UC column of table 91): a path and PSNs as RC, but no
     * retry count, timeout, RNR timer or READ/atomic depths (UC has no ACKs, READs or atomics).
     */
    public static final QpStateTable UC = new QpStateTable("UC", List.of(
            new Rule("reset", ALL, QpState.RESET, 0, 0),
            new Rule("error", ALL, QpState.ERROR, 0, 0),
            new Rule("init", List.of(QpState.RESET), QpState.INIT,
                    QpAttr.PKEY_INDEX | QpAttr.PORT | QpAttr.ACCESS_FLAGS, 0),
            new Rule("init-modify", List.of(QpState.INIT), QpState.INIT,
                    0, QpAttr.PKEY_INDEX | QpAttr.PORT | QpAttr.ACCESS_FLAGS),
            new Rule("ready-to-receive", List.of(QpState.INIT), QpState.RTR,
                    QpAttr.AV | QpAttr.PATH_MTU | QpAttr.DEST_QPN | QpAttr.RQ_PSN,
                    QpAttr.PKEY_INDEX | QpAttr.ACCESS_FLAGS),
            new Rule("ready-to-send", List.of(QpState.RTR), QpState.RTS, QpAttr.SQ_PSN, QpAttr.ACCESS_FLAGS),
            new Rule("rts-modify", List.of(QpState.RTS, QpState.SQD, QpState.SQE), QpState.RTS, 0, QpAttr.ACCESS_FLAGS),
            new Rule("drain", List.of(QpState.RTS, QpState.SQD), QpState.SQD, 0, 0)));

    /**
     * @param type a QP type
     * @return its state table
     * @throws RdmaException EOPNOTSUPP for a type without one
     */
    public static QpStateTable of(io.jrdma.verbs.QpType type) {
        return switch (type) {
            case RC -> RC;
            case UC -> UC;
            case UD -> UD;
            default -> throw new RdmaException(Errno.EOPNOTSUPP, type + " queue pairs have no state table");
        };
    }

    private final String type;
    private final List<Rule> rules;
    /** [from][to]: the rule for that transition, null when none allows it */
    private final Rule[][] byTransition = new Rule[ANY][ANY];

    /**
     * @param type  the QP type the table is for, for messages
     * @param rules the allowed transitions; a transition may be named by one rule only
     */
    public QpStateTable(String type, List<Rule> rules) {
        this.type = type;
        this.rules = List.copyOf(rules);
        for (Rule r : this.rules) {
            for (QpState f : r.from()) {
                if (byTransition[f.ordinal()][r.to().ordinal()] != null) {
                    throw new IllegalArgumentException(type + ": " + f + " -> " + r.to() + " is named by both "
                            + byTransition[f.ordinal()][r.to().ordinal()].name() + " and " + r.name());
                }
                byTransition[f.ordinal()][r.to().ordinal()] = r;
            }
        }
    }

    /** @return the rows, in the order given */
    List<Rule> rules() {
        return rules;
    }

    /** @return the rule that allows {@code from -> to}, or null when the table has none */
    public Rule rule(QpState from, QpState to) {
        return byTransition[from.ordinal()][to.ordinal()];
    }

    /**
     * Checks one {@code modify_qp}: the transition must be in the table, and the attribute mask
     * (without STATE and CUR_STATE) must hold every required attribute and nothing it does not permit.
     *
     * @return the rule that allows it
     * @throws RdmaException EINVAL naming the transition, the rule and the attributes at fault
     */
    public Rule check(QpState from, QpState to, int attrMask) {
        Rule r = rule(from, to);
        if (r == null) {
            throw new RdmaException(Errno.EINVAL, "invalid " + type + " QP state transition " + from + " -> " + to
                    + " (IBA 10.3.1: RESET->INIT->RTR->RTS, any state ->RESET or ->ERROR)");
        }
        int mask = attrMask & ~(QpAttr.STATE | QpAttr.CUR_STATE);
        if ((mask & r.required()) != r.required()) {
            throw new RdmaException(Errno.EINVAL, from + " -> " + to + " needs attributes "
                    + maskNames(r.required() & ~mask) + " (rule '" + r.name() + "' of the " + type
                    + " state table; see ibv_modify_qp(3))");
        }
        if ((mask & ~r.allowed()) != 0) {
            throw new RdmaException(Errno.EINVAL, from + " -> " + to + " does not take attributes "
                    + maskNames(mask & ~r.allowed()) + " (rule '" + r.name() + "' of the " + type + " state table)");
        }
        return r;
    }

    /** @return the names of the {@link QpAttr} bits in {@code mask}, joined with '|' */
    static String maskNames(int mask) {
        String[] names = {"STATE", "CUR_STATE", "EN_SQD_ASYNC_NOTIFY", "ACCESS_FLAGS", "PKEY_INDEX", "PORT", "QKEY",
            "AV", "PATH_MTU", "TIMEOUT", "RETRY_CNT", "RNR_RETRY", "RQ_PSN", "MAX_QP_RD_ATOMIC", "ALT_PATH",
            "MIN_RNR_TIMER", "SQ_PSN", "MAX_DEST_RD_ATOMIC", "PATH_MIG_STATE", "CAP", "DEST_QPN"};
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < names.length; i++) {
            if ((mask & (1 << i)) != 0) {
                sb.append(sb.isEmpty() ? "" : "|").append(names[i]);
            }
        }
        return sb.toString();
    }

    @Override
    public String toString() {
        return type + " QP state table (" + rules.size() + " rules)";
    }
}
