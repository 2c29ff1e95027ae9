import { addMinutes } from '../office.js';
import type { ExpectedChange } from '../verify.js';
import type { OfficeBuilder } from './office-builder.js';
import type { Random } from './random.js';
import { BACKGROUND_EVENT_TITLES, dateMentions, dayPhrase, ROOMS, timeMentions } from './vocabulary.js';

/**
 * The sub-tasks a row is made of: for each kind, how many state changes it requires, and the builder that plants its
 * target and distractors in the office and says what the instruction asks and which changes it expects. `planFor`
 * picks kinds whose changes add up to a row's difficulty.
 */

export type SubtaskKind =
  | 'reschedule'
  | 'reschedule_notify'
  | 'cancel'
  | 'cancel_notify'
  | 'schedule'
  | 'add_task'
  | 'complete_task'
  | 'task_from_email'
  | 'share_location';

/** How many required state changes each sub-task brings. */
export const SUBTASK_ACTIONS: Record<SubtaskKind, number> = {
  reschedule: 1,
  reschedule_notify: 2,
  cancel: 1,
  cancel_notify: 2,
  schedule: 1,
  add_task: 1,
  complete_task: 1,
  task_from_email: 1,
  share_location: 1,
};

const ONE_ACTION = (Object.keys(SUBTASK_ACTIONS) as SubtaskKind[]).filter((kind) => SUBTASK_ACTIONS[kind] === 1);
const TWO_ACTIONS = (Object.keys(SUBTASK_ACTIONS) as SubtaskKind[]).filter((kind) => SUBTASK_ACTIONS[kind] === 2);

interface Subtask {
  instruction: string;
  /** Evaluated once ids are assigned. */
  expected: () => ExpectedChange[];
}

type SubtaskBuilder = (office: OfficeBuilder) => Subtask;

function reschedule(notify: boolean): SubtaskBuilder {
  return (office) => {
    const { target, lookAlikes } = office.personWithLookAlikes();
    const title = office.random.take(office.oneOnOneTitles);
    const from = office.otherWorkday();
    const to = office.otherWorkday(from);
    const event = office.addEvent(title, from, [target]);
    // The same meeting with a look-alike, and another meeting with the target: both must stay as they are.
    office.addEvent(title, office.otherWorkday(), [office.random.pick(lookAlikes)]);
    office.addEvent(office.random.pick(BACKGROUND_EVENT_TITLES), office.otherWorkday(), [
      target,
      office.random.pick(office.background),
    ]);
    const time = event.start.slice(11);
    const duration = (Date.parse(`${event.end}:00Z`) - Date.parse(`${event.start}:00Z`)) / 60_000;
    const start = `${to}T${time}`;
    const end = addMinutes(start, duration);
    const instruction =
      `Move my ${title} with ${target.name} to ${dayPhrase(to)} at the same time` +
      (notify ? ` and email ${target.first} the new slot.` : '.');
    return {
      instruction,
      expected: () => [
        { kind: 'event_updated', event_id: event.id, fields: { start, end } },
        ...(notify
          ? [
              {
                kind: 'email_sent' as const,
                recipients: [target.email],
                mentions: [dateMentions(to), timeMentions(time)],
              },
            ]
          : []),
      ],
    };
  };
}

function cancel(notify: boolean): SubtaskBuilder {
  return (office) => {
    const title = office.random.take(office.groupTitles);
    const people = office.random.shuffle(office.background).slice(0, office.random.int(2, 3));
    const day = office.otherWorkday();
    const event = office.addEvent(title, day, people);
    // The same meeting on another day (a series): only the named day's goes.
    office.addEvent(title, office.otherWorkday(day), people, { location: event.location });
    const instruction =
      `Cancel the ${title} on ${dayPhrase(day)}` + (notify ? ' and email its attendees that it is cancelled.' : '.');
    return {
      instruction,
      expected: () => [
        { kind: 'event_deleted', event_id: event.id },
        ...(notify
          ? [{ kind: 'email_sent' as const, recipients: [...event.attendees], mentions: [[title], ['cancel']] }]
          : []),
      ],
    };
  };
}

const schedule: SubtaskBuilder = (office) => {
  const { target } = office.personWithLookAlikes();
  const title = office.random.take(office.newMeetingTitles);
  const day = office.otherWorkday();
  const duration = office.random.pick([30, 45, 60]);
  const { start, end, time } = office.slot(day, duration);
  const location = office.random.pick(ROOMS);
  return {
    instruction: `Schedule a ${duration}-minute meeting titled "${title}" with ${target.name} on ${dayPhrase(day)} at ${time} in ${location}.`,
    expected: () => [{ kind: 'event_created', title, start, end, attendees: [target.email], location }],
  };
};

const addTask: SubtaskBuilder = (office) => {
  const [title, lookAlike] = office.random.take(office.taskTitles) as [string, string];
  const due = office.otherWorkday();
  // An open task with a similar title already exists: adding must not touch it.
  office.addTask(lookAlike, office.otherWorkday());
  return {
    instruction: `Add a task "${title}" due ${dayPhrase(due)}.`,
    expected: () => [{ kind: 'task_created', title, due }],
  };
};

const completeTask: SubtaskBuilder = (office) => {
  const [title, lookAlike] = office.random.take(office.taskTitles) as [string, string];
  const task = office.addTask(title, office.otherWorkday());
  office.addTask(lookAlike, office.otherWorkday());
  return {
    instruction: `Mark my task "${title}" as done.`,
    expected: () => [{ kind: 'task_completed', task_id: task.id }],
  };
};

const taskFromEmail: SubtaskBuilder = (office) => {
  const { target, lookAlikes } = office.personWithLookAlikes();
  const asked = office.random.take(office.requestedTasks);
  const decoy = office.random.take(office.requestedTasks);
  const due = office.otherWorkday();
  const greeting = `Hi ${office.user.first},`;
  office.addEmail(
    target,
    'Quick request',
    `${greeting}\n\ncould you add a task "${asked}" to your list, due ${dayPhrase(due)}?\n\nThanks,\n${target.first}`,
    1,
  );
  // An older note from the same person, and the same kind of request from a look-alike.
  office.addEmail(
    target,
    'Notes from last week',
    `${greeting}\n\nthanks for the great discussion last week. No action needed.\n\n${target.first}`,
    6,
  );
  const lookAlike = office.random.pick(lookAlikes);
  office.addEmail(
    lookAlike,
    'Quick request',
    `${greeting}\n\ncould you add a task "${decoy}" to your list, due ${dayPhrase(office.otherWorkday(due))}?\n\nThanks,\n${lookAlike.first}`,
    1,
  );
  return {
    instruction: `Add the task that ${target.name} asked for in their latest email, with the due date they give.`,
    expected: () => [{ kind: 'task_created', title: asked, due }],
  };
};

const shareLocation: SubtaskBuilder = (office) => {
  const { target } = office.personWithLookAlikes();
  const title = office.random.take(office.groupTitles);
  const people = office.random.shuffle(office.background).slice(0, 2);
  const day = office.otherWorkday();
  const event = office.addEvent(title, day, people, { location: office.random.pick(ROOMS.slice(0, -1)) });
  // The same meeting on another day in another room: the e-mail must name the right one.
  office.addEvent(title, office.otherWorkday(day), people, {
    location: office.random.pick(ROOMS.filter((room) => room !== event.location)),
  });
  return {
    instruction: `Email ${target.name} the location of my ${title} on ${dayPhrase(day)}.`,
    expected: () => [{ kind: 'email_sent', recipients: [target.email], mentions: [[event.location]] }],
  };
};

export const BUILDERS: Record<SubtaskKind, SubtaskBuilder> = {
  reschedule: reschedule(false),
  reschedule_notify: reschedule(true),
  cancel: cancel(false),
  cancel_notify: cancel(true),
  schedule,
  add_task: addTask,
  complete_task: completeTask,
  task_from_email: taskFromEmail,
  share_location: shareLocation,
};

/** Sub-task kinds whose actions add up to `difficulty` (1..5), in one to three sub-tasks. */
export function planFor(difficulty: number, random: Random): SubtaskKind[] {
  const compositions: number[][] = [];
  const extend = (parts: number[], left: number): void => {
    if (left === 0) return void compositions.push(parts);
    if (parts.length === 3) return;
    for (const part of [1, 2]) if (part <= left) extend([...parts, part], left - part);
  };
  extend([], difficulty);
  if (compositions.length === 0) throw new Error(`difficulty ${difficulty} is out of range: choose 1 to 5`);
  const parts = random.pick(compositions);
  const kinds = new Set<SubtaskKind>();
  return parts.map((size) => {
    const choices = (size === 1 ? ONE_ACTION : TWO_ACTIONS).filter((kind) => !kinds.has(kind));
    const kind = random.pick(choices.length ? choices : size === 1 ? ONE_ACTION : TWO_ACTIONS);
    kinds.add(kind);
    return kind;
  });
}
