// a2a-approval.mjs drives a tool approval with the official JavaScript
// SDK (@a2a-js/sdk, protocol 0.3), as an A2A client with a person in the
// loop would: a message whose turn needs a consequential tool leaves the
// task input-required with the pending call as a data part; the client
// answers on the same task with a data part {"approval": {"id", "approve":
// true}} and the task completes. A second request is denied with the word
// "deny". It prints one JSON object saying what it saw, for the Go test.
//
// Usage: node a2a-approval.mjs <agent url/> <text> <second text>
import { randomUUID } from 'node:crypto';
import { ClientFactory } from '@a2a-js/sdk/client';

const [agentURL, first, second] = process.argv.slice(2);
if (!agentURL || !first || !second) {
  console.error('usage: node a2a-approval.mjs <agent url/> <text> <second text>');
  process.exit(2);
}

const client = await new ClientFactory().createFromUrl(agentURL);

const send = async (parts, task) => {
  const sent = await client.sendMessage({
    message: {
      kind: 'message', messageId: randomUUID(), role: 'user', parts,
      ...(task ? { taskId: task.id, contextId: task.contextId } : {}),
    },
  });
  if (sent.kind !== 'task') throw new Error(`message/send returned a ${sent.kind}, want a task`);
  return sent;
};

const textOf = (parts = []) => parts.filter((p) => p.kind === 'text').map((p) => p.text).join('');
const dataOf = (parts = []) => parts.filter((p) => p.kind === 'data').map((p) => p.data);
const replyOf = (task) => (task.artifacts ?? []).map((a) => textOf(a.parts)).join('');
const seen = (task) => ({
  taskId: task.id, state: task.status.state,
  prompt: textOf(task.status.message?.parts), data: dataOf(task.status.message?.parts),
  reply: replyOf(task),
});

const asked = await send([{ kind: 'text', text: first }]);
const approval = dataOf(asked.status.message?.parts).find((d) => d.approval)?.approval;
const approved = approval
  ? await send([{ kind: 'data', data: { approval: { id: approval.id, approve: true } } }], asked)
  : null;
const asked2 = await send([{ kind: 'text', text: second }]);
const denied = await send([{ kind: 'text', text: 'deny' }], asked2);

console.log(JSON.stringify({
  asked: seen(asked), approved: approved && seen(approved), asked2: seen(asked2), denied: seen(denied),
}));
