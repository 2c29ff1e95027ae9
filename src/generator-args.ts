/**
 * The command line the data generators share (`--rows N --out PATH --seed S` and a few of their own): one reader of
 * `--name value` / `--name=value` pairs and bare switches, so every generator rejects unknown and valueless flags with
 * the same words; each generator then validates its own values.
 */
export interface GeneratorFlags {
  /** `--name` → value, for the valued flags given. */
  values: Map<string, string>;
  /** The bare switches given. */
  switches: Set<string>;
}

export function readGeneratorFlags(
  argv: readonly string[],
  valued: readonly string[],
  switches: readonly string[] = [],
): GeneratorFlags {
  const flags: GeneratorFlags = { values: new Map(), switches: new Set() };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i]!;
    if (switches.includes(flag)) {
      flags.switches.add(flag);
      continue;
    }
    const [name, inline] = flag.split('=', 2) as [string, string | undefined];
    if (!valued.includes(name)) throw new Error(`unknown argument '${flag}'`);
    const value = inline ?? argv[++i];
    if (value === undefined) throw new Error(`${name} needs a value`);
    flags.values.set(name, value);
  }
  return flags;
}

/** `--seed` as an integer (default 0). */
export function seedFlag(values: Map<string, string>): number {
  const seed = Number(values.get('--seed') ?? '0');
  if (!Number.isInteger(seed)) throw new Error(`--seed must be an integer, got '${values.get('--seed')}'`);
  return seed;
}
