// The official TypeScript MCP client (@modelcontextprotocol/sdk) reading
// the catalogue as MCP resources, completions and prompts, then watching a
// listing. Run by handlers/mcpserver TestMCPCatalogueWithTypeScriptClient.
//
//   node mcp-catalogue.mjs <mcp url> <agent id> <tag prefix>
//
// Prints one JSON line of what it read, then subscribes to the agent's
// resource and prints {"subscribed":true}; the test then changes the
// listing. The client pings until notifications/resources/updated arrives
// (the node sends it with the response to a request) and prints
// {"updated":<uri>}, or gives up after a minute.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const [url, id, tagPrefix] = process.argv.slice(2);
const uri = `agentsite://agents/${id}`;

const client = new Client({ name: "agentsite-catalogue-test", version: "1.0.0" });
let updated = null;
client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
  updated = n.params.uri;
});
await client.connect(new StreamableHTTPClientTransport(new URL(url)));

const capabilities = client.getServerCapabilities();
const { resourceTemplates } = await client.listResourceTemplates();
const { resources } = await client.listResources();
const read = await client.readResource({ uri });
const ids = await client.complete({
  ref: { type: "ref/resource", uri: "agentsite://agents/{id}" },
  argument: { name: "id", value: id.slice(0, 6) },
});
const tags = await client.complete({
  ref: { type: "ref/resource", uri: "agentsite://tags/{tag}" },
  argument: { name: "tag", value: tagPrefix },
});
const { prompts } = await client.listPrompts();
const prompt = await client.getPrompt({ name: "chat_with_agent", arguments: { agent_id: id } });

console.log(
  JSON.stringify({
    capabilities,
    templates: resourceTemplates.map((t) => t.uriTemplate),
    resources: resources.map((r) => r.uri),
    read: read.contents.map((c) => ({ uri: c.uri, mimeType: c.mimeType, text: c.text })),
    ids: ids.completion.values,
    tags: tags.completion.values,
    prompts: prompts.map((p) => p.name),
    prompt: prompt.messages.map((m) => m.content.text).join(""),
  }),
);

await client.subscribeResource({ uri });
console.log(JSON.stringify({ subscribed: true }));

const deadline = Date.now() + 60_000;
while (updated === null && Date.now() < deadline) {
  await new Promise((r) => setTimeout(r, 100));
  await client.ping();
}
await client.close();
console.log(JSON.stringify({ updated }));
