// @ts-check
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["dist/", "node_modules/", "coverage/", ".prof/"] },
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/no-misused-promises": "error",
      "@typescript-eslint/require-await": "off",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/consistent-type-imports": "error",
      "@typescript-eslint/only-throw-error": "error",
    },
  },
  {
    // Tests read message payloads (plain JSON) freely; the floating-promise rules stay on.
    files: ["test/**/*.ts", "bench/**/*.ts", "examples/**/*.ts"],
    rules: { "@typescript-eslint/no-base-to-string": "off" },
  },
  { files: ["eslint.config.js"], ...tseslint.configs.disableTypeChecked },
  // The inbox page's script runs in the browser as it is shipped: plain JavaScript, no type information.
  { files: ["src/http/assets/**/*.js"], ...tseslint.configs.disableTypeChecked },
  // Peers for ../shared/bench-peers, run there as plain ES modules that import the built package (bench/peers/minimal.mjs).
  { files: ["bench/peers/**/*.mjs"], ...tseslint.configs.disableTypeChecked },
);
