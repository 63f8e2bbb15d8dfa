// The viewer's lint rules: ESLint's recommended set, and the ways HTML or code could be
// made from call content refused outright (content is text, always).
import js from "@eslint/js";
import globals from "globals";

const noHtml = "call content is rendered as text: build elements with dom.js";

export default [
  js.configs.recommended,
  {
    files: ["app/js/**/*.js"],
    languageOptions: { ecmaVersion: 2022, sourceType: "module", globals: globals.browser },
    rules: {
      "no-restricted-properties": [
        "error",
        { property: "innerHTML", message: noHtml },
        { property: "outerHTML", message: noHtml },
        { property: "insertAdjacentHTML", message: noHtml },
        { property: "write", object: "document", message: noHtml },
        { property: "writeln", object: "document", message: noHtml },
        { property: "createContextualFragment", message: noHtml },
      ],
      "no-restricted-globals": ["error", { name: "eval", message: noHtml }],
      "no-implied-eval": "error",
      "no-new-func": "error",
      eqeqeq: "error",
      "prefer-const": "error",
      "no-var": "error",
    },
  },
];
