// The tokenizer tests' oracle: reads {"jobs": [...]} on stdin and prints one list of id
// lists per job on stdout (JSON). A job is {"tokenizer": FILE, "texts": [...],
// "special": BOOL} (Hugging Face's tokenizers, the Rust library through its Node binding)
// or {"gpt3_encoder": true, "texts": [...]} (the GPT-2 encoder in JavaScript). Installed
// by scripts/setup_node_oracles.sh.
'use strict';
const fs = require('fs');
const { Tokenizer } = require('tokenizers');
const gpt3 = require('gpt-3-encoder');

async function run(job) {
  if (job.gpt3_encoder) {
    return job.texts.map((t) => gpt3.encode(t));
  }
  const tok = Tokenizer.fromFile(job.tokenizer);
  const out = [];
  for (const t of job.texts) {
    const e = await tok.encode(t, null, { addSpecialTokens: job.special });
    out.push({ ids: e.getIds(), tokens: e.getTokens() });
  }
  return out;
}

(async () => {
  const { jobs } = JSON.parse(fs.readFileSync(0, 'utf8'));
  const results = [];
  for (const job of jobs) {
    results.push(await run(job));
  }
  process.stdout.write(JSON.stringify(results));
})().catch((e) => {
  process.stderr.write(String(e && e.stack ? e.stack : e) + '\n');
  process.exit(1);
});
