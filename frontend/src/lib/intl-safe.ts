// Imported first by main.ts: ES modules run in import order, so the guard is
// in place before any other module (or a library it pulls in) runs.
import { guardIntl } from "./intl-guard";

guardIntl();
