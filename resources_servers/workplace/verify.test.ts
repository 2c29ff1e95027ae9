import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { cloneOffice, type Office } from './office.js';
import { MAX_OFFICE_ITEMS, runTool, type OfficeSession, type ToolName } from './tools.js';
import { ExpectedChangesSchema, metricsByDifficulty, verifyOffice, type ExpectedChange } from './verify.js';

/**
 * The verifier on hand-made offices, through the real tools: each case applies a list of tool calls to a fresh
 * copy of the office and judges the result. The tricky cases are the ones agents actually produce: the right
 * change on the wrong (look-alike) event, a stray extra change, addresses in another case or with the name,
 * repeated idempotent actions, and duplicated side effects.
 */

const USER = 'alex.morgan@northwind.example';
const DANA = 'dana.whitfield@northwind.example';
const DANA_LOOKALIKE = 'dana.whitman@northwind.example';

function office(): Office {
  return {
    today: '2026-03-09',
    user: { name: 'Alex Morgan', email: USER },
    contacts: [
      { id: 'c_01', name: 'Dana Whitfield', email: DANA, team: 'Design', title: 'Designer' },
      { id: 'c_02', name: 'Dana Whitman', email: DANA_LOOKALIKE, team: 'Sales', title: 'Manager' },
      { id: 'c_03', name: 'Wei Zhang', email: 'wei.zhang@northwind.example', team: 'Finance', title: 'Analyst' },
    ],
    emails: [
      {
        id: 'em_01',
        folder: 'inbox',
        from: DANA,
        from_name: 'Dana Whitfield',
        to: [USER],
        cc: [],
        subject: 'Hi',
        body: 'Hello!',
        date: '2026-03-08T10:00',
      },
    ],
    events: [
      {
        id: 'ev_01',
        title: '1:1',
        start: '2026-03-10T14:00',
        end: '2026-03-10T14:30',
        attendees: [DANA],
        location: 'Room Aster',
      },
      {
        id: 'ev_02',
        title: '1:1',
        start: '2026-03-11T14:00',
        end: '2026-03-11T14:30',
        attendees: [DANA_LOOKALIKE],
        location: 'Room Birch',
      },
      {
        id: 'ev_03',
        title: 'Budget review',
        start: '2026-03-12T09:00',
        end: '2026-03-12T10:00',
        attendees: ['wei.zhang@northwind.example', DANA],
        location: 'Room Cedar',
      },
    ],
    tasks: [
      { id: 'task_01', title: 'Renew parking permit', due: '2026-03-13', status: 'open' },
      { id: 'task_02', title: 'Renew parking permit for visitors', due: '2026-03-13', status: 'open' },
    ],
  };
}

const MOVE_AND_TELL: ExpectedChange[] = [
  { kind: 'event_updated', event_id: 'ev_01', fields: { start: '2026-03-13T14:00', end: '2026-03-13T14:30' } },
  {
    kind: 'email_sent',
    recipients: [DANA],
    mentions: [
      ['2026-03-13', 'March 13', 'Friday'],
      ['14:00', '2 pm', '2pm'],
    ],
  },
];

type Call = [ToolName, Record<string, unknown>];

function judge(calls: Call[], expected: ExpectedChange[], start: Office = office()) {
  const session: OfficeSession = { office: cloneOffice(start), nextId: 0 };
  const results = calls.map(([name, args]) => runTool(name, args, session));
  return { verdict: verifyOffice(start, session.office, expected), results };
}

const move = (id = 'ev_01'): Call => [
  'update_event',
  { event_id: id, start: '2026-03-13T14:00', end: '2026-03-13T14:30' },
];
const tell = (to: string[] = [DANA], body = 'Moved our 1:1 to Friday 2026-03-13 at 14:00.'): Call => [
  'send_email',
  { to, subject: 'New slot', body },
];

describe('workplace verifier', () => {
  test('the exact changes score 1 with every check passed and nothing else changed', () => {
    const { verdict } = judge([move(), tell()], MOVE_AND_TELL);
    assert.deepEqual(verdict, {
      reward: 1,
      state_checks_passed: 2,
      state_checks_total: 2,
      state_check_fraction: 1,
      unexpected_changes: 0,
      failed_checks: [],
      unexpected_change_details: [],
    });
  });

  test('doing nothing passes no check and changes nothing', () => {
    const { verdict } = judge([], MOVE_AND_TELL);
    assert.equal(verdict.reward, 0);
    assert.equal(verdict.state_checks_passed, 0);
    assert.equal(verdict.unexpected_changes, 0);
    assert.match(verdict.failed_checks[1]!, /no e-mail was sent/);
  });

  test('an extra unexpected change costs the reward even when every check passes', () => {
    const { verdict } = judge([move(), tell(), ['complete_task', { task_id: 'task_02' }]], MOVE_AND_TELL);
    assert.equal(verdict.reward, 0);
    assert.equal(verdict.state_checks_passed, 2);
    assert.equal(verdict.unexpected_changes, 1);
    assert.deepEqual(verdict.unexpected_change_details, [
      "task task_02 'Renew parking permit for visitors' was marked done",
    ]);
  });

  test('the right change on the wrong (look-alike) event fails the check and counts as an unexpected change', () => {
    const { verdict } = judge([move('ev_02'), tell()], MOVE_AND_TELL);
    assert.equal(verdict.reward, 0);
    assert.equal(verdict.state_checks_passed, 1);
    assert.equal(verdict.unexpected_changes, 1);
    assert.match(verdict.failed_checks[0]!, /event ev_01 updated .*start is "2026-03-10T14:00"/);
    assert.deepEqual(verdict.unexpected_change_details, ["event ev_02 '1:1' changed start, end"]);
  });

  test('an expected update that also changes another field of the event is an unexpected change', () => {
    const { verdict } = judge(
      [
        [
          'update_event',
          { event_id: 'ev_01', start: '2026-03-13T14:00', end: '2026-03-13T14:30', location: 'Room Elm' },
        ],
        tell(),
      ],
      MOVE_AND_TELL,
    );
    assert.equal(verdict.state_checks_passed, 2);
    assert.deepEqual(verdict.unexpected_change_details, ["event ev_01 '1:1' changed location"]);
  });

  test('addresses compare without case, surrounding whitespace or a display name', () => {
    for (const to of [[' Dana.Whitfield@NORTHWIND.example '], ['Dana Whitfield <dana.whitfield@northwind.example>']]) {
      const { verdict } = judge([move(), tell(to)], MOVE_AND_TELL);
      assert.equal(verdict.reward, 1, JSON.stringify(to));
    }
    // Copying the user themself is not another recipient.
    assert.equal(
      judge([move(), ['send_email', { to: [DANA], cc: [USER], subject: 'x', body: 'Friday at 2 PM' }]], MOVE_AND_TELL)
        .verdict.reward,
      1,
    );
    // Another recipient is a different e-mail.
    const extra = judge([move(), tell([DANA, 'wei.zhang@northwind.example'])], MOVE_AND_TELL).verdict;
    assert.equal(extra.state_checks_passed, 1);
    assert.equal(extra.unexpected_changes, 1);
  });

  test('mentions accept any listed form, case-insensitively, and fail when one is missing', () => {
    assert.equal(judge([move(), tell([DANA], 'NEW TIME: march 13, 2PM')], MOVE_AND_TELL).verdict.reward, 1);
    const missingTime = judge([move(), tell([DANA], 'Moved to Friday.')], MOVE_AND_TELL).verdict;
    assert.equal(missingTime.state_checks_passed, 1);
    assert.match(
      missingTime.failed_checks[0]!,
      /e-mail sent to dana.whitfield@northwind.example mentioning .*14:00 or 2 pm/,
    );
  });

  test('repeating an idempotent action is free; a duplicated side effect is one unexpected change', () => {
    const twice = judge(
      [move(), move(), tell(), ['complete_task', { task_id: 'task_01' }], ['complete_task', { task_id: 'task_01' }]],
      [...MOVE_AND_TELL, { kind: 'task_completed', task_id: 'task_01' }],
    );
    assert.equal(twice.verdict.reward, 1);
    assert.equal(twice.results[4]!.already_completed, true);

    const twoEmails = judge([move(), tell(), tell()], MOVE_AND_TELL).verdict;
    assert.equal(twoEmails.state_checks_passed, 2);
    assert.equal(twoEmails.unexpected_changes, 1);
    assert.match(
      twoEmails.unexpected_change_details[0]!,
      /^e-mail 'New slot' to dana.whitfield@northwind.example was sent$/,
    );

    const create: Call = [
      'create_event',
      { title: 'Pricing workshop', start: '2026-03-12T15:00', end: '2026-03-12T15:45', attendees: [DANA] },
    ];
    const expected: ExpectedChange[] = [
      {
        kind: 'event_created',
        title: 'Pricing workshop',
        start: '2026-03-12T15:00',
        end: '2026-03-12T15:45',
        attendees: [DANA],
      },
    ];
    assert.equal(judge([create], expected).verdict.reward, 1);
    const twoEvents = judge([create, create], expected).verdict;
    assert.deepEqual([twoEvents.reward, twoEvents.state_checks_passed, twoEvents.unexpected_changes], [0, 1, 1]);
  });

  test('deleting and re-creating an event is not an update of it', () => {
    const { verdict } = judge(
      [
        ['delete_event', { event_id: 'ev_01' }],
        [
          'create_event',
          {
            title: '1:1',
            start: '2026-03-13T14:00',
            end: '2026-03-13T14:30',
            attendees: [DANA],
            location: 'Room Aster',
          },
        ],
        tell(),
      ],
      MOVE_AND_TELL,
    );
    assert.equal(verdict.reward, 0);
    assert.match(verdict.failed_checks[0]!, /the event was deleted/);
    assert.equal(verdict.unexpected_changes, 2);
  });

  test('task titles compare without case, extra whitespace, quotes or a final full stop; the due date must match', () => {
    const expected: ExpectedChange[] = [{ kind: 'task_created', title: 'Send the signed NDA', due: '2026-03-12' }];
    assert.equal(
      judge([['create_task', { title: '  "send the  SIGNED nda."', due_date: '2026-03-12' }]], expected).verdict.reward,
      1,
    );
    assert.equal(
      judge([['create_task', { title: 'Send the signed NDA', due_date: '2026-03-13' }]], expected).verdict.reward,
      0,
    );
    assert.equal(judge([['create_task', { title: 'Send the signed NDA' }]], expected).verdict.reward, 0);
  });

  test('completing the look-alike task fails the check and is an unexpected change', () => {
    const { verdict } = judge(
      [['complete_task', { task_id: 'task_02' }]],
      [{ kind: 'task_completed', task_id: 'task_01' }],
    );
    assert.deepEqual([verdict.reward, verdict.state_checks_passed, verdict.unexpected_changes], [0, 0, 1]);
    assert.match(verdict.failed_checks[0]!, /the task is still open/);
  });

  test('cancelling only the named occurrence; attendees are compared as a set', () => {
    const expected: ExpectedChange[] = [
      { kind: 'event_deleted', event_id: 'ev_03' },
      {
        kind: 'email_sent',
        recipients: [DANA, 'wei.zhang@northwind.example'],
        mentions: [['Budget review'], ['cancel']],
      },
    ];
    const right = judge(
      [
        ['delete_event', { event_id: 'ev_03' }],
        tell(['wei.zhang@northwind.example', DANA], 'The budget review is canceled.'),
      ],
      expected,
    );
    assert.equal(right.verdict.reward, 1);
    const wrong = judge([['delete_event', { event_id: 'ev_01' }]], expected).verdict;
    assert.deepEqual([wrong.state_checks_passed, wrong.unexpected_changes], [0, 1]);
    assert.deepEqual(wrong.unexpected_change_details, ["event ev_01 '1:1' was deleted"]);
  });

  test('a tool error changes nothing', () => {
    const { verdict, results } = judge(
      [['update_event', { event_id: 'ev_01', start: '2026-03-13T15:00', end: '2026-03-13T14:30' }]],
      MOVE_AND_TELL,
    );
    assert.match(String(results[0]!.error), /end 2026-03-13T14:30 is not after start 2026-03-13T15:00/);
    assert.equal(verdict.unexpected_changes, 0);
    assert.equal(
      judge([['send_email', { to: ['Dana'], subject: 'x', body: 'y' }]], MOVE_AND_TELL).results[0]!.error,
      "'Dana' in to is not an e-mail address: look it up with find_contacts",
    );
  });

  test('an office holds at most MAX_OFFICE_ITEMS tasks: one more is refused and changes nothing', () => {
    const crowded = office();
    for (let i = crowded.tasks.length; i < MAX_OFFICE_ITEMS; i++)
      crowded.tasks.push({ id: `t_${i}`, title: `Task ${i}`, due: null, status: 'open' });
    const { results, verdict } = judge(
      [['create_task', { title: 'One more' }]],
      [{ kind: 'task_completed', task_id: 'task_01' }],
      crowded,
    );
    assert.match(String(results[0]!.error), /the task list is full \(1000 items\)/);
    assert.equal(verdict.unexpected_changes, 0);
  });

  test('expected changes are validated: an unknown kind or an empty list is refused', () => {
    assert.equal(ExpectedChangesSchema.safeParse([]).success, false);
    const bad = ExpectedChangesSchema.safeParse([{ kind: 'event_moved', event_id: 'ev_01' }]);
    assert.equal(bad.success, false);
    assert.deepEqual(bad.error.issues[0]!.path, [0, 'kind']);
  });

  test('aggregate metrics: mean reward and partial credit per difficulty, rows without the fields ignored', () => {
    const rollout = (difficulty: number, reward: number, fraction: number) => ({
      difficulty,
      reward,
      state_check_fraction: fraction,
    });
    assert.deepEqual(
      metricsByDifficulty([[rollout(2, 1, 1), rollout(2, 0, 0.5)], [rollout(1, 0, 0)], [{ reward: 1 }]]),
      {
        'mean/reward@difficulty_1': 0,
        'mean/state_check_fraction@difficulty_1': 0,
        'mean/reward@difficulty_2': 0.5,
        'mean/state_check_fraction@difficulty_2': 0.75,
      },
    );
  });
});
