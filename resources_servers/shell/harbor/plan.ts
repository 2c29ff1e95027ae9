/**
 * A Harbor task's Dockerfile as the plan its seed follows (see dockerfile.ts for what each instruction becomes):
 * where the work dir is mounted, the steps in order (files to put in, commands to run), the environment the
 * commands end up with, the base image (named, not used) and a note on each instruction that is ignored.
 */
import { resolveCopy, type SeedFile } from './copy.js';
import {
  HarborTaskError,
  insideMount,
  pairs,
  parseDockerfile,
  sandboxPath,
  substitute,
  unusableMount,
  words,
  type Instruction,
} from './dockerfile.js';

export type PlanStep =
  | { kind: 'files'; line: number; files: Record<string, SeedFile>; dirs: string[] }
  | { kind: 'run'; line: number; command: string; cwd: string; env: Record<string, string> };

export interface DockerPlan {
  /** FROM's image: named in the seed's notes as not used. */
  baseImage: string | undefined;
  /** Where the session's work dir is mounted: the first WORKDIR, or /work when there is none. */
  workMount: string;
  /** The last WORKDIR: where commands start. */
  cwd: string;
  /** What ENV set, as the commands see it. */
  env: Record<string, string>;
  steps: PlanStep[];
  /** One line per instruction left out (EXPOSE, CMD, …), and the base image. */
  notes: string[];
}

const IGNORED = new Set([
  'CMD',
  'ENTRYPOINT',
  'EXPOSE',
  'LABEL',
  'MAINTAINER',
  'VOLUME',
  'HEALTHCHECK',
  'STOPSIGNAL',
  'SHELL',
  'ONBUILD',
  'USER',
]);

export interface PlanContext {
  /** `<task>/environment/Dockerfile`, for messages. */
  where: string;
  /** The build context (`environment/`). */
  contextDir: string;
  /** The environment commands start from (PATH, HOME, …): what `$PATH` in an ENV expands to. */
  baseEnv: Readonly<Record<string, string>>;
}

/** The first WORKDIR (its variables from the ENV and ARG lines before it), or /work. */
function findMount(instructions: Instruction[], context: PlanContext): string {
  const vars: Record<string, string> = { ...context.baseEnv };
  for (const instruction of instructions) {
    if (instruction.keyword === 'ENV' || instruction.keyword === 'ARG')
      for (const [key, value] of pairs(instruction.args)) vars[key] = substitute(value ?? vars[key] ?? '', vars);
    if (instruction.keyword !== 'WORKDIR') continue;
    const mount = sandboxPath('/', substitute(words(instruction.args)[0] ?? '', vars));
    const unusable = unusableMount(mount);
    if (unusable)
      throw new HarborTaskError(
        `${context.where}:${instruction.line}: WORKDIR ${mount} cannot be the session's work dir: ${unusable}. Use a directory of its own, such as /app`,
      );
    return mount;
  }
  return '/work';
}

export function planDockerfile(text: string, context: PlanContext): DockerPlan {
  const instructions = parseDockerfile(text, context.where);
  const froms = instructions.filter((instruction) => instruction.keyword === 'FROM');
  if (froms.length > 1)
    throw new HarborTaskError(
      `${context.where}:${froms[1]!.line}: a multi-stage build (a second FROM) is not supported: images are not built here, the steps run over the host's system`,
    );
  const mount = findMount(instructions, context);
  const plan: DockerPlan = {
    baseImage: froms[0] ? words(froms[0].args).find((word) => !word.startsWith('--')) : undefined,
    workMount: mount,
    cwd: mount,
    env: {},
    steps: [],
    notes: [],
  };
  const args: Record<string, string> = {};
  const knownDirs = new Set([mount]);
  const ignored: string[] = [];
  const vars = (): Record<string, string> => ({ ...context.baseEnv, ...args, ...plan.env });
  for (const instruction of instructions) {
    const at = `${context.where}:${instruction.line}`;
    switch (instruction.keyword) {
      case 'FROM':
        break;
      case 'ENV':
      case 'ARG':
        for (const [key, value] of pairs(instruction.args)) {
          const into = instruction.keyword === 'ENV' ? plan.env : args;
          if (value !== undefined || into[key] === undefined) into[key] = substitute(value ?? '', vars());
        }
        break;
      case 'WORKDIR': {
        const next = sandboxPath(plan.cwd, substitute(words(instruction.args)[0] ?? '', vars()));
        const relative = insideMount(mount, next);
        if (relative === undefined)
          throw new HarborTaskError(
            `${at}: WORKDIR ${next} lies outside the work dir ${mount} (the first WORKDIR); later WORKDIRs must stay inside it`,
          );
        plan.cwd = next;
        knownDirs.add(next);
        if (relative !== '') plan.steps.push({ kind: 'files', line: instruction.line, files: {}, dirs: [relative] });
        break;
      }
      case 'COPY':
      case 'ADD': {
        const copy = resolveCopy(instruction, { ...context, cwd: plan.cwd, mount, vars: vars(), knownDirs });
        plan.steps.push({ kind: 'files', line: instruction.line, ...copy });
        break;
      }
      case 'RUN':
        plan.steps.push({
          kind: 'run',
          line: instruction.line,
          command: runCommand(instruction),
          cwd: plan.cwd,
          env: { ...args, ...plan.env },
        });
        break;
      default:
        if (!IGNORED.has(instruction.keyword))
          throw new HarborTaskError(`${at}: unknown Dockerfile instruction ${instruction.keyword}`);
        ignored.push(`${instruction.keyword} (line ${instruction.line})`);
    }
  }
  if (plan.baseImage)
    plan.notes.push(`base image ${plan.baseImage} (FROM) not used: the steps run over this host's system`);
  if (ignored.length > 0) plan.notes.push(`ignored: ${ignored.join(', ')}`);
  return plan;
}

/** A RUN's command for `/bin/sh -c`: its heredocs put back (or, for `RUN <<EOF`, the script itself), exec form quoted. */
function runCommand(instruction: Instruction): string {
  const args = instruction.args.replace(/^(--[a-z-]+=\S+\s+)+/, '');
  if (args.startsWith('[')) {
    const argv = words(args);
    return argv.map((word) => (/^[\w./@%+=:,-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`)).join(' ');
  }
  const [first, ...rest] = instruction.heredocs;
  if (first && /^<<-?["']?\w+["']?\s*$/.test(args)) return first.body;
  return [first, ...rest]
    .filter((doc) => doc !== undefined)
    .reduce((command, doc) => `${command}\n${doc.body}${doc.delimiter}`, args);
}
