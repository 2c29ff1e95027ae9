/**
 * The counter environment's two tools as dataset rows declare them in `responses_create_params.tools` (the same
 * objects, in the same key order, as `data/example.jsonl`). One definition for the generator, the checker and tests.
 */
export const INCREMENT_COUNTER_TOOL = {
  name: 'increment_counter',
  parameters: {
    type: 'object',
    properties: { count: { type: 'integer', description: '' } },
    required: ['count'],
    additionalProperties: false,
  },
  strict: true,
  type: 'function',
  description: '',
};

export const GET_COUNTER_VALUE_TOOL = {
  name: 'get_counter_value',
  parameters: { type: 'object', properties: {}, required: [], additionalProperties: false },
  strict: true,
  type: 'function',
  description: '',
};

export const COUNTER_TOOLS = [INCREMENT_COUNTER_TOOL, GET_COUNTER_VALUE_TOOL];
