// The one front door of @agentmesh/gateway: the HTTP API, SSE, the OpenAI-compatible endpoint and the web page.
export {};
