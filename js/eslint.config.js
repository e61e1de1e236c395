// ESLint flat config (run by `npm test` before the tests): the recommended rules everywhere.
// The reader (chronozarr/) runs in Node, pages and workers alike, so it may use only the globals
// those hosts share (fetch, AbortController, DecompressionStream, ...), never DOM or node: APIs;
// it reaches `location` through globalThis on purpose. Tests run in Node, except the pieces
// they load into a page or a worker.

import js from "@eslint/js";
import globals from "globals";

export default [
  { ignores: ["node_modules/", "dist/", "types/"] },
  js.configs.recommended,
  {
    languageOptions: { ecmaVersion: 2024, sourceType: "module" },
    linterOptions: { reportUnusedDisableDirectives: "error" },
  },
  {
    files: ["chronozarr/**/*.js"],
    languageOptions: { globals: globals["shared-node-browser"] },
  },
  {
    files: ["test/**/*.js", "tools/**/*.{js,mjs}", "*.js"],
    languageOptions: { globals: { ...globals.node } },
  },
  {
    // Functions handed to playwright's page.evaluate run in the page.
    files: [
      "test/browser.test.js",
      "test/map.test.js",
      "test/zarr-layer.test.js",
      "test/openlayers.test.js",
      "test/package.test.js",
      "test/decode-pool.test.js",
    ],
    languageOptions: { globals: { ...globals.node, ...globals.browser } },
  },
  {
    files: ["test/digest.js", "test/worker.js", "test/*-page.js"],
    languageOptions: { globals: { ...globals.browser, ...globals.worker } },
  },
];
