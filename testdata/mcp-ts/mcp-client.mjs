// The official TypeScript MCP client (@modelcontextprotocol/sdk), given
// an agent page's "Use this agent" snippets as an MCP host would get
// them pasted in: the client config (mcpServers) and the tool call. It
// connects to the configured server the way the config says, lists the
// tools, makes the call and prints one JSON line:
// {"transport","server","tools":[...],"reply":{...}}. Run by handlers/portal TestMCPSnippetWithTypeScriptClient.
//
//   node mcp-client.mjs <config.json> <tool call>
import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [configPath, call] = process.argv.slice(2);
const config = JSON.parse(readFileSync(configPath, "utf8"));
const servers = Object.entries(config.mcpServers || {});
if (servers.length !== 1) throw new Error(`want one server in mcpServers, got ${servers.length}`);
const [name, server] = servers[0];
// Claude Code reads "type" to pick the transport; "http" is Streamable HTTP.
if (server.type !== "http") throw new Error(`server ${name}: type ${JSON.stringify(server.type)}, want "http"`);

const space = call.indexOf(" ");
const tool = call.slice(0, space);
const args = JSON.parse(call.slice(space + 1));

const client = new Client({ name: "agentsite-snippet-test", version: "1.0.0" });
await client.connect(new StreamableHTTPClientTransport(new URL(server.url)));
const { tools } = await client.listTools();
const result = await client.callTool({ name: tool, arguments: args });
await client.close();
if (result.isError) throw new Error(`${tool} failed: ${JSON.stringify(result.content)}`);
const text = (result.content || []).filter((c) => c.type === "text").map((c) => c.text).join("");
// The reply's fields (agent_id, conversation_id, reply) as structured
// content, with the reply's text as the text content.
const reply = { ...(result.structuredContent || {}), text };
console.log(JSON.stringify({ transport: server.type, server: name, tools: tools.map((t) => t.name), reply }));
