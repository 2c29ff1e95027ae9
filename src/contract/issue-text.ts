/**
 * Turns zod's issues into the error text of a failed validation: one readable line naming the item index and
 * field path (U14), never the object itself, and at most three issues with a count of the rest. Unions are
 * explained by the member the sender most likely meant rather than by every member.
 */
import type { z } from 'zod';
import { MESSAGE_FORM } from './item-schemas.js';
import { isRecord } from './records.js';

type Issue = z.core.$ZodIssue;
type Path = readonly PropertyKey[];

const MAX_REPORTED_ISSUES = 3;
const ITEM_LIST_KEYS = new Set<PropertyKey>(['output', 'input', 'instructions']);

export function describeIssues(issues: readonly Issue[], root: unknown, prefix: Path): string {
  const lines = [...new Set(issues.flatMap((issue) => describeIssue(issue, root, prefix)))];
  const shown = lines.slice(0, MAX_REPORTED_ISSUES).join('; ');
  const hidden = lines.length - MAX_REPORTED_ISSUES;
  return hidden > 0 ? `${shown} (+${hidden} more)` : shown;
}

function describeIssue(issue: Issue, root: unknown, prefix: Path): string[] {
  const path = [...prefix, ...issue.path];
  const value = valueAt(root, path);
  switch (issue.code) {
    case 'invalid_type':
      if (value === undefined) return [at(path, 'required')];
      if (issue.expected === 'int' && typeof value === 'number') {
        return [at(path, `expected integer, received ${value}`)];
      }
      return [at(path, `expected ${issue.expected}, received ${typeName(value)}`)];
    case 'invalid_value':
      if (value === undefined) return [at(path, 'required')];
      return [at(path, `expected ${issue.values.map(show).join('|')}, received ${show(value)}`)];
    case 'unrecognized_keys':
      return issue.keys.map((key) => at([...path, key], 'unknown field'));
    case 'invalid_union':
      return describeUnionIssue(issue, root, path, value);
    default:
      return [at(path, issue.message)];
  }
}

function describeUnionIssue(
  issue: Extract<Issue, { code: 'invalid_union' }>,
  root: unknown,
  path: Path,
  value: unknown,
): string[] {
  if (issue.discriminator !== undefined && issue.errors.length === 0) {
    // A discriminated union found no member for this `type` (the issue sits at `<holder>.type`).
    const holderPath = path.slice(0, -1);
    if (value === undefined) {
      return isItemPath(holderPath)
        ? [at(holderPath, 'Responses API output items must include a type discriminator')]
        : [at(path, 'required')];
    }
    return [at(path, `unknown ${kindOf(holderPath)} type ${show(value)}`)];
  }
  if (issue.errors.length === 0) return [at(path, issue.message)];

  // The only plain union at an item position is the message union (MESSAGE_FORM order).
  if (isItemPath(path) && issue.errors.length === Object.keys(MESSAGE_FORM).length) {
    const form = issue.errors[messageFormOf(value)] ?? [];
    return form.flatMap((inner) => describeIssue(inner, root, path));
  }

  const branch = closestBranch(issue.errors);
  if (branch.length > 0 && isRootMismatch(branch)) {
    if (value === undefined) return [at(path, 'required')];
    const expected = [...new Set(issue.errors.flatMap((errors) => errors.map(expectedOf)))];
    return [at(path, `expected ${expected.join(' or ')}, received ${typeName(value)}`)];
  }
  return branch.flatMap((inner) => describeIssue(inner, root, path));
}

/** Which message form the sender meant, judged from the content, so errors describe that form only. */
function messageFormOf(message: unknown): number {
  if (!isRecord(message)) return MESSAGE_FORM.easyInput;
  const content = message.content;
  if (!Array.isArray(content)) return MESSAGE_FORM.easyInput;
  const hasOutputParts = content.some(
    (part) => isRecord(part) && (part.type === 'output_text' || part.type === 'refusal'),
  );
  return hasOutputParts || message.role === undefined ? MESSAGE_FORM.output : MESSAGE_FORM.easyInput;
}

/** The union member that got furthest: not a plain type mismatch, deepest issue, fewest issues. */
function closestBranch(branches: readonly (readonly Issue[])[]): readonly Issue[] {
  let best: readonly Issue[] = [];
  let bestScore: number[] | undefined;
  for (const branch of branches) {
    const score = [
      isRootMismatch(branch) ? 0 : 1,
      Math.max(0, ...branch.map((issue) => issue.path.length)),
      -branch.length,
    ];
    if (bestScore === undefined || compareScores(score, bestScore) > 0) {
      best = branch;
      bestScore = score;
    }
  }
  return best;
}

function compareScores(a: readonly number[], b: readonly number[]): number {
  for (let i = 0; i < a.length; i++) {
    const diff = (a[i] ?? 0) - (b[i] ?? 0);
    if (diff !== 0) return diff;
  }
  return 0;
}

function isRootMismatch(branch: readonly Issue[]): boolean {
  return branch.every(
    (issue) => issue.path.length === 0 && (issue.code === 'invalid_type' || issue.code === 'invalid_value'),
  );
}

function expectedOf(issue: Issue): string {
  if (issue.code === 'invalid_type') return issue.expected === 'int' ? 'integer' : issue.expected;
  if (issue.code === 'invalid_value') return issue.values.map(show).join('|');
  return issue.message;
}

function isItemPath(path: Path): boolean {
  return path.length === 2 && ITEM_LIST_KEYS.has(path[0]!) && typeof path[1] === 'number';
}

function kindOf(holderPath: Path): string {
  if (isItemPath(holderPath)) return 'item';
  const parentKey = holderPath[holderPath.length - 2];
  if (parentKey === 'content' || parentKey === 'output') return 'content part';
  if (parentKey === 'annotations') return 'annotation';
  if (parentKey === 'tools') return 'tool';
  return holderPath[holderPath.length - 1] === 'tool_choice' ? 'tool_choice' : 'value';
}

function at(path: Path, text: string): string {
  const rendered = formatPath(path);
  return rendered === '' ? text : `${rendered}: ${text}`;
}

function formatPath(path: Path): string {
  let out = '';
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else if (typeof key === 'string' && /^[A-Za-z_$][\w$]*$/.test(key)) out += out === '' ? key : `.${key}`;
    else out += `[${JSON.stringify(String(key))}]`;
  }
  return out;
}

function valueAt(root: unknown, path: Path): unknown {
  let current = root;
  for (const key of path) {
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<PropertyKey, unknown>)[key];
  }
  return current;
}

function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

/** A short rendering of a primitive for error text; containers are named by type, never dumped. */
function show(value: unknown): string {
  if (typeof value === 'string') return `'${value.length > 40 ? `${value.slice(0, 40)}…` : value}'`;
  if (value === null || typeof value === 'number' || typeof value === 'boolean') return String(value);
  return typeName(value);
}
