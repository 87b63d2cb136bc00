package io.jrdma.engine.roce;

import io.jrdma.verbs.WrOpcode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.EnumMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A soak under seeded faults: rounds of {@link FaultInjectionTest#COUNT} requests of every RC opcode through a
 * network that drops, duplicates, reorders and corrupts packets at 1 %, 5 % and 10 % (each in turn, a new seed
 * each round), for {@code -Djrdma.soak.seconds} (default 3: the bounded run of the suite;
 * {@code reliability/soak.sh} runs an hour). Every request completes exactly once, in order, with the right data
 * or the right error (the checks of {@link FaultInjectionTest}; a request whose eight attempts were all lost
 * completes with RETRY_EXC_ERR and the rest of the round is flushed); the figures are printed per fault rate.
 */
@Timeout(value = 2, unit = TimeUnit.HOURS)
class SoakTest {
    @Test
    void everyRcOperationCompletesExactlyOnceUnderLossDuplicationAndReordering() {
        long seconds = Long.getLong("jrdma.soak.seconds", 3);
        long seed = Long.getLong("jrdma.soak.seed", 1);
        double[] rates = {0.01, 0.05, 0.10};
        WrOpcode[] ops = {WrOpcode.RDMA_WRITE, WrOpcode.RDMA_WRITE_WITH_IMM, WrOpcode.SEND, WrOpcode.SEND_WITH_IMM,
            WrOpcode.RDMA_READ, WrOpcode.ATOMIC_FETCH_AND_ADD, WrOpcode.ATOMIC_CMP_AND_SWP};
        Map<WrOpcode, Long> rounds = new EnumMap<>(WrOpcode.class);
        long[] requests = new long[rates.length];
        long[] dropped = new long[rates.length];
        long[] exhausted = new long[rates.length];
        StringBuilder exhaustions = new StringBuilder();
        long end = System.nanoTime() + seconds * 1_000_000_000L;
        long round = 0;
        do {
            int k = (int) (round % rates.length);
            WrOpcode op = ops[(int) (round / rates.length % ops.length)];
            FaultInjectionTest.Outcome o = FaultInjectionTest.run(op, seed + round, rates[k], true);
            dropped[k] += o.dropped();
            if (o.exhaustedAt() < 0) {
                requests[k] += FaultInjectionTest.COUNT;
            } else {
                requests[k] += o.exhaustedAt();
                exhausted[k]++;
                if (exhaustions.length() < 400) {
                    exhaustions.append(String.format(" %s seed %d at %d %% (request %d);", op, seed + round,
                            Math.round(rates[k] * 100), o.exhaustedAt()));
                }
            }
            rounds.merge(op, 1L, Long::sum);
            round++;
        } while (System.nanoTime() < end || round < rates.length);
        StringBuilder sb = new StringBuilder("soak: " + seconds + " s, " + round + " rounds, seeds " + seed + ".."
                + (seed + round - 1) + ";");
        for (int k = 0; k < rates.length; k++) {
            sb.append(String.format(" %d %%: %d requests exactly once, %d packets dropped, %d rounds ended by"
                    + " RETRY_EXC_ERR;", Math.round(rates[k] * 100), requests[k], dropped[k], exhausted[k]));
        }
        System.out.println(sb.append(" rounds per opcode ").append(rounds).append("; RETRY_EXC_ERR:")
                .append(exhaustions.isEmpty() ? " none" : exhaustions));
        assertTrue(round >= rates.length);
    }
}
