// a2a-client.mjs drives one A2A agent with the official JavaScript SDK
// (@a2a-js/sdk, protocol 0.3), as any A2A client would: it discovers the
// agent from its url alone (the SDK looks for
// <url>/.well-known/agent-card.json, resolved as a relative URL: give the
// url with a final slash) or from a card URL (one ending in .json), then runs message/send, message/stream,
// tasks/get, and a second message/send in the same contextId. It prints
// one JSON object saying what it saw, for the Go test to check.
//
// Usage: node a2a-client.mjs <agent url/ or card URL> [text]
import { randomUUID } from 'node:crypto';
import { ClientFactory } from '@a2a-js/sdk/client';

const cardURL = process.argv[2];
const text = process.argv[3] ?? 'hello from the A2A JS SDK';
if (!cardURL) {
  console.error('usage: node a2a-client.mjs <agent card URL> [text]');
  process.exit(2);
}

const message = (words, contextId) => ({
  kind: 'message',
  messageId: randomUUID(),
  role: 'user',
  parts: [{ kind: 'text', text: words }],
  ...(contextId ? { contextId } : {}),
});

const textOf = (parts = []) => parts.filter((p) => p.kind === 'text').map((p) => p.text).join('');

// replyOf is the reply a task carries: its artifacts' text.
const replyOf = (task) => (task.artifacts ?? []).map((a) => textOf(a.parts)).join('');

// A card URL is the card itself (the path is empty); an agent's url is a
// base, under which the SDK's default path is looked for.
const client = cardURL.endsWith('.json')
  ? await new ClientFactory().createFromUrl(cardURL, '')
  : await new ClientFactory().createFromUrl(cardURL);
// The public card it was made from: getAgentCard() would ask for the
// extended card, which needs credentials.
const card = client.agentCard;

const sent = await client.sendMessage({ message: message(text) });
if (sent.kind !== 'task') throw new Error(`message/send returned a ${sent.kind}, want a task`);

// message/stream in the same conversation: collect the streamed text as a
// client must, appending chunks that say so.
const kinds = [];
const artifacts = new Map();
let streamTask;
let finalState;
for await (const event of client.sendMessageStream({ message: message(`${text} (streamed)`, sent.contextId) })) {
  kinds.push(event.kind);
  if (event.kind === 'task') streamTask = event;
  if (event.kind === 'artifact-update') {
    const id = event.artifact.artifactId;
    const chunk = textOf(event.artifact.parts);
    artifacts.set(id, event.append ? (artifacts.get(id) ?? '') + chunk : chunk);
  }
  if (event.kind === 'status-update' && event.final) finalState = event.status.state;
}

const got = await client.getTask({ id: sent.id });
const second = await client.sendMessage({ message: message('and again', sent.contextId) });

console.log(JSON.stringify({
  card: { name: card.name, url: card.url, protocolVersion: card.protocolVersion, preferredTransport: card.preferredTransport },
  send: { taskId: sent.id, contextId: sent.contextId, state: sent.status.state, reply: replyOf(sent), history: sent.history?.length ?? 0 },
  stream: { kinds, contextId: streamTask?.contextId, state: finalState, text: [...artifacts.values()].join('') },
  get: { taskId: got.id, state: got.status.state, reply: replyOf(got) },
  second: { contextId: second.contextId, state: second.status.state, reply: replyOf(second) },
}));
