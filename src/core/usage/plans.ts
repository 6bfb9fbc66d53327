/**
 * Plans (docs/http.md, Usage; docs/architecture.md, "Usage and plan limits"): the configured plans,
 * the default one, which plan applies to a principal (its replicated `plan` assignment, or the
 * default), and an operator's assignment. The choice of the default plan and the views are plain
 * functions.
 */
import { AppError } from '../../errors/index.ts';
import type { Logger } from '../../log/index.ts';
import type { Replicator, StateReader } from '../replication/ports.ts';
import { stateView } from '../replication/views.ts';
import { planKind, USAGE_PRINCIPAL_RE, type PlanBody } from './records.ts';
import type { Plan, PlanAssignmentView, UsageService } from './types.ts';

/** Options of {@link createUsagePlans} (from `usage` in the node config). */
export interface UsagePlansOptions {
  /** The configured plans; at least one. */
  plans: readonly Plan[];
  /** Plan of principals without an assignment; `""` = the first of {@link plans}. */
  defaultPlan: string;
}

/** Dependencies of {@link createUsagePlans}. */
export interface UsagePlansDeps {
  replicator: Pick<Replicator, 'replicate'>;
  state: StateReader;
  /** Wall clock, Unix ms: the time of an assignment. */
  clock: () => number;
  /** The usage module's logger. */
  logger: Logger;
}

/** The plan that applies to a principal, and the assignment it comes from (none: the default plan). */
export interface AppliedPlan {
  plan: Plan;
  assignment: PlanBody | undefined;
}

/** The plans of one node: the operator's half of the usage service, and which plan applies. */
export interface UsagePlans extends Pick<UsageService, 'assignPlan' | 'planOf'> {
  /** The plan that applies to `principalId`: its assigned one when this node knows it, else the default. */
  planFor(principalId: string): Promise<AppliedPlan>;
}

/**
 * The default plan of the options: the named one (the last of that id, as plans are looked up by id),
 * or the first when the name is `""`; throws on a bad config.
 */
export function defaultPlanOf(options: UsagePlansOptions): Plan {
  if (options.plans.length === 0) throw new Error('usage: at least one plan is needed');
  const plan = options.defaultPlan === '' ? options.plans[0] : options.plans.findLast((p) => p.id === options.defaultPlan);
  if (!plan) throw new Error(`usage: defaultPlan "${options.defaultPlan}" is not a configured plan`);
  return plan;
}

/** A principal's plan as an operator sees it. */
export function assignmentView(principalId: string, plan: Plan, assignment: PlanBody | undefined): PlanAssignmentView {
  return { principalId, planId: plan.id, assigned: assignment !== undefined, assignedAt: assignment ? new Date(assignment.assignedAt).toISOString() : null };
}

/** 400 unless `principalId` is one usage is counted for. */
export function checkPrincipalId(principalId: string): void {
  if (!USAGE_PRINCIPAL_RE.test(principalId)) throw new AppError('BAD_REQUEST', 'principalId must be a principal id (UUIDv4)');
}

/** Create the plans of one node; throws when the options name no usable default plan. */
export function createUsagePlans(options: UsagePlansOptions, deps: UsagePlansDeps): UsagePlans {
  const log = deps.logger;
  const defaultPlan = defaultPlanOf(options);
  const plansById = new Map(options.plans.map((p) => [p.id, p]));
  const assignments = stateView(deps.state, planKind);
  const unknownPlansLogged = new Set<string>();

  async function planFor(principalId: string): Promise<AppliedPlan> {
    const assignment = await assignments.get(principalId);
    if (!assignment) return { plan: defaultPlan, assignment };
    const plan = plansById.get(assignment.planId);
    if (!plan && !unknownPlansLogged.has(assignment.planId)) {
      unknownPlansLogged.add(assignment.planId);
      log.warn({ planId: assignment.planId }, 'assigned plan is not configured on this node; the default plan applies');
    }
    return { plan: plan ?? defaultPlan, assignment };
  }

  return {
    planFor,

    async assignPlan(principalId, planId) {
      checkPrincipalId(principalId);
      const plan = plansById.get(planId);
      if (!plan) throw new AppError('BAD_REQUEST', `Unknown plan "${planId.slice(0, 64)}"; configured: ${[...plansById.keys()].join(', ')}`);
      // Web2 principals must exist; wallet addresses (Web3) have no principal record.
      if (!principalId.startsWith('0x') && !(await deps.state.get('principal', principalId))) throw new AppError('NOT_FOUND', 'Principal not found');
      const body: PlanBody = { planId, assignedAt: deps.clock() };
      await deps.replicator.replicate({ kind: planKind.name, key: principalId, body });
      log.info({ planId }, 'plan assigned');
      return assignmentView(principalId, plan, body);
    },

    async planOf(principalId) {
      checkPrincipalId(principalId);
      const { plan, assignment } = await planFor(principalId);
      return assignmentView(principalId, plan, assignment);
    },
  };
}
