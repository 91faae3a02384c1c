// The planner's answer (GET /v1/plan) as the experiment page's table rows: pure, shared with the unit tests.

export const PLAN_OBJECTIVES = [
  ['cost', 'cheapest expected cost'],
  ['time', 'shortest expected t_sum'],
];

// The first `limit` ranked offers of a plan: {rank, config, billing, tSum, tLow, tHigh, billedS, cost, currency,
// reason, feasible}, feasible ones first as the planner ranked them.
export function planRows(plan, limit = 5) {
  return (plan?.ranked || []).slice(0, limit).map((e, i) => ({
    rank: i + 1,
    config: e.config,
    billing: e.billing,
    tSum: e.t_sum,
    tLow: e.t_sum_p10,
    tHigh: e.t_sum_p90,
    billedS: e.billed_s,
    cost: e.cost,
    currency: e.currency,
    reason: e.reason,
    feasible: e.feasible !== false,
  }));
}
