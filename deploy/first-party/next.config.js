// First-party mode in a Next.js shop (docs/first-party.md). Next.js proxies /_svc/* to the service with the
// prefix stripped and passes the answer back untouched (Set-Cookie included, so svc_click_id lands on the shop).
// A rewrite cannot add a request header: middleware.js (next to this file; proxy.js from Next.js 16) sets
// X-Forwarded-Prefix, X-Forwarded-Host and X-Forwarded-Proto. X-Forwarded-For is Next.js's own: it fills it with
// the connection's address only when the request has none, so run Next.js behind a proxy or CDN that sets it.
// SVC_ORIGIN: the service's address (no trailing slash).
const SVC_ORIGIN = process.env.SVC_ORIGIN || "https://track.example.com";

/** @type {import('next').NextConfig} */
module.exports = {
  async rewrites() {
    return {
      // Before the shop's own pages and files, so nothing of the shop's can shadow /_svc.
      beforeFiles: [{ source: "/_svc/:path*", destination: `${SVC_ORIGIN}/:path*` }],
    };
  },
};
