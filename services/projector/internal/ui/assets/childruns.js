// Child runs: a subPlan step starts a child run (docs/plans.md, "Child
// runs"). This module draws the links between the two pages: on a child's
// page the breadcrumb to its parent run and the step that started it
// (RunSnapshot.parent), on a parent's the subPlan step's mark and the link
// to the child its current attempt started (StepSnapshot.childRunId), and
// the address of a run's children in the runs list (/?parent=RUN_ID).

import { h, icon, runHref } from './dom.js';
import { shortId } from './format.js';

// isSubPlan reports whether the plan step p (api.PlanStep, or a plan's
// step) starts a child run.
export function isSubPlan(p) {
  return p?.kind === 'subPlan';
}

// hasSubPlans reports whether any of the plan steps starts a child run.
export function hasSubPlans(planSteps) {
  return Array.isArray(planSteps) && planSteps.some(isSubPlan);
}

// childRunsHref is the address of the runs list of runId's child runs.
export function childRunsHref(runId) {
  return `/?${new URLSearchParams({ parent: runId })}`;
}

// parentCrumbs are the breadcrumb parts of a child run whose
// RunSnapshot.parent is parent ({runId, stepId, logicalAttemptId,
// planVersion, depth}): its parent run, linked to the parent's page, and
// the step that started it, linked to that step opened on the parent's
// page. null for a run that has no parent.
export function parentCrumbs(parent) {
  if (!parent?.runId) return null;
  const attempt = Number(parent.logicalAttemptId) > 1 ? ` (retry #${Number(parent.logicalAttemptId) - 1})` : '';
  return h('span', {
    class: 'crumbs-parent', testid: 'run-parent',
    'data-run-id': parent.runId, 'data-step-id': parent.stepId || '', 'data-depth': parent.depth ?? '',
  },
  h('a', { href: runHref(parent.runId), 'data-nav': true, class: 'mono', testid: 'run-parent-link', title: `parent run ${parent.runId}` },
    h('span', { class: 'crumb-label', text: 'parent ' }), shortId(parent.runId)),
  h('span', { class: 'crumb-sep', text: '/' }),
  parent.stepId
    ? h('a', { href: runHref(parent.runId, parent.stepId), 'data-nav': true, testid: 'run-parent-step', title: `the subPlan step that started this run${attempt}` },
      h('span', { class: 'crumb-label', text: 'step ' }), h('code', { text: parent.stepId }))
    : null,
  parent.stepId ? h('span', { class: 'crumb-sep', text: '/' }) : null);
}

// depthChip is the chip beside a child run's id that says how deep it is:
// 1 for a child of a run a caller started. null for a run with no parent.
export function depthChip(parent) {
  if (!parent?.runId) return null;
  return h('span', { class: 'chip chip-child', testid: 'run-depth', title: 'a child run: how many runs started it, one inside the other',
    text: `child run · depth ${parent.depth ?? '?'}` });
}

// subPlanWhat is a subPlan node's line in the steps graph: the plan its
// child runs (planRef, when the plan graph carries it) or "inline plan".
export function subPlanWhat(p) {
  const ref = p?.planRef;
  let what;
  if (ref?.planId) what = h('code', { text: `${ref.planId}@${ref.planVersion || 'latest'}` });
  else if (p?.plan) what = h('span', { class: 'muted', text: 'an inline plan' });
  return h('div', { class: 'node-what node-what-child', testid: 'step-subplan' },
    icon('child'), 'starts a child run', what ? [' of ', what] : null);
}

// childRunLink is the link to the child run childRunId, or null when the
// step has started none yet: there is nothing to open before it has.
export function childRunLink(childRunId, testid, { long = false } = {}) {
  if (!childRunId) return null;
  return h('a', { href: runHref(childRunId), 'data-nav': true, class: 'child-run-link mono', testid, 'data-run-id': childRunId, title: childRunId },
    icon('child'), long ? childRunId : shortId(childRunId));
}

// childRunDetail is the step panel's part for a subPlan step whose
// snapshot is st: the child run its current attempt started, linked, or,
// before it started one, a note with nothing to click.
export function childRunDetail(st) {
  const id = st?.childRunId;
  return h('div', { class: 'child-run', testid: 'detail-child-run' },
    h('span', { class: 'child-run-label', text: 'Child run' }),
    id
      ? [childRunLink(id, 'detail-child-run-link', { long: true }),
        Number(st.logicalAttemptId) > 1 ? h('span', { class: 'muted small', text: 'started by the current attempt' }) : null]
      : h('span', { class: 'muted small', testid: 'detail-child-run-none', text: 'Not started yet: it starts when the step is scheduled.' }));
}
