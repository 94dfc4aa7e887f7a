/** The router's counters (system.cluster.metrics()), one object its parts (asks, tells, parking, handoffs) share. */
export function routerCounts() {
  return {
    asksOut: 0,
    tellsOut: 0,
    /**
     * Tells the silos they went to confirmed (acks): with lostTells and unconfirmedTells, every tellsOut (and forward)
     * is accounted for.
     */
    tellsConfirmed: 0,
    /** Message entries received and sent to other members (forwards included): control.ts balances them. */
    messagesIn: 0,
    messagesOut: 0,
    forwarded: 0,
    parked: 0,
    lostTells: 0,
    asksFailedDead: 0,
    malformed: 0,
    lateReplies: 0,
    localRejected: 0,
    heldForHandOff: 0,
    handOffsSent: 0,
    handOffsTimedOut: 0,
    claims: 0,
    partitionsClaimed: 0,
    claimFailures: 0,
  };
}
export type RouterCounts = ReturnType<typeof routerCounts>;
