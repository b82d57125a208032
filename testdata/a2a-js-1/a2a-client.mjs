// a2a-client.mjs drives one A2A agent with the official JavaScript SDK at
// its protocol-1.0 line (@a2a-js/sdk 1.3.0) in its DEFAULT configuration
// (new ClientFactory(), no legacyCompat): it discovers the agent from its
// url alone (the SDK looks for <url>/.well-known/agent-card.json, resolved
// as a relative URL: give the url with a final slash), or from a card URL
// (one ending in .json), and runs SendMessage, SendStreamingMessage, GetTask, ListTasks,
// CancelTask (of a running and of a finished task), SubscribeToTask, a
// push notification config and GetExtendedAgentCard. It prints one JSON
// object saying what it saw, for the Go test to check.
//
// Usage: node a2a-client.mjs <agent url/ or card URL> <bearer token> <push URL> [text]
import { randomUUID } from 'node:crypto';
import { ClientFactory } from '@a2a-js/sdk/client';
import { Role, TaskState } from '@a2a-js/sdk';

const [cardURL, token, pushURL] = process.argv.slice(2, 5);
const text = process.argv[5] ?? 'hello from the A2A JS SDK';
if (!cardURL || !token || !pushURL) {
  console.error('usage: node a2a-client.mjs <agent card URL> <bearer token> <push URL> [text]');
  process.exit(2);
}

const auth = { serviceParameters: { Authorization: `Bearer ${token}` } };
const message = (words, contextId) => ({
  messageId: randomUUID(),
  role: Role.ROLE_USER,
  parts: [{ content: { $case: 'text', value: words } }],
  ...(contextId ? { contextId } : {}),
});
const textOf = (parts = []) => parts.filter((p) => p.content?.$case === 'text').map((p) => p.content.value).join('');
const replyOf = (task) => (task.artifacts ?? []).map((a) => textOf(a.parts)).join('');
const stateOf = (s) => TaskState[s] ?? String(s);
const errorOf = async (f) => {
  try {
    await f();
    return '';
  } catch (e) {
    return e?.constructor?.name ?? String(e);
  }
};

// A card URL is the card itself (the path is empty); an agent's url is a
// base, under which the SDK's default path is looked for.
const client = cardURL.endsWith('.json')
  ? await new ClientFactory().createFromUrl(cardURL, '')
  : await new ClientFactory().createFromUrl(cardURL);
const card = client.agentCard; // the public card it was made from
// The extended card without credentials: refused.
const anonExtended = await errorOf(() => client.getAgentCard());

const sent = await client.sendMessage({ message: message(text) }, auth);
if (!('status' in sent)) throw new Error('SendMessage returned a message, want a task');

// SendStreamingMessage in the same conversation.
const cases = [];
const artifacts = new Map();
let streamTask;
let finalState;
for await (const ev of client.sendMessageStream({ message: message(`${text} (streamed)`, sent.contextId) }, auth)) {
  const p = ev.payload;
  cases.push(p.$case);
  if (p.$case === 'task') streamTask = p.value;
  if (p.$case === 'artifactUpdate') {
    const id = p.value.artifact.artifactId;
    const chunk = textOf(p.value.artifact.parts);
    artifacts.set(id, p.value.append ? (artifacts.get(id) ?? '') + chunk : chunk);
  }
  if (p.$case === 'statusUpdate') finalState = p.value.status.state;
}

const got = await client.getTask({ id: sent.id }, auth);
const listed = await client.listTasks({ contextId: sent.contextId, pageSize: 10 }, auth);
// Another caller (here: anonymous) sees none of them.
const otherGet = await errorOf(() => client.getTask({ id: sent.id }));
const otherList = await client.listTasks({ pageSize: 10 });
const cancelDone = await errorOf(() => client.cancelTask({ id: sent.id }, auth));

// A running task: returned at once, told to the push URL, followed with
// SubscribeToTask, canceled while it runs.
const running = await client.sendMessage({ message: message('block', sent.contextId), configuration: { returnImmediately: true } }, auth);
const push = await client.createTaskPushNotificationConfig({ taskId: running.id, url: pushURL, token: 'push-secret-token' }, auth);
const pushes = await client.listTaskPushNotificationConfig({ taskId: running.id }, auth);
const subCases = [];
let subFinal;
let canceled;
for await (const ev of client.resubscribeTask({ id: running.id }, auth)) {
  const p = ev.payload;
  subCases.push(p.$case);
  // Once the model on B has begun (its first word is here), cancel.
  const working = (p.$case === 'task' && replyOf(p.value) !== '') || p.$case === 'artifactUpdate';
  if (working && !canceled) canceled = client.cancelTask({ id: running.id }, auth);
  if (p.$case === 'statusUpdate') subFinal = p.value.status.state;
}
const afterCancel = await canceled;

const extended = await client.getAgentCard(auth);

console.log(JSON.stringify({
  card: { name: card.name, interfaces: card.supportedInterfaces.map((i) => `${i.protocolBinding} ${i.protocolVersion}`),
    signatures: card.signatures?.length ?? 0, extendedAgentCard: card.capabilities?.extendedAgentCard ?? false },
  send: { taskId: sent.id, contextId: sent.contextId, state: stateOf(sent.status.state), reply: replyOf(sent), history: sent.history?.length ?? 0 },
  stream: { cases, contextId: streamTask?.contextId, state: stateOf(finalState), text: [...artifacts.values()].join('') },
  get: { taskId: got.id, state: stateOf(got.status.state), reply: replyOf(got) },
  list: { ids: listed.tasks.map((t) => t.id), totalSize: listed.totalSize },
  other: { get: otherGet, listed: otherList.tasks.length },
  cancelDone,
  running: { taskId: running.id, push: push.id, pushes: pushes.configs.length, cases: subCases, final: stateOf(subFinal), canceled: stateOf(afterCancel.status.state) },
  extended: { skills: extended.skills.map((s) => s.id), anonymous: anonExtended },
}));
