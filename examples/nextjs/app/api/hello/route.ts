// Guarded by the proxy alone.
export function GET() {
  return Response.json({ hello: "world" });
}
