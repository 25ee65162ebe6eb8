export default function Home() {
  return (
    <main>
      <h1>ratebound on Next.js</h1>
      <ul>
        <li><a href="/api/hello">/api/hello</a>: guarded by the proxy only (per client address)</li>
        <li><a href="/api/node">/api/node</a>: a route on the Node.js runtime, node-redis</li>
        <li><a href="/api/edge">/api/edge</a>: a route on the edge runtime, @upstash/redis</li>
      </ul>
    </main>
  );
}
