import { json } from "@sveltejs/kit";

export async function POST({ request }) {
  const { password } = await request.json();
  if (password === "correct horse") return json({ welcome: true });
  return json({ error: "wrong password" }, { status: 401 });
}
