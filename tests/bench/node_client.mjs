// A Node MCP client over Streamable HTTP, as Node hosts make one: global
// fetch (undici), one kept-alive connection, sequential tools/call.
// Prints {"latencies_ms": [...]}: one per call. Run by the bench's HTTP rows.
// Usage: node node_client.mjs URL TOKEN CALLS ARGS_JSON
const [url, token, calls, args] = process.argv.slice(2);
const base = {
  authorization: `Bearer ${token}`,
  "content-type": "application/json",
  accept: "application/json, text/event-stream",
};
async function post(body, session) {
  const headers = { ...base };
  if (session) {
    headers["mcp-session-id"] = session;
    headers["mcp-protocol-version"] = "2025-06-18";
  }
  const r = await fetch(url, { method: "POST", headers, body: JSON.stringify(body) });
  const text = await r.text();
  if (!r.ok) throw new Error(`HTTP ${r.status}: ${text}`);
  return { session: r.headers.get("mcp-session-id"), text };
}
const init = await post({
  jsonrpc: "2.0", id: 0, method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "bench-node", version: "0" } },
});
await post({ jsonrpc: "2.0", method: "notifications/initialized" }, init.session);
const latencies = [];
for (let i = 1; i <= Number(calls); i++) {
  const t = performance.now();
  const r = await post(
    { jsonrpc: "2.0", id: i, method: "tools/call", params: { name: "request", arguments: JSON.parse(args) } },
    init.session,
  );
  latencies.push(performance.now() - t);
  if (!r.text.includes('"status":"success"')) {
    throw new Error(`call ${i} did not succeed: ${r.text.slice(0, 400)}`);
  }
}
console.log(JSON.stringify({ latencies_ms: latencies }));
