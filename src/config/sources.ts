/**
 * Which source (config file, env.yaml, command-line override) wrote a key, so errors can point at it.
 * Lookups go from the highest-precedence layer down, falling back to the nearest written ancestor.
 */
import { formatPath } from './types.js';
import type { SourcePosition } from './yaml-io.js';

export interface SourceLayer {
  /** A file path, or the override token for command-line keys. */
  label: string;
  kind: 'file' | 'override';
  positions: Map<string, SourcePosition | undefined>;
}

export class ConfigSources {
  /** Lowest precedence first. */
  private readonly layers: SourceLayer[] = [];

  addFile(file: string, positions: Map<string, SourcePosition>): void {
    this.layers.push({ label: file, kind: 'file', positions });
  }

  addOverride(token: string, path: readonly string[]): void {
    this.layers.push({ label: token, kind: 'override', positions: new Map([[formatPath(path), undefined]]) });
  }

  /** `in 'f.yaml' at line 3` / `in the command-line override '+a=1'` / '' when unknown. */
  describe(path: ReadonlyArray<string | number>): string {
    for (let length = path.length; length > 0; length--) {
      const key = formatPath(path.slice(0, length));
      for (let i = this.layers.length - 1; i >= 0; i--) {
        const layer = this.layers[i]!;
        if (!layer.positions.has(key)) continue;
        if (layer.kind === 'override') return `in the command-line override '${layer.label}'`;
        const position = layer.positions.get(key);
        return position ? `in '${layer.label}' at line ${position.line}` : `in '${layer.label}'`;
      }
    }
    return '';
  }

  /** ` (in 'f.yaml' at line 3)` to follow a key in a message, or '' when the source is unknown. */
  at(path: ReadonlyArray<string | number>): string {
    const where = this.describe(path);
    return where === '' ? '' : ` (${where})`;
  }
}
