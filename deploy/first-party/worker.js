// First-party mode with a Cloudflare Worker on the shop's route (docs/first-party.md): shop.example.com/_svc/* goes
// to the service with the prefix stripped, everything else to the shop's origin as before. Route the Worker on
// `shop.example.com/_svc/*` (or on the whole host). SVC_ORIGIN: the service's address, a Worker variable
// (wrangler.toml [vars]), e.g. "https://track.example.com".
const PREFIX = "/_svc";

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    if (url.pathname !== PREFIX && !url.pathname.startsWith(PREFIX + "/")) {
      return fetch(request);
    }
    const target = new URL(url.pathname.slice(PREFIX.length) || "/", env.SVC_ORIGIN || "https://track.example.com");
    target.search = url.search;

    const headers = new Headers(request.headers);
    headers.set("X-Forwarded-Prefix", PREFIX);
    headers.set("X-Forwarded-Host", url.host);
    headers.set("X-Forwarded-Proto", url.protocol.replace(":", ""));
    // The visitor's address as Cloudflare saw it; a value the client sent is replaced, not trusted. The service
    // runs with TRUSTED_PROXY_COUNT=1 and takes the right-most (here the only) value.
    const visitor = request.headers.get("CF-Connecting-IP");
    if (visitor) headers.set("X-Forwarded-For", visitor);
    else headers.delete("X-Forwarded-For");
    headers.delete("Host");

    // The tracker's calls are a few hundred bytes: the body is read whole rather than streamed.
    const body = request.method === "GET" || request.method === "HEAD" ? undefined : await request.arrayBuffer();
    // The answer goes back as it is: its Set-Cookie (svc_click_id) applies to the shop's host. redirect: "manual"
    // hands a redirect to the browser instead of following it here.
    return fetch(target, { method: request.method, headers, body, redirect: "manual" });
  },
};
