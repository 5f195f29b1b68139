// Must stay the first import: it guards Intl against LANG=C before anything
// else runs (see lib/intl-guard.ts).
import "./lib/intl-safe";

import { mount } from "svelte";
import App from "./App.svelte";
import "./app.css";
import { live } from "./lib/live.svelte";

live.start();
mount(App, { target: document.getElementById("app")! });
