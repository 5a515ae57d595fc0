'use strict'
// jsprof-node/register: `NODE_OPTIONS="--require jsprof-node/register"` (or `node --import
// jsprof-node/register`) profiles the process as its environment says, with no code in the app
// (docs/production.md#zero-code-jsprof-noderegister). It exports nothing.

require('./lib/register').register()
