import { isAssistantMessage } from '../../src/contract/index.js';
import { isRecord } from '../../src/contract/records.js';
import type { MathConfig } from './config.js';
import { compareAnswers, type MatchReason } from './equivalence.js';
import { extractAnswer, type ExtractionStrategy } from './extract.js';

/**
 * Score one finished trajectory: the answer is read from the final assistant message (the last `message` item of
 * `response.output`, its `output_text` parts), extracted with the configured strategies and compared with the
 * row's `expected_answer`. Reward is 1.0 for an equivalent answer, else 0.0; the verdict says why.
 */

// A type alias (not an interface) so it is assignable to the kit's open `VerifyOutcome` record.
export type MathVerdict = {
  reward: number;
  /** Kept in the row (as the reference's math environments do): a profile can show what was expected next to what came. */
  expected_answer: string;
  extracted_answer: string | null;
  extraction_strategy: ExtractionStrategy | null;
  match_reason: MatchReason | 'no_answer_found';
  /** 1 when an answer was found at all, else 0: its mean separates "wrong" from "never answered" in a profile. */
  answer_found: number;
  /** How many times the trajectory asked for the calculator tool. */
  calculator_calls: number;
};

export function verifyMath(output: readonly unknown[], expectedAnswer: string, config: MathConfig): MathVerdict {
  const calculatorCalls = output.filter(
    (item) => isRecord(item) && item.type === 'function_call' && item.name === 'calculator',
  ).length;
  const text = finalMessageText(output);
  const extracted = text === undefined ? undefined : extractAnswer(text, config.answerExtraction);
  if (!extracted) {
    return {
      reward: 0,
      expected_answer: expectedAnswer,
      extracted_answer: null,
      extraction_strategy: null,
      match_reason: 'no_answer_found',
      answer_found: 0,
      calculator_calls: calculatorCalls,
    };
  }
  const verdict = compareAnswers(extracted.answer, expectedAnswer, {
    relativeTolerance: config.relativeTolerance,
    absoluteTolerance: config.absoluteTolerance,
  });
  return {
    reward: verdict.equal ? 1 : 0,
    expected_answer: expectedAnswer,
    extracted_answer: extracted.answer,
    extraction_strategy: extracted.strategy,
    match_reason: verdict.reason,
    answer_found: 1,
    calculator_calls: calculatorCalls,
  };
}

/** The text of the last assistant message, or undefined when the trajectory has none (refusals are not answers). */
export function finalMessageText(output: readonly unknown[]): string | undefined {
  for (let i = output.length - 1; i >= 0; i--) {
    const item = output[i];
    if (!isAssistantMessage(item)) continue;
    const content = (item as { content?: unknown }).content;
    if (typeof content === 'string') return content;
    if (!Array.isArray(content)) return undefined;
    return content
      .filter(
        (part): part is { text: string } =>
          isRecord(part) && part.type === 'output_text' && typeof part.text === 'string',
      )
      .map((part) => part.text)
      .join('');
  }
  return undefined;
}
