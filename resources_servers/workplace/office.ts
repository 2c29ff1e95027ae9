import { z } from 'zod';

/**
 * The workplace environment's state model: one office per rollout session — the user's mailbox, calendar,
 * contacts and tasks — as plain JSON, plus the normalisation rules the tools and the verifier share. Dates are
 * local and timezone-free (`YYYY-MM-DD`, times `YYYY-MM-DDTHH:MM`); every row fixes its own `today`, so relative
 * dates ("Friday") resolve the same way on every run.
 */

const MAX_ITEMS = 500;
const MAX_TEXT = 20_000;

export const DATE = /^\d{4}-\d{2}-\d{2}$/;
export const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}$/;

const text = (max = MAX_TEXT) => z.string().max(max);
const address = z.string().min(3).max(320);
const id = z.string().min(1).max(100);

export const ContactSchema = z.object({
  id,
  name: text(200),
  email: address,
  team: text(200),
  title: text(200),
});

export const EmailSchema = z.object({
  id,
  folder: z.enum(['inbox', 'sent']),
  from: address,
  from_name: text(200),
  to: z.array(address).max(100),
  cc: z.array(address).max(100),
  subject: text(1000),
  body: text(),
  date: z.string().regex(DATE_TIME, 'expected YYYY-MM-DDTHH:MM'),
});

export const EventSchema = z.object({
  id,
  title: text(500),
  start: z.string().regex(DATE_TIME, 'expected YYYY-MM-DDTHH:MM'),
  end: z.string().regex(DATE_TIME, 'expected YYYY-MM-DDTHH:MM'),
  attendees: z.array(address).max(100),
  location: text(500),
});

export const TaskSchema = z.object({
  id,
  title: text(500),
  due: z.string().regex(DATE, 'expected YYYY-MM-DD').nullable(),
  status: z.enum(['open', 'done']),
});

/** What a dataset row carries in `office`, validated at `/seed_session` (bounded: at most 500 items per list). */
export const OfficeSchema = z.object({
  today: z.string().regex(DATE, 'expected YYYY-MM-DD'),
  user: z.object({ name: text(200), email: address }),
  contacts: z.array(ContactSchema).max(MAX_ITEMS),
  emails: z.array(EmailSchema).max(MAX_ITEMS),
  events: z.array(EventSchema).max(MAX_ITEMS),
  tasks: z.array(TaskSchema).max(MAX_ITEMS),
});

export type Contact = z.infer<typeof ContactSchema>;
export type Email = z.infer<typeof EmailSchema>;
export type CalendarEvent = z.infer<typeof EventSchema>;
export type Task = z.infer<typeof TaskSchema>;
export type Office = z.infer<typeof OfficeSchema>;

/** A deep copy (offices are plain JSON), so the seeded snapshot stays untouched while the session's copy changes. */
export function cloneOffice(office: Office): Office {
  return structuredClone(office);
}

/** Collapse whitespace and lower-case: titles and free text compare this way. */
export function normalizeText(value: string): string {
  return value.normalize('NFKC').replace(/\s+/g, ' ').trim().toLowerCase();
}

/** A title as the verifier compares it: normalised text without surrounding quotes or a trailing full stop. */
export function normalizeTitle(value: string): string {
  return normalizeText(value)
    .replace(/^["'“”‘’]+|["'“”‘’]+$/g, '')
    .replace(/\.$/, '')
    .trim();
}

/**
 * An e-mail address as compared everywhere: the part inside `<…>` when given as `Name <addr>`, trimmed,
 * lower-cased. Returns `undefined` for something that is not an address.
 */
export function normalizeAddress(value: string): string | undefined {
  const angled = /<([^<>]+)>\s*$/.exec(value);
  const candidate = (angled ? angled[1]! : value).trim().toLowerCase();
  return /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(candidate) ? candidate : undefined;
}

/** Addresses as a sorted set of normalised addresses, without `exclude` (the user's own address). */
export function addressSet(values: readonly string[], exclude?: string): string[] {
  const own = exclude === undefined ? undefined : normalizeAddress(exclude);
  const set = new Set<string>();
  for (const value of values) {
    const normalized = normalizeAddress(value) ?? normalizeText(value);
    if (normalized !== own) set.add(normalized);
  }
  return [...set].sort();
}

export const WEEKDAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'] as const;

/** `date` (YYYY-MM-DD) plus `days`, computed in UTC so no local timezone can shift it. */
export function addDays(date: string, days: number): string {
  const time = Date.parse(`${date}T00:00:00Z`) + days * 86_400_000;
  return new Date(time).toISOString().slice(0, 10);
}

export function weekdayOf(date: string): (typeof WEEKDAYS)[number] {
  return WEEKDAYS[new Date(`${date}T00:00:00Z`).getUTCDay()]!;
}

/** `dateTime` plus `minutes`, as `YYYY-MM-DDTHH:MM`. */
export function addMinutes(dateTime: string, minutes: number): string {
  const time = Date.parse(`${dateTime}:00Z`) + minutes * 60_000;
  return new Date(time).toISOString().slice(0, 16);
}

/** True when `value` is a real calendar date-time in the `YYYY-MM-DDTHH:MM` form (not 2026-02-30T25:00). */
export function isValidDateTime(value: string): boolean {
  if (!DATE_TIME.test(value)) return false;
  const parsed = Date.parse(`${value}:00Z`);
  return Number.isFinite(parsed) && new Date(parsed).toISOString().slice(0, 16) === value;
}

export function isValidDate(value: string): boolean {
  return DATE.test(value) && isValidDateTime(`${value}T00:00`);
}
