// The JavaScript GPT-2 encoder (npm gpt-3-encoder, tests/tokenizer/node_modules) on a
// file: prints {"ids": N, "seconds": S, "ids_list": [...]} with the time of encode()
// alone (the vocabulary is loaded when the module is required, before the clock starts).
'use strict';
const fs = require('fs');
const path = require('path');
const gpt3 = require(path.join(__dirname, '..', '..', 'tests', 'tokenizer', 'node_modules', 'gpt-3-encoder'));
const text = fs.readFileSync(process.argv[2], 'utf8');
const t0 = process.hrtime.bigint();
const ids = gpt3.encode(text);
const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
process.stdout.write(JSON.stringify({ ids: ids.length, seconds, ids_list: ids }));
