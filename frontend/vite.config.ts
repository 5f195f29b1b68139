import { svelte } from "@sveltejs/vite-plugin-svelte";
import { svelteTesting } from "@testing-library/svelte/vite";
import { defineConfig } from "vitest/config";

// `npm run dev` proxies /api (and the websocket) to a running FreeLane. The
// server only answers requests from its own origin, so the proxy presents
// that origin instead of the dev server's.
const target = process.env.FREELANE_URL ?? "http://127.0.0.1:7788";

export default defineConfig({
  plugins: [svelte(), svelteTesting()],
  // Relative asset URLs: the Go binary serves dist/ at "/", and they keep
  // working if it ever moves under a prefix.
  base: "./",
  build: {
    outDir: "dist",
    emptyOutDir: true,
    // The desktop window is WebKitGTK on Linux; Safari 15-era syntax is safe there.
    target: ["es2022", "safari15"],
    chunkSizeWarningLimit: 200,
  },
  server: {
    proxy: {
      "/api": { target, ws: true, headers: { Origin: target } },
      "/v1": { target },
    },
  },
  test: {
    environment: "happy-dom",
    include: ["src/**/*.test.ts"],
    restoreMocks: true,
  },
});
