import { z } from 'zod';
import {
  addressSet,
  isValidDate,
  isValidDateTime,
  normalizeAddress,
  normalizeText,
  type CalendarEvent,
  type Email,
  type Office,
  type Task,
} from './office.js';

/**
 * The workplace environment's eleven tools: each one's argument schema (zod, with the descriptions a model reads)
 * and what it does to a session's office, as plain functions (no HTTP). The kit turns the same schemas into the
 * JSON tool declarations the dataset rows carry (`WORKPLACE_TOOLS` in app.ts), so the declared parameters and the
 * validated ones cannot drift apart.
 *
 * Mistakes a model can make with valid arguments (an unknown id, an end before the start, a malformed address)
 * return `{ "error": "…" }` and change nothing (the server answers them 400 `{"detail": "…"}`, so the model can
 * read the error and try again); arguments that do not fit the schema answer 422 naming the field.
 */

/** A session's mutable state: the office and the counter new ids are drawn from. */
export interface OfficeSession {
  office: Office;
  nextId: number;
}

export type ToolResult = Record<string, unknown>;

const dateTime = (what: string) =>
  z.string().max(40).describe(`${what}, local time as YYYY-MM-DDTHH:MM (e.g. 2026-03-13T14:00)`);
const date = (what: string) => z.string().max(20).describe(`${what} as YYYY-MM-DD`);
const addresses = (what: string) => z.array(z.string().max(320)).max(50).describe(what);
const query = (what: string) => z.string().max(500).describe(what);

export const ToolArgs = {
  search_emails: z.object({
    query: query(
      'Words that must all appear in the sender, subject or body (case-insensitive). Omit to list everything.',
    ).optional(),
    from: query('Only e-mails whose sender name or address contains this text.').optional(),
    folder: z.enum(['inbox', 'sent', 'all']).optional().describe('Which folder to search (default inbox).'),
    limit: z.int().min(1).max(50).optional().describe('At most this many results, newest first (default 10).'),
  }),
  read_email: z.object({ email_id: z.string().max(100).describe('The id of the e-mail, from search_emails.') }),
  send_email: z.object({
    to: addresses('Recipient e-mail addresses (at least one).'),
    cc: addresses('Addresses to copy.').optional(),
    subject: z.string().max(1000).describe('Subject line.'),
    body: z.string().max(20_000).describe('The message text.'),
  }),
  list_events: z.object({
    start_date: date('First day to include').optional(),
    end_date: date('Last day to include').optional(),
    query: query('Words that must all appear in the title, location, or an attendee’s name or address.').optional(),
  }),
  create_event: z.object({
    title: z.string().max(500).describe('Event title.'),
    start: dateTime('Start'),
    end: dateTime('End (after the start)'),
    attendees: addresses('E-mail addresses of the people invited (the user is implied).').optional(),
    location: z.string().max(500).optional().describe('Room or place.'),
  }),
  update_event: z.object({
    event_id: z.string().max(100).describe('The id of the event, from list_events.'),
    title: z.string().max(500).optional().describe('New title.'),
    start: dateTime('New start').optional(),
    end: dateTime('New end').optional(),
    attendees: addresses('The new, complete list of attendee addresses.').optional(),
    location: z.string().max(500).optional().describe('New room or place.'),
  }),
  delete_event: z.object({ event_id: z.string().max(100).describe('The id of the event, from list_events.') }),
  find_contacts: z.object({
    query: query('Words that must all appear in the contact’s name, e-mail address, team or job title.'),
  }),
  list_tasks: z.object({
    status: z.enum(['open', 'done', 'all']).optional().describe('Which tasks to list (default open).'),
  }),
  create_task: z.object({
    title: z.string().min(1).max(500).describe('What has to be done.'),
    due_date: date('Due date').optional(),
  }),
  complete_task: z.object({ task_id: z.string().max(100).describe('The id of the task, from list_tasks.') }),
} as const;

export type ToolName = keyof typeof ToolArgs;
type Args<Name extends ToolName> = z.infer<(typeof ToolArgs)[Name]>;

/** What each tool does, as agents read it in the tool's declaration. */
export const TOOL_DESCRIPTIONS: Record<ToolName, string> = {
  search_emails: 'Search the mailbox. Returns e-mail summaries (id, sender, subject, date, a snippet), newest first.',
  read_email: 'Read one e-mail in full (sender, recipients, subject, date, body).',
  send_email: 'Send an e-mail from the user. Recipients are e-mail addresses (find them with find_contacts).',
  list_events: 'List calendar events in start order, optionally between two dates and/or matching words.',
  create_event: 'Create a calendar event. Returns the new event’s id.',
  update_event: 'Change an existing event: only the fields given change. Returns the updated event.',
  delete_event: 'Delete (cancel) an event from the calendar.',
  find_contacts: 'Look people up in the company directory by name, address, team or title.',
  list_tasks: 'List the user’s tasks (id, title, due date, status).',
  create_task: 'Add a task to the user’s task list. Returns the new task’s id.',
  complete_task: 'Mark a task as done (completing a done task again changes nothing).',
};

const error = (message: string): ToolResult => ({ error: message });

function words(value: string | undefined): string[] {
  return value === undefined
    ? []
    : normalizeText(value)
        .split(' ')
        .filter((word) => word !== '');
}

function matchesAll(haystack: string, needles: readonly string[]): boolean {
  const normalized = normalizeText(haystack);
  return needles.every((word) => normalized.includes(word));
}

/** Normalised addresses, or the first entry that is not an address. */
function checkAddresses(values: readonly string[]): { ok: string[] } | { bad: string } {
  const ok: string[] = [];
  for (const value of values) {
    const normalized = normalizeAddress(value);
    if (normalized === undefined) return { bad: value };
    ok.push(normalized);
  }
  return { ok };
}

function summary(email: Email): ToolResult {
  const snippet = email.body.replace(/\s+/g, ' ').trim();
  return {
    id: email.id,
    folder: email.folder,
    from: email.from,
    from_name: email.from_name,
    to: email.to,
    subject: email.subject,
    date: email.date,
    snippet: snippet.length > 120 ? `${snippet.slice(0, 117)}...` : snippet,
  };
}

function contactNames(office: Office): Map<string, string> {
  return new Map(office.contacts.map((contact) => [normalizeAddress(contact.email) ?? contact.email, contact.name]));
}

function eventView(event: CalendarEvent, names: Map<string, string>): ToolResult {
  return {
    ...event,
    attendee_names: event.attendees.map((attendee) => names.get(normalizeAddress(attendee) ?? attendee) ?? attendee),
  };
}

function taskView(task: Task): ToolResult {
  return { id: task.id, title: task.title, due_date: task.due, status: task.status };
}

/** At most this many e-mails, events or tasks per office: an agent looping on create/send cannot grow a session without bound. */
export const MAX_OFFICE_ITEMS = 1_000;

function full(items: readonly unknown[], what: string): ToolResult | undefined {
  return items.length >= MAX_OFFICE_ITEMS
    ? error(`the ${what} is full (${MAX_OFFICE_ITEMS} items): nothing was added`)
    : undefined;
}

function newId(session: OfficeSession, prefix: string): string {
  session.nextId += 1;
  return `${prefix}_new_${session.nextId}`;
}

function checkTimes(start: string, end: string): string | undefined {
  if (!isValidDateTime(start)) return `start '${start}' is not a date-time of the form YYYY-MM-DDTHH:MM`;
  if (!isValidDateTime(end)) return `end '${end}' is not a date-time of the form YYYY-MM-DDTHH:MM`;
  if (end <= start) return `end ${end} is not after start ${start}`;
  return undefined;
}

type Runner<Name extends ToolName> = (args: Args<Name>, session: OfficeSession) => ToolResult;

export const TOOL_RUNNERS: { [Name in ToolName]: Runner<Name> } = {
  search_emails(args, { office }) {
    const folder = args.folder ?? 'inbox';
    const needles = words(args.query);
    const from = args.from === undefined ? undefined : normalizeText(args.from);
    const found = office.emails
      .filter((email) => folder === 'all' || email.folder === folder)
      .filter((email) => matchesAll(`${email.from_name} ${email.from} ${email.subject} ${email.body}`, needles))
      .filter((email) => from === undefined || normalizeText(`${email.from_name} ${email.from}`).includes(from))
      .sort((a, b) => (a.date === b.date ? a.id.localeCompare(b.id) : b.date.localeCompare(a.date)));
    return { emails: found.slice(0, args.limit ?? 10).map(summary), total: found.length };
  },

  read_email(args, { office }) {
    const email = office.emails.find((candidate) => candidate.id === args.email_id);
    return email ? { ...email } : error(`no e-mail with id '${args.email_id}': use an id from search_emails`);
  },

  send_email(args, session) {
    const to = checkAddresses(args.to);
    if ('bad' in to) return error(`'${to.bad}' in to is not an e-mail address: look it up with find_contacts`);
    if (to.ok.length === 0) return error('to is empty: give at least one recipient address');
    const cc = checkAddresses(args.cc ?? []);
    if ('bad' in cc) return error(`'${cc.bad}' in cc is not an e-mail address: look it up with find_contacts`);
    const { office } = session;
    const noRoom = full(office.emails, 'mailbox');
    if (noRoom) return noRoom;
    const email: Email = {
      id: newId(session, 'em'),
      folder: 'sent',
      from: office.user.email,
      from_name: office.user.name,
      to: to.ok,
      cc: cc.ok,
      subject: args.subject,
      body: args.body,
      date: `${office.today}T12:00`,
    };
    office.emails.push(email);
    return { email_id: email.id, status: 'sent' };
  },

  list_events(args, { office }) {
    if (args.start_date !== undefined && !isValidDate(args.start_date))
      return error(`start_date '${args.start_date}' is not a date of the form YYYY-MM-DD`);
    if (args.end_date !== undefined && !isValidDate(args.end_date))
      return error(`end_date '${args.end_date}' is not a date of the form YYYY-MM-DD`);
    const names = contactNames(office);
    const needles = words(args.query);
    const events = office.events
      .filter((event) => args.start_date === undefined || event.start.slice(0, 10) >= args.start_date)
      .filter((event) => args.end_date === undefined || event.start.slice(0, 10) <= args.end_date)
      .filter((event) => {
        const people = event.attendees.map(
          (attendee) => `${attendee} ${names.get(normalizeAddress(attendee) ?? attendee) ?? ''}`,
        );
        return matchesAll(`${event.title} ${event.location} ${people.join(' ')}`, needles);
      })
      .sort((a, b) => (a.start === b.start ? a.id.localeCompare(b.id) : a.start.localeCompare(b.start)));
    return { events: events.map((event) => eventView(event, names)) };
  },

  create_event(args, session) {
    const noRoom = full(session.office.events, 'calendar');
    if (noRoom) return noRoom;
    const wrongTime = checkTimes(args.start, args.end);
    if (wrongTime) return error(wrongTime);
    const attendees = checkAddresses(args.attendees ?? []);
    if ('bad' in attendees)
      return error(`'${attendees.bad}' in attendees is not an e-mail address: look it up with find_contacts`);
    const event: CalendarEvent = {
      id: newId(session, 'ev'),
      title: args.title,
      start: args.start,
      end: args.end,
      attendees: addressSet(attendees.ok, session.office.user.email),
      location: args.location ?? '',
    };
    session.office.events.push(event);
    return { event_id: event.id, event: eventView(event, contactNames(session.office)) };
  },

  update_event(args, { office }) {
    const event = office.events.find((candidate) => candidate.id === args.event_id);
    if (!event) return error(`no event with id '${args.event_id}': use an id from list_events`);
    const start = args.start ?? event.start;
    const end = args.end ?? event.end;
    const wrongTime = checkTimes(start, end);
    if (wrongTime) return error(wrongTime);
    let attendees = event.attendees;
    if (args.attendees !== undefined) {
      const checked = checkAddresses(args.attendees);
      if ('bad' in checked)
        return error(`'${checked.bad}' in attendees is not an e-mail address: look it up with find_contacts`);
      attendees = addressSet(checked.ok, office.user.email);
    }
    Object.assign(event, {
      start,
      end,
      attendees,
      title: args.title ?? event.title,
      location: args.location ?? event.location,
    });
    return { event: eventView(event, contactNames(office)) };
  },

  delete_event(args, { office }) {
    const index = office.events.findIndex((candidate) => candidate.id === args.event_id);
    if (index < 0) return error(`no event with id '${args.event_id}': use an id from list_events`);
    const [removed] = office.events.splice(index, 1);
    return { deleted: removed!.id, title: removed!.title };
  },

  find_contacts(args, { office }) {
    const needles = words(args.query);
    if (needles.length === 0) return error('query is empty: give part of a name, address, team or title');
    const contacts = office.contacts.filter((contact) =>
      matchesAll(`${contact.name} ${contact.email} ${contact.team} ${contact.title}`, needles),
    );
    return { contacts };
  },

  list_tasks(args, { office }) {
    const status = args.status ?? 'open';
    return { tasks: office.tasks.filter((task) => status === 'all' || task.status === status).map(taskView) };
  },

  create_task(args, session) {
    const noRoom = full(session.office.tasks, 'task list');
    if (noRoom) return noRoom;
    if (normalizeText(args.title) === '') return error('title is empty');
    if (args.due_date !== undefined && !isValidDate(args.due_date))
      return error(`due_date '${args.due_date}' is not a date of the form YYYY-MM-DD`);
    const task: Task = { id: newId(session, 'task'), title: args.title, due: args.due_date ?? null, status: 'open' };
    session.office.tasks.push(task);
    return { task_id: task.id, task: taskView(task) };
  },

  complete_task(args, { office }) {
    const task = office.tasks.find((candidate) => candidate.id === args.task_id);
    if (!task) return error(`no task with id '${args.task_id}': use an id from list_tasks`);
    const alreadyCompleted = task.status === 'done';
    task.status = 'done';
    return { task: taskView(task), already_completed: alreadyCompleted };
  },
};

/** Run tool `name` on a session with arguments its schema already accepted (the server validates them). */
export function runParsedTool(name: ToolName, args: unknown, session: OfficeSession): ToolResult {
  return (TOOL_RUNNERS[name] as Runner<ToolName>)(args as never, session);
}

/** Validate the arguments, then run tool `name` on a session (for callers outside the server, such as tests). */
export function runTool(name: ToolName, rawArgs: unknown, session: OfficeSession): ToolResult {
  return runParsedTool(name, ToolArgs[name].parse(rawArgs), session);
}
