// No adapter: `vite build` then `vite preview` serve the app in Node. Deploying, add yours
// (adapter-node, adapter-cloudflare, …): the handle runs wherever the app does.
export default { kit: {} };
