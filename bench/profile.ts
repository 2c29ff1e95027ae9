import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * Reads the `.cpuprofile` files `node --cpu-prof` wrote for scenario 1's processes and lists, per process role,
 * the functions with the most self time — the input for deciding what to optimise.
 */

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}

interface CpuProfile {
  nodes: Array<{ id: number; callFrame: CallFrame }>;
  samples: number[];
  timeDeltas: number[];
}

type Role = 'collector' | 'agent' | 'environment' | 'supervisor';

function roleOf(profile: CpuProfile): Role {
  const urls = profile.nodes.map((node) => node.callFrame.url);
  if (urls.some((url) => url.includes('/src/collect/collect.js'))) return 'collector';
  if (urls.some((url) => url.includes('/responses_api_agents/remote_agent/'))) return 'agent';
  if (urls.some((url) => url.includes('/resources_servers/'))) return 'environment';
  return 'supervisor';
}

function label(frame: CallFrame, root: string): string {
  if (!frame.url) return frame.functionName || '(anonymous)';
  const file = frame.url.replace(/^file:\/\//, '').replace(`${root}/`, '');
  return `${frame.functionName || '(anonymous)'} ${file}:${frame.lineNumber + 1}`;
}

/** Self time per function, summed over every profile of the same role. */
export function summarizeProfiles(dir: string, root: string, top = 15): string[] {
  const byRole = new Map<Role, Map<string, number>>();
  for (const file of readdirSync(dir).filter((name) => name.endsWith('.cpuprofile'))) {
    const profile = JSON.parse(readFileSync(path.join(dir, file), 'utf8')) as CpuProfile;
    const role = roleOf(profile);
    const totals = byRole.get(role) ?? new Map<string, number>();
    byRole.set(role, totals);
    const labels = new Map(profile.nodes.map((node) => [node.id, label(node.callFrame, root)]));
    profile.samples.forEach((id, index) => {
      const name = labels.get(id)!;
      totals.set(name, (totals.get(name) ?? 0) + (profile.timeDeltas[index] ?? 0));
    });
  }
  const lines: string[] = [];
  for (const role of ['collector', 'agent', 'environment', 'supervisor'] as const) {
    const totals = byRole.get(role);
    if (!totals) continue;
    totals.delete('(idle)');
    const busy = [...totals.values()].reduce((a, b) => a + b, 0);
    lines.push(`${role}: ${(busy / 1e6).toFixed(2)} s busy`);
    for (const [name, micros] of [...totals].sort((a, b) => b[1] - a[1]).slice(0, top)) {
      lines.push(`  ${((100 * micros) / busy).toFixed(1).padStart(5)}%  ${name}`);
    }
  }
  return lines;
}
