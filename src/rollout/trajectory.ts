import { sumUsage, type ResponseObject, type Usage } from '../contract/index.js';
import { encodeElement, verifyBody, type EncodedResponse } from './step-body.js';

export interface FunctionCallOutputItem {
  type: 'function_call_output';
  call_id: string;
  output: string;
}

/**
 * Everything the rollout produced so far: the service's items exactly as sent plus Gym's tool outputs, in order,
 * and the usage summed over the steps that reported it. Kept outside the loop so a failed rollout still has its
 * evidence (D2).
 *
 * The items are kept only encoded, each as `JSON.stringify` writes it, the moment it arrives: every body the rollout
 * sends (service calls, `/verify`, the `/v1/responses` reply) is written from these bytes, and a parsed item is
 * dropped with the step that read it. Only a failure row parses them back (`toResponse`).
 */
export class Trajectory {
  /** Every item so far, encoded. */
  readonly items: Buffer[] = [];
  /** Wall time of each step's service call (overload waits included), in milliseconds. */
  readonly stepLatenciesMs: number[] = [];
  steps = 0;
  stepsWithUsage = 0;
  /** Some step's usage detail objects were zeros filled in by Gym, not counts from the service (D24). */
  usageFilled = false;
  /** The last response's members, its `output` emptied (its items are in `items`). */
  private last: ResponseObject | undefined;
  private usage: Usage | null = null;
  /** Set by `sealForVerify`: the `/verify` body, which then holds the items. */
  private sealedBody: Buffer | undefined;

  addResponse(response: ResponseObject, latencyMs = 0, usageFilled = false): void {
    this.last = { ...response, output: [] };
    if (usageFilled) this.usageFilled = true;
    this.stepLatenciesMs.push(latencyMs);
    this.steps++;
    for (const item of response.output) this.items.push(encodeElement(item));
    if (response.usage != null) {
      this.stepsWithUsage++;
      this.usage = sumUsage(this.usage, response.usage);
    }
  }

  addToolOutput(item: FunctionCallOutputItem): void {
    this.items.push(encodeElement(item));
  }

  get isEmpty(): boolean {
    return this.last === undefined;
  }

  /** `_ng_step_latency_secs`: each step's service latency in seconds (millisecond precision). */
  stepLatenciesSecs(): number[] {
    return this.stepLatenciesMs.map((ms) => Math.round(ms) / 1000);
  }

  /** The last response, encoded, with `output` = every item so far and `usage` = the sum (null if none reported). */
  encoded(): EncodedResponse {
    if (!this.last) throw new Error('Trajectory.encoded() before any response');
    if (this.sealedBody) throw new Error('Trajectory.encoded() after sealForVerify');
    return { fields: { ...this.last, usage: this.usage }, items: this.items };
  }

  /**
   * The `/verify` body for `row` (`verifyBody`), after which the trajectory holds only that body: its items are in
   * it, and while the environment verifies, a rollout holds its trajectory once, not twice (the rollouts of a run
   * reach their verify steps together). Nothing is added after this.
   */
  sealForVerify(row: Record<string, unknown>): Buffer {
    const body = verifyBody(row, this.encoded());
    this.items.length = 0;
    this.sealedBody = body;
    return body;
  }

  /**
   * The same response as an object, its items parsed back from their encodings, or once sealed from the `/verify`
   * body (for a failure row's evidence, written as JSON: the same text either way).
   */
  toResponse(): ResponseObject {
    if (!this.last) throw new Error('Trajectory.toResponse() before any response');
    if (this.sealedBody) return (JSON.parse(this.sealedBody.toString('utf8')) as { response: ResponseObject }).response;
    const output = this.items.map((item) => JSON.parse(item.toString('utf8')) as unknown);
    return { ...this.last, output: output as ResponseObject['output'], usage: this.usage };
  }
}
