/**
 * Rebuilding a rollout's captured model calls into trainable token sequences: the reference's `prefix_merging`
 * (NeMo Gym's nemo_gym/token_id_capture/builder.py), in the order its steps are specified
 * (/work/shared/spec/training-capture.md, "Rebuilding a rollout"):
 *
 * 1. calls with no generated token are dropped (they carry no signal and would pose as parents);
 * 2. calls are taken by prompt length, then id: a parent's prompt + generation is a prefix of its child's prompt, so
 *    the order comes from the tokens, never from arrival;
 * 3. a call's parent is the earlier call whose cumulative sequence (prompt + generation) is the longest prefix of its
 *    prompt, found through a trie of those sequences; none makes a new root (a compacted context); two identical
 *    candidates quarantine the call and its subtree (ambiguous);
 * 4. siblings with the same prompt are a retry group: the sibling a later call extends is kept; none extended keeps
 *    the lowest id and marks the retry unresolved;
 * 5. every root-to-leaf path without a quarantined call is a chain, each link with its interstitial tokens (the
 *    prompt tokens added since the parent's sequence: tool results, user turns, template glue);
 * 6. the chain whose root call finished first (then id) is delivered; the others are branches, counted.
 *
 * `per_request` is the simpler alternative: one chain per call, no merging.
 */

/** One captured call, as the builder reads it (the reference's `TokenEntry`). */
export interface TokenEntry {
  model_call_id: string;
  prompt_token_ids: readonly number[];
  generation_token_ids: readonly number[];
  generation_log_probs: readonly number[];
  /** What the call generated, as Responses output items (text, tool calls), without token arrays. */
  output_items: readonly Record<string, unknown>[];
  /** When the call finished, Unix seconds: which root came first. */
  created_at: number;
}

export interface ChainLink {
  entry: TokenEntry;
  /** Prompt tokens added after the parent's cumulative sequence (loss mask 0); empty on the root. */
  interstitial: number[];
}

export interface Chain {
  /** `main` for the delivered chain, `branch-<n>` for the others, `req-<n>` for per_request. */
  chain_id: string;
  root_prompt: readonly number[];
  links: ChainLink[];
}

/** What the build kept, dropped or could not resolve (the reference's `BuildNotes`). */
export interface BuildNotes {
  builder: 'prefix_merging' | 'per_request';
  roots: number;
  chains: number;
  generated_tokens_captured: number;
  generated_tokens_delivered: number;
  delivered_fraction: number;
  unresolved_retries: string[];
  empty_generation_calls: string[];
}

export interface BuildOutput {
  chains: Chain[];
  /** Model call ids left out: ambiguous subtrees and retry siblings not kept. */
  quarantined: string[];
  /** The subset of `quarantined` that had two identical candidate parents. */
  ambiguous: string[];
  notes: BuildNotes;
}

interface CallNode {
  entry: TokenEntry;
  parent: CallNode | undefined;
  children: CallNode[];
  quarantined: boolean;
}

interface TrieNode {
  next: Map<number, TrieNode>;
  /** The calls whose cumulative sequence ends here. */
  ends: CallNode[];
}

/** The cumulative sequences (prompt + generation) of the calls placed so far, for the longest-prefix parent. */
class PrefixTrie {
  private readonly root: TrieNode = { next: new Map(), ends: [] };

  add(node: CallNode): void {
    let at = this.root;
    for (const id of sequenceOf(node.entry)) {
      let next = at.next.get(id);
      if (!next) {
        next = { next: new Map(), ends: [] };
        at.next.set(id, next);
      }
      at = next;
    }
    at.ends.push(node);
  }

  /** The calls whose sequence is the longest prefix of `prompt` (several: ambiguous). */
  longestPrefix(prompt: readonly number[]): CallNode[] {
    let best: CallNode[] = [];
    let at = this.root;
    for (const id of prompt) {
      const next = at.next.get(id);
      if (!next) break;
      at = next;
      if (at.ends.length > 0) best = at.ends;
    }
    return best;
  }
}

function* sequenceOf(entry: TokenEntry): Generator<number> {
  yield* entry.prompt_token_ids;
  yield* entry.generation_token_ids;
}

function byPromptLengthThenId(a: TokenEntry, b: TokenEntry): number {
  const byLength = a.prompt_token_ids.length - b.prompt_token_ids.length;
  if (byLength !== 0) return byLength;
  return a.model_call_id < b.model_call_id ? -1 : a.model_call_id > b.model_call_id ? 1 : 0;
}

function generated(entries: readonly TokenEntry[]): number {
  return entries.reduce((sum, e) => sum + e.generation_token_ids.length, 0);
}

export function perRequest(entries: readonly TokenEntry[]): BuildOutput {
  const ordered = [...entries].sort(byPromptLengthThenId);
  const chains = ordered.map((entry, i) => ({
    chain_id: `req-${i}`,
    root_prompt: entry.prompt_token_ids,
    links: [{ entry, interstitial: [] }],
  }));
  const tokens = generated(ordered);
  return {
    chains,
    quarantined: [],
    ambiguous: [],
    notes: {
      builder: 'per_request',
      roots: chains.length,
      chains: chains.length,
      generated_tokens_captured: tokens,
      generated_tokens_delivered: tokens,
      delivered_fraction: tokens > 0 ? 1 : 0,
      unresolved_retries: [],
      empty_generation_calls: [],
    },
  };
}

export function prefixMerging(all: readonly TokenEntry[]): BuildOutput {
  const emptyGeneration = all.filter((e) => e.generation_token_ids.length === 0).map((e) => e.model_call_id);
  const entries = all.filter((e) => e.generation_token_ids.length > 0).sort(byPromptLengthThenId);
  const { nodes, roots, quarantined, ambiguous } = placeCalls(entries);
  const unresolved = resolveRetries(nodes, quarantined);
  const chains = chainsOf(nodes);
  const main = deliver(chains);
  const captured = generated(entries);
  const delivered = main ? generated(main.links.map((link) => link.entry)) : 0;
  return {
    chains,
    quarantined,
    ambiguous,
    notes: {
      builder: 'prefix_merging',
      roots: roots.length,
      chains: chains.length,
      generated_tokens_captured: captured,
      generated_tokens_delivered: delivered,
      delivered_fraction: captured > 0 ? Math.round((delivered / captured) * 10_000) / 10_000 : 0,
      unresolved_retries: unresolved,
      empty_generation_calls: emptyGeneration,
    },
  };
}

/** Steps 2–3: each call under its longest-prefix parent, or a new root; ambiguous ones quarantined. */
function placeCalls(entries: readonly TokenEntry[]): {
  nodes: CallNode[];
  roots: CallNode[];
  quarantined: string[];
  ambiguous: string[];
} {
  const trie = new PrefixTrie();
  const nodes: CallNode[] = [];
  const roots: CallNode[] = [];
  const quarantined: string[] = [];
  const ambiguous: string[] = [];
  for (const entry of entries) {
    const candidates = trie.longestPrefix(entry.prompt_token_ids);
    const parent = candidates[0];
    const node: CallNode = { entry, parent, children: [], quarantined: false };
    if (parent) {
      parent.children.push(node);
      if (candidates.length > 1) {
        node.quarantined = true;
        quarantined.push(entry.model_call_id);
        ambiguous.push(entry.model_call_id);
      }
    } else {
      roots.push(node);
    }
    nodes.push(node);
    trie.add(node);
  }
  return { nodes, roots, quarantined, ambiguous };
}

/** Step 4: in each retry group keep the extended sibling(s), else the lowest id; returns the unresolved call ids. */
function resolveRetries(nodes: readonly CallNode[], quarantined: string[]): string[] {
  const unresolved: string[] = [];
  const byParent = new Map<CallNode | 'roots', Map<string, CallNode[]>>();
  for (const node of nodes) {
    const key = node.parent ?? 'roots';
    let groups = byParent.get(key);
    if (!groups) byParent.set(key, (groups = new Map<string, CallNode[]>()));
    const prompt = node.entry.prompt_token_ids.join(',');
    groups.set(prompt, [...(groups.get(prompt) ?? []), node]);
  }
  for (const groups of byParent.values()) {
    for (const group of groups.values()) {
      if (group.length < 2) continue;
      const extended = group.filter((n) => n.children.some((child) => !child.quarantined));
      let keep: Set<CallNode>;
      if (extended.length > 0) keep = new Set(extended);
      else {
        const lowest = group.reduce((a, b) => (b.entry.model_call_id < a.entry.model_call_id ? b : a));
        keep = new Set([lowest]);
        unresolved.push(...group.map((n) => n.entry.model_call_id));
      }
      for (const node of group) {
        if (keep.has(node) || node.quarantined) continue;
        node.quarantined = true;
        quarantined.push(node.entry.model_call_id);
      }
    }
  }
  return unresolved;
}

/** Step 5: every root-to-leaf path with no quarantined call, without recursion (rollouts can be long). */
function chainsOf(nodes: readonly CallNode[]): Chain[] {
  const chains: Chain[] = [];
  for (const leaf of nodes.filter((n) => n.children.length === 0)) {
    const path: CallNode[] = [];
    for (let at: CallNode | undefined = leaf; at; at = at.parent) path.unshift(at);
    if (path.some((n) => n.quarantined)) continue;
    const root = path[0]!.entry;
    const links: ChainLink[] = [];
    let before = 0;
    for (const [step, node] of path.entries()) {
      const prompt = node.entry.prompt_token_ids;
      links.push({ entry: node.entry, interstitial: step === 0 ? [] : prompt.slice(before) });
      before = prompt.length + node.entry.generation_token_ids.length;
    }
    chains.push({ chain_id: '', root_prompt: root.prompt_token_ids, links });
  }
  return chains;
}

/** Step 6: the chain whose root finished first (then id) is `main`; the rest are branches. */
function deliver(chains: Chain[]): Chain | undefined {
  const rootOf = (c: Chain): TokenEntry => c.links[0]!.entry;
  const main = chains.reduce<Chain | undefined>((best, c) => {
    if (!best) return c;
    const [a, b] = [rootOf(c), rootOf(best)];
    if (a.created_at !== b.created_at) return a.created_at < b.created_at ? c : best;
    return a.model_call_id < b.model_call_id ? c : best;
  }, undefined);
  let branch = 0;
  for (const c of chains) c.chain_id = c === main ? 'main' : `branch-${branch++}`;
  return main;
}

/** A chain as one sequence for a trainer: every token, a loss mask (1 = generated) and a log-prob per token. */
export interface FlatSequence {
  token_ids: number[];
  loss_mask: number[];
  /** The captured log-prob on generated tokens, 0 on prompt and interstitial tokens. */
  log_probs: number[];
}

export function flatten(chain: Chain): FlatSequence {
  const out: FlatSequence = { token_ids: [], loss_mask: [], log_probs: [] };
  const context = (ids: readonly number[]): void => {
    for (const id of ids) {
      out.token_ids.push(id);
      out.loss_mask.push(0);
      out.log_probs.push(0);
    }
  };
  context(chain.root_prompt);
  for (const link of chain.links) {
    context(link.interstitial);
    link.entry.generation_token_ids.forEach((id, i) => {
      out.token_ids.push(id);
      out.loss_mask.push(1);
      out.log_probs.push(link.entry.generation_log_probs[i]!);
    });
  }
  return out;
}
