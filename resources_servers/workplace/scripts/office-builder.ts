import { addDays, addMinutes, type CalendarEvent, type Contact, type Email, type Task } from '../office.js';
import type { Random } from './random.js';
import {
  BACKGROUND_PEOPLE,
  DOMAIN,
  FIRST_NAMES,
  GROUP_TITLES,
  JOB_TITLES,
  LAST_NAMES,
  NEW_MEETING_TITLES,
  ONE_ON_ONE_TITLES,
  REQUESTED_TASKS,
  ROOMS,
  TASK_TITLES,
  TEAMS,
} from './vocabulary.js';

/**
 * One row's office while its sub-tasks plant their targets and distractors: the contacts, events, mail and tasks
 * gathered so far, and the pools of names and titles not yet taken (so two sub-tasks of a row never share a target).
 * Ids stay empty here; the row builder assigns them once everything is in.
 */

interface Person {
  name: string;
  first: string;
  email: string;
}

/** Everything one row's sub-tasks share while the office is built. */
export class OfficeBuilder {
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
    this.background = random
      .shuffle(BACKGROUND_PEOPLE)
      .slice(0, 6)
      .map((name) => this.addContact(name));
  }

  addContact(name: string): Person {
    const [first, ...rest] = name.split(' ');
    const person = { name, first: first!, email: `${first!.toLowerCase()}.${rest.join('').toLowerCase()}@${DOMAIN}` };
    if (!this.contacts.some((contact) => contact.email === person.email)) {
      this.contacts.push({
        id: '',
        name,
        email: person.email,
        team: this.random.pick(TEAMS),
        title: this.random.pick(JOB_TITLES),
      });
    }
    return person;
  }

  /** A target person plus the two look-alikes (first name or surname one letter or so apart). */
  personWithLookAlikes(): { target: Person; lookAlikes: Person[] } {
    const first = this.random.take(this.targetFirstNames);
    const last = this.random.take(this.targetLastNames);
    const target = this.addContact(`${first} ${last}`);
    const lookAlikes = [
      this.addContact(`${first} ${LAST_NAMES[last]}`),
      this.addContact(`${FIRST_NAMES[first]} ${last}`),
    ];
    return { target, lookAlikes };
  }

  slot(date: string, duration: number): { start: string; end: string; time: string } {
    const time = `${String(this.random.int(9, 16)).padStart(2, '0')}:${this.random.pick(['00', '30'])}`;
    const start = `${date}T${time}`;
    return { start, end: addMinutes(start, duration), time };
  }

  addEvent(
    title: string,
    date: string,
    attendees: Person[],
    options: { duration?: number; location?: string } = {},
  ): CalendarEvent {
    const duration = options.duration ?? this.random.pick([30, 45, 60]);
    const { start, end } = this.slot(date, duration);
    const event = {
      id: '',
      title,
      start,
      end,
      attendees: attendees.map((person) => person.email),
      location: options.location ?? this.random.pick(ROOMS),
    };
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
