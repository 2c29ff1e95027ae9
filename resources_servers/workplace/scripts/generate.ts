import { writeFileSync } from 'node:fs';
import { addDays, weekdayOf, type Office } from '../office.js';
import { WORKPLACE_TOOLS } from '../app.js';
import type { ExpectedChange } from '../verify.js';
import { isMainModule } from '../../../src/main-module.js';
import { seededRandom } from '../../../src/seeded-random.js';
import { readGeneratorFlags, seedFlag } from '../../../src/generator-args.js';
import { OfficeBuilder } from './office-builder.js';
import { Random } from './random.js';
import { BUILDERS, planFor, SUBTASK_ACTIONS, type SubtaskKind } from './subtasks.js';
import { BACKGROUND_EVENT_TITLES, BACKGROUND_TASKS, DOMAIN, NEWSLETTERS, USERS } from './vocabulary.js';

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
 *
 * This file puts rows together and runs the CLI; the sub-task kinds and their builders are in `subtasks.ts`, the
 * office they fill in `office-builder.ts`, the names and titles in `vocabulary.ts`.
 */

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

const FIRST_MONDAY = '2026-01-05';

function buildRow(taskId: string, plan: readonly SubtaskKind[], random: Random): WorkplaceRow {
  const today = addDays(FIRST_MONDAY, 7 * random.int(0, 45));
  const userName = random.pick(USERS);
  const [first, last] = userName.split(' ') as [string, string];
  const user = { name: userName, first, email: `${first.toLowerCase()}.${last.toLowerCase()}@${DOMAIN}` };
  const office = new OfficeBuilder(random, today, user);

  const subtasks = plan.map((kind) => BUILDERS[kind](office));
  for (let i = random.int(3, 5); i > 0; i--) {
    office.addEvent(
      random.pick(BACKGROUND_EVENT_TITLES),
      random.pick(office.workdays),
      random.shuffle(office.background).slice(0, random.int(1, 3)),
    );
  }
  for (const [name, local, subject, body] of random.shuffle(NEWSLETTERS).slice(0, random.int(2, 4))) {
    office.emails.push({
      id: '',
      folder: 'inbox',
      from: `${local}@${DOMAIN}`,
      from_name: name!,
      to: [user.email],
      cc: [],
      subject: subject!,
      body: body!,
      date: `${addDays(today, -random.int(0, 9))}T0${random.int(7, 9)}:15`,
    });
  }
  for (const title of random.shuffle(BACKGROUND_TASKS).slice(0, random.int(2, 3)))
    office.addTask(title, random.next() < 0.3 ? null : random.pick(office.workdays));
  office.tasks.push({ id: '', title: 'Send the weekly status update', due: addDays(today, -3), status: 'done' });

  // Ids follow a shuffled order, so a target's id says nothing about its role.
  const contacts = random
    .shuffle(office.contacts)
    .map((contact, i) => ({ ...contact, id: `c_${String(i + 1).padStart(2, '0')}` }));
  random.shuffle(office.events).forEach((event, i) => (event.id = `ev_${String(i + 1).padStart(2, '0')}`));
  random.shuffle(office.emails).forEach((email, i) => (email.id = `em_${String(i + 1).padStart(2, '0')}`));
  random.shuffle(office.tasks).forEach((task, i) => (task.id = `task_${String(i + 1).padStart(2, '0')}`));
  const byId = <T extends { id: string }>(items: T[]): T[] => [...items].sort((a, b) => a.id.localeCompare(b.id));

  const instruction = subtasks
    .map((subtask, i) => (i === 0 ? subtask.instruction : `Also: ${subtask.instruction}`))
    .join(' ');
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
    office: {
      today,
      user: { name: user.name, email: user.email },
      contacts: byId(contacts),
      emails: byId(office.emails),
      events: byId(office.events),
      tasks: byId(office.tasks),
    },
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
  if (!Number.isInteger(rows) || rows < 0 || rows > 1_000_000)
    throw new Error(`--rows must be an integer from 0 to 1000000, got '${values.get('--rows')}'`);
  const seed = seedFlag(values);
  if (difficulty !== undefined && (!Number.isInteger(difficulty) || difficulty < 1 || difficulty > 5)) {
    throw new Error(`--difficulty must be 1, 2, 3, 4 or 5, got '${values.get('--difficulty')}'`);
  }
  if (example && (values.has('--rows') || difficulty !== undefined))
    throw new Error('--example writes the fixed example plans: drop --rows and --difficulty');
  if (out === '') throw new Error('--out needs a path (leave it out to write to stdout)');
  return { rows, seed, out, difficulty, example };
}

if (isMainModule(import.meta.url)) {
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
