import { MAX_ANSWER_CHARS } from './equivalence.js';

/**
 * Where the final answer sits in a model's text. Each strategy looks for one convention and takes its last
 * occurrence; the environment tries the configured strategies in order and the first that finds something wins:
 *
 * - `boxed`: `\boxed{…}` (or `\fbox{…}`), nested braces balanced, the last complete one (`\boxed 5` too);
 * - `hashes`: a GSM8K-style `#### 42` line;
 * - `answer_line`: a line `Answer: …` / `Final answer: …` (markdown bold allowed);
 * - `the_answer_is`: "… the answer is …" up to the end of the sentence;
 * - `last_number`: the last number in the text (`-1,234.5`, `3/4`, `75%`).
 *
 * Only the last MAX_SCAN_CHARS characters are read (answers come at the end, and a hostile megabyte of text must
 * not cost more than that), every scan is linear, and an answer is at most MAX_ANSWER_CHARS long.
 */

export const EXTRACTION_STRATEGIES = ['boxed', 'hashes', 'answer_line', 'the_answer_is', 'last_number'] as const;
export type ExtractionStrategy = (typeof EXTRACTION_STRATEGIES)[number];
export const DEFAULT_EXTRACTION: readonly ExtractionStrategy[] = [...EXTRACTION_STRATEGIES];

export const MAX_SCAN_CHARS = 50_000;
/** How many `\boxed` occurrences (from the end) are tried before giving up on unbalanced ones. */
const MAX_BOXED_TRIES = 16;

export interface ExtractedAnswer {
  answer: string;
  strategy: ExtractionStrategy;
}

const STRATEGY_FUNCTIONS: Record<ExtractionStrategy, (text: string) => string | undefined> = {
  boxed: lastBoxed,
  hashes: (text) => lastCapture(/^[ \t]*####[ \t]*(.+)$/gm, text),
  answer_line: (text) =>
    lastCapture(/^[ \t>*_#-]*(?:final[ \t]+)?answer[ \t]*(?:\*\*|__)?[ \t]*[:：][ \t]*(.+)$/gim, text),
  the_answer_is: (text) => {
    const sentence = lastCapture(/\bthe[ \t]+(?:final[ \t]+)?answer[ \t]+is[ \t]*:?[ \t]*(.+)$/gim, text);
    return sentence?.split(/\.\s/)[0]?.replace(/[.!]+$/, '');
  },
  last_number: lastNumber,
};

/** The answer in `text` by the first of `strategies` that finds one, or undefined. */
export function extractAnswer(
  text: string,
  strategies: readonly ExtractionStrategy[] = DEFAULT_EXTRACTION,
): ExtractedAnswer | undefined {
  const tail = text.length > MAX_SCAN_CHARS ? text.slice(-MAX_SCAN_CHARS) : text;
  for (const strategy of strategies) {
    const found = tidy(STRATEGY_FUNCTIONS[strategy](tail) ?? '');
    if (found) return { answer: found.slice(0, MAX_ANSWER_CHARS + 1), strategy };
  }
  return undefined;
}

/** Markdown emphasis and sentence punctuation around an answer are not part of it. */
function tidy(answer: string): string {
  return answer
    .trim()
    .replace(/^(?:\*\*|__)\s*|\s*(?:\*\*|__)$/g, '')
    .replace(/(?<=[^.])[.;,!]$/, '')
    .trim();
}

/** The content of the last balanced `\boxed{…}` / `\fbox{…}`, or of `\boxed X` (one token). */
function lastBoxed(text: string): string | undefined {
  let end = text.length;
  for (let tries = 0; tries < MAX_BOXED_TRIES; tries++) {
    const start = Math.max(text.lastIndexOf('\\boxed', end), text.lastIndexOf('\\fbox', end));
    if (start < 0) return undefined;
    const content = boxedContentAt(text, start);
    if (content !== undefined) return content;
    end = start - 1;
    if (end < 0) return undefined;
  }
  return undefined;
}

function boxedContentAt(text: string, start: number): string | undefined {
  let i = start + (text.startsWith('\\boxed', start) ? '\\boxed'.length : '\\fbox'.length);
  if (/[A-Za-z]/.test(text[i] ?? '')) return undefined; // `\boxedfoo` is another command
  while (text[i] === ' ') i++;
  if (text[i] !== '{') {
    const token = /^[^\s$]+/.exec(text.slice(i, i + MAX_ANSWER_CHARS))?.[0];
    return token?.replace(/[.,;]$/, '');
  }
  let depth = 0;
  const limit = Math.min(text.length, i + 2 * MAX_ANSWER_CHARS);
  for (let j = i; j < limit; j++) {
    const ch = text[j];
    if (ch === '\\') {
      j++; // `\{` and `\}` are literal braces, not grouping
      continue;
    }
    if (ch === '{') depth++;
    else if (ch === '}' && --depth === 0) return text.slice(i + 1, j);
  }
  return undefined;
}

function lastCapture(pattern: RegExp, text: string): string | undefined {
  let last: string | undefined;
  for (const match of text.matchAll(pattern)) last = match[1];
  return last;
}

const NUMBER = /[-−]?(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?(?:\/\d+)?|\.\d+)%?/g;

function lastNumber(text: string): string | undefined {
  const found = lastCapture(new RegExp(`(${NUMBER.source})`, 'g'), text);
  return found?.replace('−', '-');
}
