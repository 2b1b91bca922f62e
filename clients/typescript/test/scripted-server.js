// A scripted HTTP server on a free loopback port for the states the real server only reaches
// when something is down (503 with Retry-After, a 500 with its correlation id, a proxy's
// HTML 502): each path answers its queued responses in order and records every request.

import { createServer } from "node:http";

/** A problem+json body as the API writes it (synthorg.api.errors.problem_body). */
export function problem(status, code, detail, extra = {}) {
  const titles = { 429: "Too Many Requests", 500: "Internal Server Error", 503: "Service Unavailable" };
  return {
    ...extra,
    type: `https://synthorg.dev/problems/${code}`,
    title: titles[status] ?? "Error",
    status,
    detail,
    code,
    errors: [],
  };
}

export async function startScriptedServer() {
  const queues = new Map();
  const requests = [];
  const server = createServer((req, res) => {
    const chunks = [];
    req.on("data", (chunk) => chunks.push(chunk));
    req.on("end", () => {
      const url = new URL(req.url, "http://localhost");
      const text = Buffer.concat(chunks).toString("utf8");
      const request = {
        method: req.method,
        path: url.pathname,
        search: url.search,
        headers: req.headers,
        body: text ? JSON.parse(text) : undefined,
      };
      requests.push(request);
      const queue = queues.get(url.pathname) ?? [];
      const next = queue.shift();
      const answer = typeof next === "function" ? next(request, requests) : next;
      if (answer === undefined) {
        res.writeHead(599, { "Content-Type": "text/plain" }).end("nothing scripted");
        return;
      }
      if (answer.hang) {
        return; // never answers (the connection is closed with the server)
      }
      const { status = 200, json, body, headers = {} } = answer;
      const type = json === undefined ? "text/html" : status >= 400 ? "application/problem+json" : "application/json";
      res.writeHead(status, { "Content-Type": type, ...headers });
      res.end(json === undefined ? (body ?? "") : JSON.stringify(json));
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    requests,
    enqueue(path, ...answers) {
      queues.set(path, [...(queues.get(path) ?? []), ...answers]);
    },
    to(path) {
      return requests.filter((request) => request.path === path);
    },
    close() {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}
