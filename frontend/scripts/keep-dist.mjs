// Vite empties dist/ before each build, but Go's `//go:embed all:dist` in
// embed.go needs the directory to exist even before a build (go vet, go test
// without the frontend), so the committed dist/.gitkeep is put back here.
import { writeFileSync, mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";

const dist = fileURLToPath(new URL("../dist/", import.meta.url));
mkdirSync(dist, { recursive: true });
writeFileSync(dist + ".gitkeep", "");
