// Must stay the first import: it guards Intl against LANG=C before anything
// else runs (see lib/intl-guard.ts).
import "./lib/intl-safe";

import { mount } from "svelte";
import App from "./App.svelte";
import "./app.css";
import { checkSession } from "./lib/auth.svelte";
import { live } from "./lib/live.svelte";

mount(App, { target: document.getElementById("app")! });
// The live feed needs the session too; without one the page shows how to
// sign in rather than retrying a websocket FreeLane refuses.
void checkSession().then((ok) => {
  if (ok) live.start();
});
