import { weekdayOf } from '../office.js';

/**
 * The words the generated offices are made of — people (in look-alike pairs), teams, rooms, meeting and task titles,
 * newsletters — and the ways an instruction or an e-mail names a day or a time. Kept apart from the builders so the
 * vocabulary can grow without touching how rows are put together.
 */

export const DOMAIN = 'northwind.example';

// Names in look-alike pairs: each target person brings the two look-alikes as distractors.
export const FIRST_NAMES: Record<string, string> = {
  Dana: 'Diana',
  Jon: 'John',
  Mia: 'Maya',
  Erik: 'Eric',
  Lena: 'Lina',
  Sara: 'Sarah',
  Alan: 'Allan',
  Kate: 'Katie',
  Theo: 'Teo',
  Nico: 'Nika',
  Ivan: 'Ivana',
  Marta: 'Martha',
  Omar: 'Omari',
  Rosa: 'Rose',
  Felix: 'Felipe',
  Anya: 'Anja',
};
export const LAST_NAMES: Record<string, string> = {
  Whitfield: 'Whitman',
  Okafor: 'Okoro',
  Lindqvist: 'Lindgren',
  Moreau: 'Morel',
  Castillo: 'Castell',
  Nakamura: 'Nakamoto',
  Brennan: 'Brannan',
  Petrov: 'Petrova',
  Sandoval: 'Sandberg',
  Holt: 'Holtz',
  Ferreira: 'Ferrara',
  Kowalski: 'Kowalczyk',
  Haddad: 'Hadad',
  Jensen: 'Jenson',
  Varga: 'Vargas',
  Quinn: 'Quinlan',
};
export const BACKGROUND_PEOPLE = [
  'Grace Abernathy',
  'Tomas Reyes',
  'Hannah Schultz',
  'Wei Zhang',
  'Priya Raman',
  'Lucas Fontaine',
  'Amara Nwosu',
  'Bjorn Eklund',
  'Chloe Dubois',
  'Samir Khoury',
  'Ines Carvalho',
  'Owen Gallagher',
];
export const USERS = ['Alex Morgan', 'Jordan Ellis', 'Casey Brooks', 'Riley Chen', 'Morgan Blake', 'Taylor Singh'];
export const TEAMS = ['Finance', 'Design', 'Engineering', 'Sales', 'Legal', 'Operations', 'Marketing', 'People'];
export const JOB_TITLES = [
  'Manager',
  'Analyst',
  'Engineer',
  'Designer',
  'Counsel',
  'Coordinator',
  'Director',
  'Specialist',
];
export const ROOMS = [
  'Room Aster',
  'Room Birch',
  'Room Cedar',
  'Room Dahlia',
  'Room Elm',
  'Room Fern',
  'Room Juniper',
  'Room Maple',
  'Video call',
];

export const ONE_ON_ONE_TITLES = [
  '1:1',
  'Weekly check-in',
  'Coffee chat',
  'Mentoring session',
  'Career chat',
  'Project sync',
  'Pairing session',
];
export const GROUP_TITLES = [
  'Vendor demo',
  'Budget review',
  'Design critique',
  'Roadmap planning',
  'Quarterly forecast',
  'Launch retro',
  'Hiring debrief',
  'Security review',
];
export const NEW_MEETING_TITLES = [
  'Contract walkthrough',
  'Pricing workshop',
  'Onboarding plan',
  'Offsite logistics',
  'Data migration kickoff',
  'Partner intro call',
  'Interview loop prep',
];
export const BACKGROUND_EVENT_TITLES = [
  'All-hands',
  'Team standup',
  'Lunch and learn',
  'Town hall',
  'Sprint planning',
  'Office hours',
];
export const TASK_TITLES = [
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
export const REQUESTED_TASKS = [
  'Share the Q3 revenue figures',
  'Sign the supplier contract',
  'Review the press release',
  'Approve the travel budget',
  'Send feedback on the mockups',
  'Confirm the offsite headcount',
  'Fill in the security questionnaire',
  'Update the pricing sheet',
];
export const BACKGROUND_TASKS = [
  'Clean up the shared drive',
  'Read the new travel policy',
  'Plan the team lunch',
  'Archive old tickets',
  'Refresh the OKR doc',
];
export const NEWSLETTERS = [
  [
    'IT Helpdesk',
    'it-helpdesk',
    'Scheduled maintenance this weekend',
    'The VPN will be unavailable on Saturday from 22:00 to 02:00.',
  ],
  ['People Team', 'people', 'Benefits enrolment is open', 'Enrolment for next year closes at the end of the month.'],
  ['Facilities', 'facilities', 'New coffee machines', 'The third floor kitchen has new coffee machines. Enjoy!'],
  [
    'Company News',
    'news',
    'This week at Northwind',
    'Highlights: two new customers, one new office, and a bake sale on Friday.',
  ],
];

const MONTHS = [
  'January',
  'February',
  'March',
  'April',
  'May',
  'June',
  'July',
  'August',
  'September',
  'October',
  'November',
  'December',
];

/** The ways an e-mail may name a date: the ISO date, "March 13", "13 March", "Mar 13", "13 Mar", or the weekday. */
export function dateMentions(date: string): string[] {
  const month = MONTHS[Number(date.slice(5, 7)) - 1]!;
  const day = String(Number(date.slice(8, 10)));
  return [
    date,
    `${month} ${day}`,
    `${day} ${month}`,
    `${month.slice(0, 3)} ${day}`,
    `${day} ${month.slice(0, 3)}`,
    weekdayOf(date),
  ];
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
