// The smallest complete agent service for the counter tasks ("add 1 then add 2 then get the count").
// Run: node dist/examples/minimal/service.js   (PORT=9000 by default). In your project: from 'tsgym/service'.
import { serve, toolHistory, userMessages } from '../../src/service/index.js';

const service = await serve(
  (conversation, tools) => {
    const task = userMessages(conversation).join(' ');
    const asked = toolHistory(conversation); // your earlier asks, each with Gym's result
    const adds = [...task.matchAll(/add (-?\d+)/g)].map((match) => Number(match[1]));
    const todo = adds.slice(asked.filter((call) => call.name === 'increment_counter').length);
    if (todo.length > 0 && tools.some((tool) => tool.name === 'increment_counter')) {
      return { toolCalls: todo.map((count) => ({ name: 'increment_counter', arguments: { count } })) };
    }
    const read = asked.find((call) => call.name === 'get_counter_value');
    if (!read) return { toolCalls: [{ name: 'get_counter_value', arguments: {} }] };
    const { count } = JSON.parse(read.output ?? '{}') as { count?: number };
    return { final: String(count) };
  },
  { port: Number(process.env.PORT ?? 9000), host: process.env.HOST ?? '127.0.0.1', brainName: 'minimal' },
);
console.log(`minimal agent service listening on ${service.url}`);
