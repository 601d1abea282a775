// The JavaScript GPT-2 encoder (npm gpt-3-encoder, tests/tokenizer/node_modules) on a
// file: prints {"ids": N, "seconds": S, "ids_list": [...]} with the CPU time (user + system)
// of encode() alone (the vocabulary is loaded when the module is required, before the
// clock starts). CPU time, not wall time: a shared machine's load does not count.
'use strict';
const fs = require('fs');
const path = require('path');
const gpt3 = require(path.join(__dirname, '..', '..', 'tests', 'tokenizer', 'node_modules', 'gpt-3-encoder'));
const text = fs.readFileSync(process.argv[2], 'utf8');
const t0 = process.cpuUsage();
const ids = gpt3.encode(text);
const used = process.cpuUsage(t0);
const seconds = (used.user + used.system) / 1e6;
process.stdout.write(JSON.stringify({ ids: ids.length, seconds, ids_list: ids }));
