/**
 * data/example.jsonl of `gym new environment NAME`: three stockroom tasks, each a prompt with the tools declared,
 * the shelf to seed (`stock`) and the answer key (`expected_stock`, `expected_answer`). The tool schemas are written
 * out as `environment.toolSchemas` renders the generated app.ts; its app.test.ts fails when the two drift apart.
 */

/** What the example rows need besides the prompt; the tools are `TOOL_SCHEMAS` below. */
interface StockTask {
  prompt: string;
  stock: Record<string, number>;
  expected_stock: Record<string, number>;
  expected_answer: number;
}

const TASKS: StockTask[] = [
  {
    prompt: 'Take 3 apple from the shelf, then tell me how many apple are left.',
    stock: { apple: 5, pear: 2 },
    expected_stock: { apple: 2, pear: 2 },
    expected_answer: 2,
  },
  {
    prompt: 'Take 10 bolt, then take 5 washer, then tell me how many washer are left.',
    stock: { bolt: 40, nut: 12, washer: 9 },
    expected_stock: { bolt: 30, nut: 12, washer: 4 },
    expected_answer: 4,
  },
  {
    prompt: 'Take 4 pencil from the shelf, then tell me how many pencil are left.',
    stock: { pencil: 4, eraser: 1 },
    expected_stock: { pencil: 0, eraser: 1 },
    expected_answer: 0,
  },
];

const ITEM = { type: 'string', description: 'the item name, e.g. apple' };

/** The tools as `environment.toolSchemas` renders app.ts's definitions (app.test.ts keeps the two equal). */
const TOOL_SCHEMAS = [
  {
    type: 'function',
    name: 'check_stock',
    description: 'Look up how many of an item are on the shelf. Returns {item, quantity}.',
    parameters: { type: 'object', properties: { item: ITEM }, required: ['item'], additionalProperties: false },
    strict: true,
  },
  {
    type: 'function',
    name: 'take_item',
    description: 'Take some of an item off the shelf. Returns {item, taken, remaining}; fails when fewer are in stock.',
    parameters: {
      type: 'object',
      properties: { item: ITEM, quantity: { type: 'integer', minimum: 1, description: 'how many to take' } },
      required: ['item', 'quantity'],
      additionalProperties: false,
    },
    strict: true,
  },
];

/** data/example.jsonl: one task per line. */
export function exampleRows(): string {
  return TASKS.map(({ prompt, ...fields }) => {
    const row = {
      responses_create_params: { input: [{ role: 'user', content: prompt }], tools: TOOL_SCHEMAS },
      ...fields,
    };
    return `${JSON.stringify(row)}\n`;
  }).join('');
}
