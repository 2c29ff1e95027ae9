import { toolHistory, userMessages, type Decide, type ToolCall } from '../../src/service/index.js';

/**
 * A deterministic solver for the workplace tasks (not a model): it reads the request sentence by sentence, looks
 * the people, events, e-mails and tasks up with the environment's own tools, and makes exactly the changes asked
 * for. Everything it knows comes from what a service legitimately receives — the instruction text and the tools'
 * outputs — never from the row's answer key; that is what makes it proof that the tasks are solvable and that the
 * verifier agrees with a correct solution.
 *
 * It keeps no state between calls. Each sub-task is a small script that asks for tool results with `ask`; on
 * every call the scripts are replayed against the conversation's tool history, a result already in the history is
 * returned at once, and the first call a script still lacks is what the solver asks Gym to run. The independent
 * sub-tasks' next calls go out together, so a rollout takes as many turns as its longest sub-task has steps.
 */

type Json = Record<string, unknown>;

/** The fields of the environment's tool outputs the scripts read (what its tools document, not validated here). */
interface Contact {
  name: string;
  email: string;
}
interface CalendarEvent {
  id: string;
  title: string;
  start: string;
  end: string;
  attendees: string[];
  location: string;
}
interface OfficeTask {
  id: string;
  title: string;
}
interface EmailSummary {
  id: string;
  from: string;
}

/** Thrown by `ask` when the call's result is not in the conversation yet. */
class Pending extends Error {
  constructor(readonly call: ToolCall) {
    super(`waiting for ${call.name}`);
  }
}

/** Thrown by a script that cannot go on (what it looked for is not there, or a tool answered an error). */
class Stuck extends Error {}

type Ask = (name: string, args: Record<string, unknown>) => Json;
type Script = (ask: Ask) => string;

/** JSON with sorted keys, so the same call made with keys in another order is recognised. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    return `{${Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonical((value as Json)[key])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
}

const norm = (value: string): string => value.replace(/\s+/g, ' ').trim().toLowerCase();

function parseOutput(text: string, name: string): Json {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new Stuck(`${name} answered something that is not JSON: ${text.slice(0, 200)}`);
  }
  if (parsed === null || typeof parsed !== 'object') throw new Stuck(`${name} answered ${text.slice(0, 200)}`);
  const failure = (parsed as Json).detail ?? (parsed as Json).error;
  if (failure !== undefined)
    throw new Stuck(`${name} failed: ${typeof failure === 'string' ? failure : JSON.stringify(failure)}`);
  return parsed as Json;
}

function one<T>(items: T[], what: string): T {
  if (items.length === 0) throw new Stuck(`found no ${what}`);
  if (items.length > 1) throw new Stuck(`found ${items.length} candidates for ${what}`);
  return items[0]!;
}

function contactNamed(ask: Ask, name: string): Contact {
  const { contacts } = ask('find_contacts', { query: name });
  return one(
    (contacts as Contact[]).filter((contact) => norm(contact.name) === norm(name)),
    `contact named ${name}`,
  );
}

function eventsTitled(ask: Ask, title: string, date?: string): CalendarEvent[] {
  const { events } = ask('list_events', { query: title, ...(date ? { start_date: date, end_date: date } : {}) });
  return (events as CalendarEvent[]).filter((event) => norm(event.title) === norm(title));
}

const DAY = String.raw`\w+ \((\d{4}-\d{2}-\d{2})\)`;

/** One pattern per sentence kind the tasks use, each turning its match into a script. */
const SENTENCES: Array<{ pattern: RegExp; script: (match: RegExpExecArray) => Script }> = [
  {
    pattern: new RegExp(
      String.raw`Move my (.+?) with (.+?) to ${DAY} at the same time(?: and email (\S+) the new slot)?\.`,
      'g',
    ),
    script:
      ([, title, name, date, notify]) =>
      (ask) => {
        const person = contactNamed(ask, name!);
        const event = one(
          eventsTitled(ask, title!).filter((e) => e.attendees.some((a) => norm(a) === norm(person.email))),
          `${title} with ${name}`,
        );
        const time = String(event.start).slice(11);
        const minutes = (Date.parse(`${event.end}:00Z`) - Date.parse(`${event.start}:00Z`)) / 60_000;
        const start = `${date}T${time}`;
        const end = new Date(Date.parse(`${start}:00Z`) + minutes * 60_000).toISOString().slice(0, 16);
        ask('update_event', { event_id: event.id, start, end });
        if (!notify) return `moved ${title} with ${name} to ${start}`;
        ask('send_email', {
          to: [person.email],
          subject: `New time for our ${title}`,
          body: `Hi ${notify},\n\nI moved our ${title} to ${date} at ${time} (until ${end.slice(11)}).\n\nSee you then!`,
        });
        return `moved ${title} with ${name} to ${start} and told them`;
      },
  },
  {
    pattern: new RegExp(String.raw`Cancel the (.+?) on ${DAY}( and email its attendees that it is cancelled)?\.`, 'g'),
    script:
      ([, title, date, notify]) =>
      (ask) => {
        const event = one(eventsTitled(ask, title!, date), `${title} on ${date}`);
        ask('delete_event', { event_id: event.id });
        if (!notify) return `cancelled ${title} on ${date}`;
        ask('send_email', {
          to: event.attendees,
          subject: `Cancelled: ${title} on ${date}`,
          body: `Hi all,\n\nthe ${title} on ${date} is cancelled.\n\nSorry for the short notice.`,
        });
        return `cancelled ${title} on ${date} and told its attendees`;
      },
  },
  {
    pattern: new RegExp(
      String.raw`Schedule a (\d+)-minute meeting titled "(.+?)" with (.+?) on ${DAY} at (\d{2}:\d{2}) in (.+?)\.(?= |$)`,
      'g',
    ),
    script:
      ([, minutes, title, name, date, time, location]) =>
      (ask) => {
        const person = contactNamed(ask, name!);
        const start = `${date}T${time}`;
        const end = new Date(Date.parse(`${start}:00Z`) + Number(minutes) * 60_000).toISOString().slice(0, 16);
        ask('create_event', { title, start, end, attendees: [person.email], location });
        return `scheduled ${title} with ${name} at ${start}`;
      },
  },
  {
    pattern: new RegExp(String.raw`Add a task "(.+?)" due ${DAY}\.`, 'g'),
    script:
      ([, title, date]) =>
      (ask) => {
        ask('create_task', { title, due_date: date });
        return `added the task ${title}`;
      },
  },
  {
    pattern: /Mark my task "(.+?)" as done\./g,
    script:
      ([, title]) =>
      (ask) => {
        const { tasks } = ask('list_tasks', { status: 'all' });
        const task = one(
          (tasks as OfficeTask[]).filter((t) => norm(t.title) === norm(title!)),
          `task ${title}`,
        );
        ask('complete_task', { task_id: task.id });
        return `completed ${title}`;
      },
  },
  {
    pattern: /Add the task that (.+?) asked for in their latest email, with the due date they give\./g,
    script:
      ([, name]) =>
      (ask) => {
        const person = contactNamed(ask, name!);
        const { emails } = ask('search_emails', { from: name, limit: 50 });
        const latest = (emails as EmailSummary[]).filter((e) => norm(e.from) === norm(person.email))[0];
        if (!latest) throw new Stuck(`no e-mail from ${name}`);
        const email = ask('read_email', { email_id: latest.id });
        const request = new RegExp(String.raw`task "(.+?)".*?due ${DAY}`, 's').exec(String(email.body));
        if (!request) throw new Stuck(`the latest e-mail from ${name} asks for no task with a due date`);
        ask('create_task', { title: request[1], due_date: request[2] });
        return `added the task ${request[1]} that ${name} asked for`;
      },
  },
  {
    pattern: new RegExp(String.raw`Email (.+?) the location of my (.+?) on ${DAY}\.`, 'g'),
    script:
      ([, name, title, date]) =>
      (ask) => {
        const event = one(eventsTitled(ask, title!, date), `${title} on ${date}`);
        const person = contactNamed(ask, name!);
        ask('send_email', {
          to: [person.email],
          subject: `Location of the ${title}`,
          body: `Hi ${person.name.split(' ')[0]},\n\nthe ${title} on ${date} is in ${event.location}.`,
        });
        return `told ${name} where the ${title} is`;
      },
  },
];

/** The scripts of every sentence of `text` the solver understands, in the order they appear. */
export function parseWorkplaceRequest(text: string): Script[] {
  const found: Array<{ at: number; script: Script }> = [];
  for (const { pattern, script } of SENTENCES) {
    for (const match of text.matchAll(pattern)) found.push({ at: match.index, script: script(match) });
  }
  return found.sort((a, b) => a.at - b.at).map((entry) => entry.script);
}

export function createWorkplaceSolver(): Decide {
  return (conversation, tools) => {
    const declared = new Set(tools.map((tool) => tool.name));
    const results = new Map<string, string | undefined>();
    for (const record of toolHistory(conversation)) {
      let args: unknown;
      try {
        args = JSON.parse(record.arguments);
      } catch {
        continue;
      }
      results.set(`${record.name} ${canonical(args)}`, record.output);
    }
    const ask: Ask = (name, args) => {
      if (!declared.has(name)) throw new Stuck(`this request does not declare ${name}`);
      const key = `${name} ${canonical(args)}`;
      if (!results.has(key)) throw new Pending({ name, arguments: args });
      const output = results.get(key);
      if (output === undefined) throw new Stuck(`${name} has no result yet`);
      return parseOutput(output, name);
    };

    const scripts = parseWorkplaceRequest(userMessages(conversation).join('\n'));
    if (scripts.length === 0) return { final: 'The workplace solver understood no request in this conversation.' };
    const next: ToolCall[] = [];
    const report: string[] = [];
    for (const script of scripts) {
      try {
        report.push(script(ask));
      } catch (err) {
        if (err instanceof Pending) next.push(err.call);
        else if (err instanceof Stuck) report.push(`could not finish: ${err.message}`);
        else throw err;
      }
    }
    if (next.length > 0) return { toolCalls: next };
    return { final: `Done: ${report.join('; ')}.` };
  };
}
