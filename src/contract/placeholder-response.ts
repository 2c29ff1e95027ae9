/**
 * The Responses object that stands in for a service's answer on a failure row (docs/design.md, D2), so
 * every row has the same shape whether or not the service answered.
 */
import type { ResponseObject } from './body-schemas.js';

/** A fresh object per call, so a caller that edits one row's response never changes another's. */
export function placeholderResponse(): ResponseObject {
  return {
    id: 'remote_agent_failure',
    created_at: 0,
    model: 'remote_agent',
    object: 'response',
    output: [
      {
        id: 'msg_0',
        type: 'message',
        role: 'assistant',
        status: 'completed',
        content: [{ type: 'output_text', text: '', annotations: [] }],
      },
    ],
    parallel_tool_calls: false,
    tool_choice: 'auto',
    tools: [],
  };
}
