import { z } from 'zod';
import {
  addressSet,
  DATE,
  DATE_TIME,
  normalizeText,
  normalizeTitle,
  type CalendarEvent,
  type Email,
  type Office,
  type Task,
} from './office.js';

/**
 * The workplace verifier: compares a session's final office with its seeded office and the row's
 * `expected_changes`. Each expected change is one state check; every other difference between the two offices is
 * an unexpected change. Reward 1 exactly when every check passes and nothing else changed — partial progress
 * shows in the extras (`state_checks_passed` of `state_checks_total`, `unexpected_changes`), with one readable
 * line per failed check or stray change so a profile says *how* an agent failed.
 *
 * What counts is the final state, so repeating an idempotent action (completing a task twice, the same update
 * twice) costs nothing, while a duplicate side effect (a second e-mail, a second copy of an event) is one
 * unexpected change. Addresses compare normalised (case, whitespace, `Name <addr>`), titles case- and
 * whitespace-insensitively; an event keeps its identity by id, so deleting and re-creating it is not an update.
 */

const mention = z.array(z.string().min(1).max(200)).min(1).max(20);

const EventFields = z.object({
  title: z.string().max(500).optional(),
  start: z.string().regex(DATE_TIME).optional(),
  end: z.string().regex(DATE_TIME).optional(),
  attendees: z.array(z.string().max(320)).max(100).optional(),
  location: z.string().max(500).optional(),
});

export const ExpectedChangeSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('event_updated'), event_id: z.string().max(100), fields: EventFields }),
  z.object({ kind: z.literal('event_deleted'), event_id: z.string().max(100) }),
  z.object({
    kind: z.literal('event_created'),
    title: z.string().max(500),
    start: z.string().regex(DATE_TIME),
    end: z.string().regex(DATE_TIME),
    attendees: z.array(z.string().max(320)).max(100),
    location: z.string().max(500).optional(),
  }),
  z.object({
    kind: z.literal('email_sent'),
    /** Everyone the e-mail goes to (to and cc together), the user excluded. */
    recipients: z.array(z.string().max(320)).min(1).max(100),
    /** Each entry lists alternatives; one of them must appear in the subject or body (case-insensitive). */
    mentions: z.array(mention).max(20),
  }),
  z.object({ kind: z.literal('task_created'), title: z.string().max(500), due: z.string().regex(DATE).nullable() }),
  z.object({ kind: z.literal('task_completed'), task_id: z.string().max(100) }),
]);

export const ExpectedChangesSchema = z.array(ExpectedChangeSchema).min(1).max(50);

export type ExpectedChange = z.infer<typeof ExpectedChangeSchema>;

export interface Verdict {
  reward: number;
  state_checks_passed: number;
  state_checks_total: number;
  /** passed / total: the partial credit a profile averages. */
  state_check_fraction: number;
  unexpected_changes: number;
  /** One line per expected change the final state lacks. */
  failed_checks: string[];
  /** One line per change nobody asked for. */
  unexpected_change_details: string[];
}

const EVENT_FIELDS = ['title', 'start', 'end', 'attendees', 'location'] as const;
type EventField = (typeof EVENT_FIELDS)[number];

function sameField(field: EventField, a: CalendarEvent | Record<string, unknown>, b: unknown, user: string): boolean {
  const left = (a as Record<string, unknown>)[field];
  if (field === 'attendees')
    return addressSet(left as string[], user).join(',') === addressSet(b as string[], user).join(',');
  if (field === 'title' || field === 'location') return normalizeTitle(String(left)) === normalizeTitle(String(b));
  return left === b;
}

/** The fields of `after` that differ from `before`. */
function changedFields(before: CalendarEvent, after: CalendarEvent, user: string): EventField[] {
  return EVENT_FIELDS.filter((field) => !sameField(field, after, before[field], user));
}

function emailText(email: Email): string {
  return normalizeText(`${email.subject}\n${email.body}`);
}

function emailMatches(email: Email, change: Extract<ExpectedChange, { kind: 'email_sent' }>, user: string): boolean {
  const recipients = addressSet([...email.to, ...email.cc], user);
  if (recipients.join(',') !== addressSet(change.recipients, user).join(',')) return false;
  const content = emailText(email);
  return change.mentions.every((alternatives) =>
    alternatives.some((alternative) => content.includes(normalizeText(alternative))),
  );
}

function eventMatches(
  event: CalendarEvent,
  change: Extract<ExpectedChange, { kind: 'event_created' }>,
  user: string,
): boolean {
  return (
    normalizeTitle(event.title) === normalizeTitle(change.title) &&
    event.start === change.start &&
    event.end === change.end &&
    sameField('attendees', event, change.attendees, user) &&
    (change.location === undefined || sameField('location', event, change.location, user))
  );
}

function taskMatches(task: Task, change: Extract<ExpectedChange, { kind: 'task_created' }>): boolean {
  return normalizeTitle(task.title) === normalizeTitle(change.title) && task.due === change.due;
}

function describeChange(change: ExpectedChange): string {
  switch (change.kind) {
    case 'event_updated':
      return `event ${change.event_id} updated to ${JSON.stringify(change.fields)}`;
    case 'event_deleted':
      return `event ${change.event_id} deleted`;
    case 'event_created':
      return `event '${change.title}' created ${change.start}–${change.end.slice(11)} with ${change.attendees.join(', ') || 'nobody'}`;
    case 'email_sent':
      return `e-mail sent to ${change.recipients.join(', ')} mentioning ${change.mentions.map((m) => m.join(' or ')).join(' and ')}`;
    case 'task_created':
      return `task '${change.title}' created${change.due ? ` due ${change.due}` : ' without a due date'}`;
    case 'task_completed':
      return `task ${change.task_id} completed`;
  }
}

/** Judge `after` (the session's final office) against `before` (as seeded) and the expected changes. */
export function verifyOffice(before: Office, after: Office, expected: readonly ExpectedChange[]): Verdict {
  const user = before.user.email;
  const failed: string[] = [];
  const unexpected: string[] = [];
  let passed = 0;
  const check = (ok: boolean, change: ExpectedChange, why: string): void => {
    if (ok) passed += 1;
    else failed.push(`${describeChange(change)}: ${why}`);
  };

  const beforeEvents = new Map(before.events.map((event) => [event.id, event]));
  const afterEvents = new Map(after.events.map((event) => [event.id, event]));
  const newEvents = after.events.filter((event) => !beforeEvents.has(event.id));
  const beforeEmails = new Set(before.emails.map((email) => email.id));
  const newEmails = after.emails.filter((email) => !beforeEmails.has(email.id));
  const beforeTasks = new Map(before.tasks.map((task) => [task.id, task]));
  const newTasks = after.tasks.filter((task) => !beforeTasks.has(task.id));

  /** Fields of existing events that an expected update explains, per event id. */
  const explainedFields = new Map<string, Set<string>>();
  const explainedDeletions = new Set<string>();
  const explainedCompletions = new Set<string>();
  const usedEvents = new Set<CalendarEvent>();
  const usedEmails = new Set<Email>();
  const usedTasks = new Set<Task>();

  for (const change of expected) {
    switch (change.kind) {
      case 'event_updated': {
        const event = afterEvents.get(change.event_id);
        const fields = Object.entries(change.fields).filter(([, value]) => value !== undefined) as [
          EventField,
          unknown,
        ][];
        explainedFields.set(change.event_id, new Set(fields.map(([field]) => field)));
        if (!event) {
          check(false, change, beforeEvents.has(change.event_id) ? 'the event was deleted' : 'no such event');
          break;
        }
        const wrong = fields
          .filter(([field, value]) => !sameField(field, event, value, user))
          .map(([field]) => `${field} is ${JSON.stringify(event[field])}`);
        check(wrong.length === 0, change, wrong.join(', '));
        break;
      }
      case 'event_deleted':
        explainedDeletions.add(change.event_id);
        check(!afterEvents.has(change.event_id), change, 'the event is still on the calendar');
        break;
      case 'event_created': {
        const event = newEvents.find(
          (candidate) => !usedEvents.has(candidate) && eventMatches(candidate, change, user),
        );
        if (event) usedEvents.add(event);
        check(
          event !== undefined,
          change,
          newEvents.length
            ? `no new event matches (new: ${newEvents.map((e) => `'${e.title}' ${e.start}`).join('; ')})`
            : 'no event was created',
        );
        break;
      }
      case 'email_sent': {
        const email = newEmails.find(
          (candidate) => !usedEmails.has(candidate) && emailMatches(candidate, change, user),
        );
        if (email) usedEmails.add(email);
        check(
          email !== undefined,
          change,
          newEmails.length
            ? `no sent e-mail has these recipients and mentions (sent to: ${newEmails.map((e) => [...e.to, ...e.cc].join('+')).join('; ')})`
            : 'no e-mail was sent',
        );
        break;
      }
      case 'task_created': {
        const task = newTasks.find((candidate) => !usedTasks.has(candidate) && taskMatches(candidate, change));
        if (task) usedTasks.add(task);
        check(
          task !== undefined,
          change,
          newTasks.length
            ? `no new task matches (new: ${newTasks.map((t) => `'${t.title}' due ${t.due ?? 'none'}`).join('; ')})`
            : 'no task was created',
        );
        break;
      }
      case 'task_completed': {
        explainedCompletions.add(change.task_id);
        const task = after.tasks.find((candidate) => candidate.id === change.task_id);
        check(task?.status === 'done', change, task ? 'the task is still open' : 'no such task');
        break;
      }
    }
  }

  for (const event of before.events) {
    const now = afterEvents.get(event.id);
    if (!now) {
      if (!explainedDeletions.has(event.id)) unexpected.push(`event ${event.id} '${event.title}' was deleted`);
      continue;
    }
    const allowed = explainedFields.get(event.id) ?? new Set<string>();
    const stray = changedFields(event, now, user).filter((field) => !allowed.has(field));
    if (stray.length) unexpected.push(`event ${event.id} '${event.title}' changed ${stray.join(', ')}`);
  }
  for (const event of newEvents)
    if (!usedEvents.has(event)) unexpected.push(`event '${event.title}' ${event.start} was created`);
  for (const email of newEmails)
    if (!usedEmails.has(email))
      unexpected.push(`e-mail '${email.subject}' to ${[...email.to, ...email.cc].join(', ')} was sent`);
  for (const task of newTasks) if (!usedTasks.has(task)) unexpected.push(`task '${task.title}' was created`);
  for (const task of after.tasks) {
    const was = beforeTasks.get(task.id);
    if (was && was.status !== task.status && !explainedCompletions.has(task.id))
      unexpected.push(`task ${task.id} '${task.title}' was marked ${task.status}`);
  }
  for (const id of beforeEmails)
    if (!after.emails.some((email) => email.id === id)) unexpected.push(`e-mail ${id} disappeared`);

  return {
    reward: passed === expected.length && unexpected.length === 0 ? 1 : 0,
    state_checks_passed: passed,
    state_checks_total: expected.length,
    state_check_fraction: passed / expected.length,
    unexpected_changes: unexpected.length,
    failed_checks: failed,
    unexpected_change_details: unexpected,
  };
}

/**
 * The aggregate metrics the workplace adds: mean reward and mean partial credit per difficulty
 * (`mean/reward@difficulty_3`, `mean/state_check_fraction@difficulty_3`), so one run shows where agents start failing.
 */
export function metricsByDifficulty(
  tasks: ReadonlyArray<ReadonlyArray<Record<string, unknown>>>,
): Record<string, number> {
  const sums = new Map<number, { n: number; reward: number; fraction: number }>();
  for (const rollouts of tasks) {
    for (const rollout of rollouts) {
      const { difficulty, reward, state_check_fraction: fraction } = rollout;
      if (typeof difficulty !== 'number' || typeof reward !== 'number' || typeof fraction !== 'number') continue;
      const sum = sums.get(difficulty) ?? { n: 0, reward: 0, fraction: 0 };
      sum.n += 1;
      sum.reward += reward;
      sum.fraction += fraction;
      sums.set(difficulty, sum);
    }
  }
  const metrics: Record<string, number> = {};
  for (const [difficulty, sum] of [...sums].sort(([a], [b]) => a - b)) {
    metrics[`mean/reward@difficulty_${difficulty}`] = sum.reward / sum.n;
    metrics[`mean/state_check_fraction@difficulty_${difficulty}`] = sum.fraction / sum.n;
  }
  return metrics;
}
