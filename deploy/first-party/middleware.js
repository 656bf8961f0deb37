// First-party mode in a Next.js shop, with next.config.js (docs/first-party.md): marks the requests Next.js proxies
// to the service as first-party ones. Middleware runs before the rewrites of next.config.js, and the request headers
// it sets are the ones the rewrite forwards; values a client sent under these names are replaced. From Next.js 16
// the file is proxy.js and the function is named proxy.
import { NextResponse } from "next/server";

export function middleware(request) {
  const headers = new Headers(request.headers);
  headers.set("X-Forwarded-Prefix", "/_svc");
  headers.set("X-Forwarded-Host", request.nextUrl.host);
  headers.set("X-Forwarded-Proto", request.nextUrl.protocol.replace(":", ""));
  return NextResponse.next({ request: { headers } });
}

export const config = { matcher: "/_svc/:path*" };
