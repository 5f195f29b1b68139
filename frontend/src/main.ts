// Must stay the first import: it guards Intl against LANG=C before anything
// else runs (see lib/intl-guard.ts).
import "./lib/intl-safe";

import { mount } from "svelte";
import App from "./App.svelte";
import "./app.css";
import { checkSession, watchLoginLinks, watchSignIn } from "./lib/auth.svelte";
import { live } from "./lib/live.svelte";
import { takeLoginCode } from "./lib/session";

// The login code leaves the address bar before the dashboard reads its
// route from it, so a link opens the screen it names (or the first-run
// setup) as a plain URL would.
const code = takeLoginCode();
mount(App, { target: document.getElementById("app")! });
// The live feed needs the session too; without one the page shows how to
// sign in rather than retrying a websocket FreeLane refuses.
void checkSession(code).then((ok) => {
  if (ok) live.start();
});
// A login link opened in this tab, or signing in in another tab, signs
// this one in too: reconnect at once.
const reconnect = () => {
  live.stop();
  live.start();
};
watchLoginLinks(reconnect);
watchSignIn(reconnect);
