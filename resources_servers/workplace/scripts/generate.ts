import { writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { addDays, addMinutes, weekdayOf, type CalendarEvent, type Contact, type Email, type Office, type Task } from '../office.js';
import { WORKPLACE_TOOLS } from '../app.js';
import type { ExpectedChange } from '../verify.js';
import { seededRandom } from '../../../src/seeded-random.js';
import { readGeneratorFlags, seedFlag } from '../../../src/generator-args.js';

/**
 * Seeded workplace tasks of graded difficulty:
 *
 *   node dist/resources_servers/workplace/scripts/generate.js --rows 200 --seed 12 --out data/validation.jsonl [--difficulty 3]
 *   node dist/resources_servers/workplace/scripts/generate.js --example --seed 1 --out data/example.jsonl
 *   (without --out the rows go to stdout; defaults: --rows 200 --seed 0)
 *
 * A row's difficulty is the number of state changes it requires (1 to 5), made of one to three sub-tasks (move a
 * meeting, cancel one, schedule one, add/complete a task, turn an e-mailed request into a task, share a meeting's
 * room; the first two optionally also e-mail the people concerned). Each sub-task plants its own targets and
 * distractors in a fresh office — people with similar names (Dana Whitfield, Dana Whitman, Diana Whitfield), the
 * same meeting on another day, tasks whose titles differ by a word — among background mail, events and tasks that
 * must stay untouched. Without `--difficulty`, rows cycle through 1..5. Same seed, same bytes.
 */

export const DOMAIN = 'northwind.example';

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

export interface WorkplaceRow {
  task_id: string;
  difficulty: number;
  subtasks: SubtaskKind[];
  responses_create_params: {
    input: Array<{ role: 'system' | 'user'; content: string }>;
    tools: typeof WORKPLACE_TOOLS;
  };
  office: Office;
  expected_changes: ExpectedChange[];
}

class Random {
  constructor(readonly next: () => number) {}
  int(low: number, high: number): number {
    return low + Math.floor(this.next() * (high - low + 1));
  }
  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)]!;
  }
  shuffle<T>(items: readonly T[]): T[] {
    const copy = [...items];
    for (let i = copy.length - 1; i > 0; i--) {
      const j = Math.floor(this.next() * (i + 1));
      [copy[i], copy[j]] = [copy[j]!, copy[i]!];
    }
    return copy;
  }
  /** Take one item out of `pool` (so no other sub-task of the row gets it). */
  take<T>(pool: T[]): T {
    const index = Math.floor(this.next() * pool.length);
    return pool.splice(index, 1)[0]!;
  }
}

// Names in look-alike pairs: each target person brings the two look-alikes as distractors.
const FIRST_NAMES: Record<string, string> = {
  Dana: 'Diana', Jon: 'John', Mia: 'Maya', Erik: 'Eric', Lena: 'Lina', Sara: 'Sarah', Alan: 'Allan', Kate: 'Katie',
  Theo: 'Teo', Nico: 'Nika', Ivan: 'Ivana', Marta: 'Martha', Omar: 'Omari', Rosa: 'Rose', Felix: 'Felipe', Anya: 'Anja',
};
const LAST_NAMES: Record<string, string> = {
  Whitfield: 'Whitman', Okafor: 'Okoro', Lindqvist: 'Lindgren', Moreau: 'Morel', Castillo: 'Castell', Nakamura: 'Nakamoto',
  Brennan: 'Brannan', Petrov: 'Petrova', Sandoval: 'Sandberg', Holt: 'Holtz', Ferreira: 'Ferrara', Kowalski: 'Kowalczyk',
  Haddad: 'Hadad', Jensen: 'Jenson', Varga: 'Vargas', Quinn: 'Quinlan',
};
const BACKGROUND_PEOPLE = [
  'Grace Abernathy', 'Tomas Reyes', 'Hannah Schultz', 'Wei Zhang', 'Priya Raman', 'Lucas Fontaine', 'Amara Nwosu',
  'Bjorn Eklund', 'Chloe Dubois', 'Samir Khoury', 'Ines Carvalho', 'Owen Gallagher',
];
const USERS = ['Alex Morgan', 'Jordan Ellis', 'Casey Brooks', 'Riley Chen', 'Morgan Blake', 'Taylor Singh'];
const TEAMS = ['Finance', 'Design', 'Engineering', 'Sales', 'Legal', 'Operations', 'Marketing', 'People'];
const JOB_TITLES = ['Manager', 'Analyst', 'Engineer', 'Designer', 'Counsel', 'Coordinator', 'Director', 'Specialist'];
const ROOMS = ['Room Aster', 'Room Birch', 'Room Cedar', 'Room Dahlia', 'Room Elm', 'Room Fern', 'Room Juniper', 'Room Maple', 'Video call'];

const ONE_ON_ONE_TITLES = ['1:1', 'Weekly check-in', 'Coffee chat', 'Mentoring session', 'Career chat', 'Project sync', 'Pairing session'];
const GROUP_TITLES = ['Vendor demo', 'Budget review', 'Design critique', 'Roadmap planning', 'Quarterly forecast', 'Launch retro', 'Hiring debrief', 'Security review'];
const NEW_MEETING_TITLES = ['Contract walkthrough', 'Pricing workshop', 'Onboarding plan', 'Offsite logistics', 'Data migration kickoff', 'Partner intro call', 'Interview loop prep'];
const BACKGROUND_EVENT_TITLES = ['All-hands', 'Team standup', 'Lunch and learn', 'Town hall', 'Sprint planning', 'Office hours'];
const TASK_TITLES = [
  ['Renew parking permit', 'Renew parking permit for visitors'],
  ['Submit expense report', 'Submit expense report for March travel'],
  ['Book flights to Lisbon', 'Book hotel in Lisbon'],
  ['Review the Q3 budget', 'Review the Q2 budget'],
  ['Update the team wiki', 'Update the onboarding wiki'],
  ['Order new badge', 'Order new laptop'],
  ['Send the signed NDA', 'Send the draft NDA'],
  ['Prepare the board slides', 'Prepare the sales slides'],
  ['Schedule the vendor audit', 'Cancel the vendor audit'],
  ['Draft the hiring plan', 'Draft the training plan'],
];
const REQUESTED_TASKS = [
  'Share the Q3 revenue figures', 'Sign the supplier contract', 'Review the press release', 'Approve the travel budget',
  'Send feedback on the mockups', 'Confirm the offsite headcount', 'Fill in the security questionnaire', 'Update the pricing sheet',
];
const BACKGROUND_TASKS = ['Clean up the shared drive', 'Read the new travel policy', 'Plan the team lunch', 'Archive old tickets', 'Refresh the OKR doc'];
const NEWSLETTERS = [
  ['IT Helpdesk', 'it-helpdesk', 'Scheduled maintenance this weekend', 'The VPN will be unavailable on Saturday from 22:00 to 02:00.'],
  ['People Team', 'people', 'Benefits enrolment is open', 'Enrolment for next year closes at the end of the month.'],
  ['Facilities', 'facilities', 'New coffee machines', 'The third floor kitchen has new coffee machines. Enjoy!'],
  ['Company News', 'news', 'This week at Northwind', 'Highlights: two new customers, one new office, and a bake sale on Friday.'],
];

const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];

/** The ways an e-mail may name a date: the ISO date, "March 13", "13 March", "Mar 13", "13 Mar", or the weekday. */
export function dateMentions(date: string): string[] {
  const month = MONTHS[Number(date.slice(5, 7)) - 1]!;
  const day = String(Number(date.slice(8, 10)));
  return [date, `${month} ${day}`, `${day} ${month}`, `${month.slice(0, 3)} ${day}`, `${day} ${month.slice(0, 3)}`, weekdayOf(date)];
}

/** The ways an e-mail may name a time of day: 14:00, 2:00 pm, 2pm, 2 p.m. (and 9:00 for 09:00). */
export function timeMentions(time: string): string[] {
  const hours = Number(time.slice(0, 2));
  const minutes = time.slice(3, 5);
  const twelve = String(hours % 12 === 0 ? 12 : hours % 12);
  const suffixes = hours < 12 ? ['am', 'a.m.'] : ['pm', 'p.m.'];
  const clock = minutes === '00' ? [twelve, `${twelve}:00`] : [`${twelve}:${minutes}`];
  const forms = [time];
  if (time.startsWith('0')) forms.push(time.slice(1));
  for (const base of clock) for (const suffix of suffixes) forms.push(`${base} ${suffix}`, `${base}${suffix}`);
  return forms;
}

/** "Friday (2026-03-13)": the weekday for people, the date so nothing is ambiguous. */
export function dayPhrase(date: string): string {
  return `${weekdayOf(date)} (${date})`;
}

interface Person {
  name: string;
  first: string;
  email: string;
}

/** Everything one row's sub-tasks share while the office is built. */
class OfficeBuilder {
  readonly contacts: Contact[] = [];
  readonly events: CalendarEvent[] = [];
  readonly emails: Email[] = [];
  readonly tasks: Task[] = [];
  readonly targetFirstNames = Object.keys(FIRST_NAMES);
  readonly targetLastNames = Object.keys(LAST_NAMES);
  readonly oneOnOneTitles = [...ONE_ON_ONE_TITLES];
  readonly groupTitles = [...GROUP_TITLES];
  readonly newMeetingTitles = [...NEW_MEETING_TITLES];
  readonly taskTitles = [...TASK_TITLES];
  readonly requestedTasks = [...REQUESTED_TASKS];
  readonly background: Person[];
  readonly workdays: string[];

  constructor(
    readonly random: Random,
    readonly today: string,
    readonly user: Person,
  ) {
    this.workdays = [1, 2, 3, 4, 7, 8].map((days) => addDays(today, days)); // Tue..Fri and the next Mon, Tue
    this.background = random.shuffle(BACKGROUND_PEOPLE).slice(0, 6).map((name) => this.addContact(name));
  }

  addContact(name: string): Person {
    const [first, ...rest] = name.split(' ');
    const person = { name, first: first!, email: `${first!.toLowerCase()}.${rest.join('').toLowerCase()}@${DOMAIN}` };
    if (!this.contacts.some((contact) => contact.email === person.email)) {
      this.contacts.push({ id: '', name, email: person.email, team: this.random.pick(TEAMS), title: this.random.pick(JOB_TITLES) });
    }
    return person;
  }

  /** A target person plus the two look-alikes (first name or surname one letter or so apart). */
  personWithLookAlikes(): { target: Person; lookAlikes: Person[] } {
    const first = this.random.take(this.targetFirstNames);
    const last = this.random.take(this.targetLastNames);
    const target = this.addContact(`${first} ${last}`);
    const lookAlikes = [this.addContact(`${first} ${LAST_NAMES[last]}`), this.addContact(`${FIRST_NAMES[first]} ${last}`)];
    return { target, lookAlikes };
  }

  slot(date: string, duration: number): { start: string; end: string; time: string } {
    const time = `${String(this.random.int(9, 16)).padStart(2, '0')}:${this.random.pick(['00', '30'])}`;
    const start = `${date}T${time}`;
    return { start, end: addMinutes(start, duration), time };
  }

  addEvent(title: string, date: string, attendees: Person[], options: { duration?: number; location?: string } = {}): CalendarEvent {
    const duration = options.duration ?? this.random.pick([30, 45, 60]);
    const { start, end } = this.slot(date, duration);
    const event = { id: '', title, start, end, attendees: attendees.map((person) => person.email), location: options.location ?? this.random.pick(ROOMS) };
    this.events.push(event);
    return event;
  }

  addEmail(from: Person, subject: string, body: string, daysAgo: number): Email {
    const email: Email = {
      id: '',
      folder: 'inbox',
      from: from.email,
      from_name: from.name,
      to: [this.user.email],
      cc: [],
      subject,
      body,
      date: `${addDays(this.today, -daysAgo)}T${String(this.random.int(8, 17)).padStart(2, '0')}:${String(this.random.int(0, 59)).padStart(2, '0')}`,
    };
    this.emails.push(email);
    return email;
  }

  addTask(title: string, due: string | null): Task {
    const task: Task = { id: '', title, due, status: 'open' };
    this.tasks.push(task);
    return task;
  }

  otherWorkday(...not: string[]): string {
    return this.random.pick(this.workdays.filter((day) => !not.includes(day)));
  }
}

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
    office.addEvent(office.random.pick(BACKGROUND_EVENT_TITLES), office.otherWorkday(), [target, office.random.pick(office.background)]);
    const time = event.start.slice(11);
    const duration = (Date.parse(`${event.end}:00Z`) - Date.parse(`${event.start}:00Z`)) / 60_000;
    const start = `${to}T${time}`;
    const end = addMinutes(start, duration);
    const instruction =
      `Move my ${title} with ${target.name} to ${dayPhrase(to)} at the same time` + (notify ? ` and email ${target.first} the new slot.` : '.');
    return {
      instruction,
      expected: () => [
        { kind: 'event_updated', event_id: event.id, fields: { start, end } },
        ...(notify ? [{ kind: 'email_sent' as const, recipients: [target.email], mentions: [dateMentions(to), timeMentions(time)] }] : []),
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
    const instruction = `Cancel the ${title} on ${dayPhrase(day)}` + (notify ? ' and email its attendees that it is cancelled.' : '.');
    return {
      instruction,
      expected: () => [
        { kind: 'event_deleted', event_id: event.id },
        ...(notify ? [{ kind: 'email_sent' as const, recipients: [...event.attendees], mentions: [[title], ['cancel']] }] : []),
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
  office.addEmail(target, 'Quick request', `${greeting}\n\ncould you add a task "${asked}" to your list, due ${dayPhrase(due)}?\n\nThanks,\n${target.first}`, 1);
  // An older note from the same person, and the same kind of request from a look-alike.
  office.addEmail(target, 'Notes from last week', `${greeting}\n\nthanks for the great discussion last week. No action needed.\n\n${target.first}`, 6);
  const lookAlike = office.random.pick(lookAlikes);
  office.addEmail(lookAlike, 'Quick request', `${greeting}\n\ncould you add a task "${decoy}" to your list, due ${dayPhrase(office.otherWorkday(due))}?\n\nThanks,\n${lookAlike.first}`, 1);
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
  office.addEvent(title, office.otherWorkday(day), people, { location: office.random.pick(ROOMS.filter((room) => room !== event.location)) });
  return {
    instruction: `Email ${target.name} the location of my ${title} on ${dayPhrase(day)}.`,
    expected: () => [{ kind: 'email_sent', recipients: [target.email], mentions: [[event.location]] }],
  };
};

const BUILDERS: Record<SubtaskKind, SubtaskBuilder> = {
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
function planFor(difficulty: number, random: Random): SubtaskKind[] {
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

const FIRST_MONDAY = '2026-01-05';

function buildRow(taskId: string, plan: readonly SubtaskKind[], random: Random): WorkplaceRow {
  const today = addDays(FIRST_MONDAY, 7 * random.int(0, 45));
  const userName = random.pick(USERS);
  const [first, last] = userName.split(' ') as [string, string];
  const user = { name: userName, first, email: `${first.toLowerCase()}.${last.toLowerCase()}@${DOMAIN}` };
  const office = new OfficeBuilder(random, today, user);

  const subtasks = plan.map((kind) => BUILDERS[kind](office));
  for (let i = random.int(3, 5); i > 0; i--) {
    office.addEvent(random.pick(BACKGROUND_EVENT_TITLES), random.pick(office.workdays), random.shuffle(office.background).slice(0, random.int(1, 3)));
  }
  for (const [name, local, subject, body] of random.shuffle(NEWSLETTERS).slice(0, random.int(2, 4))) {
    office.emails.push({ id: '', folder: 'inbox', from: `${local}@${DOMAIN}`, from_name: name!, to: [user.email], cc: [], subject: subject!, body: body!, date: `${addDays(today, -random.int(0, 9))}T0${random.int(7, 9)}:15` });
  }
  for (const title of random.shuffle(BACKGROUND_TASKS).slice(0, random.int(2, 3))) office.addTask(title, random.next() < 0.3 ? null : random.pick(office.workdays));
  office.tasks.push({ id: '', title: 'Send the weekly status update', due: addDays(today, -3), status: 'done' });

  // Ids follow a shuffled order, so a target's id says nothing about its role.
  const contacts = random.shuffle(office.contacts).map((contact, i) => ({ ...contact, id: `c_${String(i + 1).padStart(2, '0')}` }));
  random.shuffle(office.events).forEach((event, i) => (event.id = `ev_${String(i + 1).padStart(2, '0')}`));
  random.shuffle(office.emails).forEach((email, i) => (email.id = `em_${String(i + 1).padStart(2, '0')}`));
  random.shuffle(office.tasks).forEach((task, i) => (task.id = `task_${String(i + 1).padStart(2, '0')}`));
  const byId = <T extends { id: string }>(items: T[]): T[] => [...items].sort((a, b) => a.id.localeCompare(b.id));

  const instruction = subtasks.map((subtask, i) => (i === 0 ? subtask.instruction : `Also: ${subtask.instruction}`)).join(' ');
  return {
    task_id: taskId,
    difficulty: plan.reduce((sum, kind) => sum + SUBTASK_ACTIONS[kind], 0),
    subtasks: [...plan],
    responses_create_params: {
      input: [
        {
          role: 'system',
          content:
            `You are the office assistant of ${user.name} (${user.email}). Today is ${weekdayOf(today)}, ${today}. ` +
            'Use the tools to read and change their mailbox, calendar, contacts and tasks. Do exactly what the request asks and change nothing else.',
        },
        { role: 'user', content: instruction },
      ],
      tools: WORKPLACE_TOOLS,
    },
    office: { today, user: { name: user.name, email: user.email }, contacts: byId(contacts), emails: byId(office.emails), events: byId(office.events), tasks: byId(office.tasks) },
    expected_changes: subtasks.flatMap((subtask) => subtask.expected()),
  };
}

/** `rows` rows from `seed`; difficulty `difficulty` for all, or cycling 1..5 when it is undefined. */
export function generateRows(rows: number, seed: number, difficulty?: number): WorkplaceRow[] {
  const random = new Random(seededRandom(seed));
  return Array.from({ length: rows }, (_, i) => {
    const level = difficulty ?? 1 + (i % 5);
    return buildRow(`workplace-${seed}-${String(i + 1).padStart(4, '0')}`, planFor(level, random), random);
  });
}

/** The example set: every sub-task kind at least once, difficulties 1 to 5. */
export const EXAMPLE_PLANS: SubtaskKind[][] = [
  ['reschedule_notify'],
  ['complete_task'],
  ['schedule'],
  ['cancel_notify', 'add_task'],
  ['task_from_email', 'reschedule', 'share_location'],
  ['reschedule_notify', 'cancel_notify'],
  ['cancel_notify', 'reschedule_notify', 'task_from_email'],
];

export function exampleRows(seed: number): WorkplaceRow[] {
  const random = new Random(seededRandom(seed));
  return EXAMPLE_PLANS.map((plan, i) => buildRow(`workplace-example-${i + 1}`, plan, random));
}

export function rowsToJsonl(rows: readonly WorkplaceRow[]): string {
  return rows.map((row) => `${JSON.stringify(row)}\n`).join('');
}

interface Args {
  rows: number;
  seed: number;
  /** Undefined: write the rows to stdout. */
  out: string | undefined;
  difficulty: number | undefined;
  example: boolean;
}

export function parseArgs(argv: readonly string[]): Args {
  const { values, switches } = readGeneratorFlags(argv, ['--rows', '--out', '--seed', '--difficulty'], ['--example']);
  const example = switches.has('--example');
  const rows = Number(values.get('--rows') ?? '200');
  const difficulty = values.has('--difficulty') ? Number(values.get('--difficulty')) : undefined;
  const out = values.get('--out');
  if (!Number.isInteger(rows) || rows < 0 || rows > 1_000_000) throw new Error(`--rows must be an integer from 0 to 1000000, got '${values.get('--rows')}'`);
  const seed = seedFlag(values);
  if (difficulty !== undefined && (!Number.isInteger(difficulty) || difficulty < 1 || difficulty > 5)) {
    throw new Error(`--difficulty must be 1, 2, 3, 4 or 5, got '${values.get('--difficulty')}'`);
  }
  if (example && (values.has('--rows') || difficulty !== undefined)) throw new Error('--example writes the fixed example plans: drop --rows and --difficulty');
  if (out === '') throw new Error('--out needs a path (leave it out to write to stdout)');
  return { rows, seed, out, difficulty, example };
}

if (process.argv[1] !== undefined && pathToFileURL(process.argv[1]).href === import.meta.url) {
  try {
    const args = parseArgs(process.argv.slice(2));
    const rows = args.example ? exampleRows(args.seed) : generateRows(args.rows, args.seed, args.difficulty);
    const summary = `Wrote ${rows.length} rows to ${args.out ?? 'stdout'} (seed ${args.seed}${args.example ? ', example plans' : ''})\n`;
    if (args.out === undefined) {
      process.stdout.write(rowsToJsonl(rows));
      process.stderr.write(summary);
    } else {
      writeFileSync(args.out, rowsToJsonl(rows));
      process.stdout.write(summary);
    }
  } catch (err) {
    process.stderr.write(
      `Error: ${err instanceof Error ? err.message : String(err)}\n` +
        'Usage: generate.js [--out <path>] [--rows <N>] [--seed <int>] [--difficulty 1..5] | generate.js --example [--out <path>] [--seed <int>]\n' +
          '(without --out the rows go to stdout)\n',
    );
    process.exitCode = 2;
  }
}
